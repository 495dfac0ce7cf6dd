#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The feature matrix cannot drift (tests/matrix/matrix.py): docs/feature-matrix.md is what
the committed results (tests/matrix/results/*.jsonl) render to; every cell the description
does not mark n/a has a committed result, and each one keeps the description's rules; every
format has its guest test tests/vm/guest/matrix-FORMAT.sh with the description's layout.
Prints 'feature-matrix: N passed, N failed'."""
import re
import sys
from pathlib import Path

from checks import Checks
from repo_files import TOP

sys.path.insert(0, str(TOP / "tests" / "matrix"))
import matrix  # noqa: E402

check = Checks("feature-matrix")


def main() -> int:
    known = matrix.committed()
    doc = matrix.DOC.read_text() if matrix.DOC.exists() else ""
    check(doc == matrix.render(), "docs/feature-matrix.md is what the committed results render to "
                                  "(python3 tests/matrix/matrix.py write-doc)")
    cells = matrix.cells()
    missing = [c for c in cells if matrix.expect(*c).kind != "na" and c not in known]
    check(not missing, f"every cell but the n/a ones has a committed result (missing: {missing[:5]}"
                       f"{' ...' if len(missing) > 5 else ''})")
    stray = [c for c in known if c not in cells or matrix.expect(*c).kind == "na"]
    check(not stray, f"no committed result for an n/a or unknown cell ({stray[:5]})")
    bad = [f"{c}: {why}" for c, r in known.items() if c in cells and (why := matrix.verdict(c, r, r))]
    check(not bad, "every committed result keeps the description's rules" + (f": {bad[:3]}" if bad else ""))
    for fid, _, layout in matrix.FORMATS:
        test = TOP / "tests" / "vm" / "guest" / f"matrix-{fid}.sh"
        text = test.read_text() if test.exists() else ""
        m = re.search(r"^# vm: (.*)$", text, re.M)
        ok = m is not None and m.group(1).split()[:len(layout.split())] == layout.split() \
            and f"guest_run.py {fid}" in text
        check(ok, f"tests/vm/guest/matrix-{fid}.sh runs the {fid} cells on the description's layout ({layout})")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
