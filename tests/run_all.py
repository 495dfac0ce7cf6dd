#!/usr/bin/env python3
"""Runs every nvme-csd test suite in turn, streaming output, and prints the total as
'N passed, N failed'. Usage: tests/run_all.py [SUITE ...] (default: all)."""

import re
import subprocess
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
CLOSING = re.compile(r"(\d+) passed, (\d+) failed")

# name -> command (run from the top of the tree); each prints its own closing line.
SUITES = {
    "unit": ["tests/unit/run-unit.sh"],
    "fuzz": ["tests/fuzz/run-fuzz.sh", "60"],
    "qtest": ["qemu-device/qtest/run-qtests.sh"],
    "kmod-style": ["kmod/check-style.sh"],
    "harness": ["tests/vm/selftest.sh"],
    "python": ["python/run-tests.sh"],
    "vm": [sys.executable, "tests/vm/csdvm.py", "test"],
    "crash": [sys.executable, "tests/vm/crash_store.py"],
}


def run_suite(name: str, argv: list[str]) -> tuple[int, int, float]:
    """Runs one suite, echoing its output; returns (passed, failed, seconds)."""
    print(f"===== {name}: {' '.join(argv)}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = None
    assert proc.stdout
    for line in proc.stdout:
        print(line, end="", flush=True)
        m = CLOSING.search(line)
        if m:
            last = (int(m.group(1)), int(m.group(2)))
    rc = proc.wait()
    took = time.monotonic() - start
    if last is None:
        last = (0, 1)
        print(f"===== {name}: no closing line (exit {rc}); counted as a failure")
    elif rc != 0 and last[1] == 0:
        last = (last[0], 1)
        print(f"===== {name}: exit {rc} with no failed test; counted as a failure")
    print(f"===== {name}: {last[0]} passed, {last[1]} failed in {took:.0f} s", flush=True)
    return last[0], last[1], took


def main() -> int:
    wanted = sys.argv[1:] or list(SUITES)
    unknown = [w for w in wanted if w not in SUITES]
    if unknown:
        print(f"run_all: unknown suite(s) {unknown}; known: {list(SUITES)}", file=sys.stderr)
        return 2
    total_p = total_f = 0
    summary = []
    for name in wanted:
        p, f, t = run_suite(name, SUITES[name])
        total_p += p
        total_f += f
        summary.append(f"  {name:10s} {p:4d} passed {f:4d} failed {t:6.0f} s")
    print("===== summary")
    print("\n".join(summary))
    print(f"{total_p} passed, {total_f} failed")
    return 1 if total_f else 0


if __name__ == "__main__":
    sys.exit(main())
