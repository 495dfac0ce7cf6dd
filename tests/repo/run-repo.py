#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The repo suite: runs every check of the repository itself (tests/repo/check_*.py: SPDX
licence lines, citations inside the repository, Markdown links, the apt sources reader),
each printing its own 'NAME: N passed, N failed', and prints their sum as
'repo: N passed, N failed'. A check that ends without that line, or exits non-zero with
no failure counted, counts as one failure."""
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLOSING = re.compile(r"^[\w-]+: (\d+) passed, (\d+) failed\s*$")


def main() -> int:
    passed = failed = 0
    for check in sorted(HERE.glob("check_*.py")):
        print(f"--- {check.name}", flush=True)
        proc = subprocess.run([sys.executable, str(check)], cwd=HERE.parents[1], capture_output=True, text=True)
        sys.stdout.write(proc.stdout + proc.stderr)
        counts = [CLOSING.match(line) for line in proc.stdout.splitlines()]
        counts = [m for m in counts if m]
        if not counts:
            print(f"FAIL {check.name} printed no 'N passed, N failed' line (exit status {proc.returncode})")
            failed += 1
            continue
        p, f = int(counts[-1][1]), int(counts[-1][2])
        if proc.returncode != 0 and f == 0:
            print(f"FAIL {check.name} exited with status {proc.returncode} and no failure counted")
            f = 1
        passed, failed = passed + p, failed + f
    print(f"repo: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
