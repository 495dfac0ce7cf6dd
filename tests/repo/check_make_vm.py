#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make vm CMD='...' hands CMD to the guest's shell as written: $ variables, $((...)), $?
and quotes survive make (docs/command-set.md's recipes use them). The guest is stood in
for by a PYTHON that runs 'csdvm.py cmd CMD' as sh -c CMD here; qemu, image, build and guest
are taken as made (make -o), so nothing is built."""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks

TOP = Path(__file__).resolve().parents[2]
CASES = [  # (CMD, what the guest's shell prints)
    ('x=hello; echo "[$x]"', "[hello]"),
    ("size=4096; echo $((size * 2)) $(( size / 4 ))", "8192 1024"),
    ("false; echo $?", "1"),
    ("y=\"it's\"; echo \"$y\" '$y'", "it's $y"),
    ("printf '%s\\n' \"a  b\"", "a  b"),
]


def main() -> int:
    c = Checks("make-vm")
    with tempfile.TemporaryDirectory() as d:
        fake = Path(d) / "python"
        fake.write_text('#!/bin/sh\n[ "$2" = cmd ] && exec sh -c "$3"\necho "not a cmd: $*"; exit 1\n')
        fake.chmod(0o755)
        for cmd, want in CASES:
            p = subprocess.run(["make", "-s", "-C", str(TOP), "-o", "qemu", "-o", "image", "-o", "build", "-o", "guest",
                                "vm", f"CMD={cmd}", f"PYTHON={fake}"], capture_output=True, text=True, timeout=60)
            got = p.stdout.strip()
            c(p.returncode == 0 and got == want,
              f"make vm CMD={cmd!r} prints {want!r}" + ("" if got == want else f" (printed {got!r}, {p.stderr.strip()})"))
    return c.report()


if __name__ == "__main__":
    sys.exit(main())
