#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source, build and configuration file names its licence in an SPDX line among its
first lines, GPL-2.0-or-later where the code becomes part of QEMU or Linux (the QEMU
overlay, its patches, csd.ko's folder), and the licence texts are in the repository.
Prints 'licences: N passed, N failed'."""
import sys
from pathlib import Path

from checks import Checks
from repo_files import TOP, repo_files

SOURCE_SUFFIXES = {".c", ".h", ".cc", ".hpp", ".cu", ".cuh", ".py", ".pyi", ".sh", ".inc", ".patch", ".S",
                   ".build", ".mak", ".conf", ".rules", ".toml", ".prerm", ".postinst", ".1"}
SOURCE_NAMES = {"Makefile", "meson_options.txt", "Kbuild", "run", "trace-events"}
# Inputs read as data, not code: fuzz regressions (raw bytes).
NOT_SOURCES = ("tests/fuzz/regressions/",)
# Code that becomes part of QEMU or of the Linux kernel.
GPL_DIRS = ("qemu-device/overlay/", "qemu-device/patches/", "kmod/")
GPL = "GPL-2.0-or-later"

check = Checks("licences")


def spdx_of(path):
    """The licence expression of the file's SPDX line among its first lines, or None."""
    try:
        head = (TOP / path).read_text(errors="replace").splitlines()[:6]
    except OSError:
        return None
    for line in head:
        if "SPDX-License-Identifier:" in line:
            return line.split("SPDX-License-Identifier:", 1)[1].strip().rstrip("*/ ").strip()
    return None


def main():
    files = repo_files()
    sources = [f for f in files if (Path(f).suffix in SOURCE_SUFFIXES or Path(f).name in SOURCE_NAMES)
               and not f.startswith(NOT_SOURCES)]
    missing = [f for f in sources if spdx_of(f) is None]
    check(not missing, f"every source file has an SPDX line ({len(sources)} files"
                       + (f"; missing: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''})" if missing else ")"))
    wrong = [f for f in sources if f.startswith(GPL_DIRS) and spdx_of(f) and GPL not in spdx_of(f)]
    check(not wrong, f"QEMU overlay, patches and csd.ko are {GPL}" + (f" (not: {', '.join(wrong)})" if wrong else ""))
    for name in ("LICENSE", "LICENSES/GPL-2.0-or-later.txt", "LICENSES/MIT.txt"):
        check((TOP / name).is_file(), f"{name} is in the repository")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
