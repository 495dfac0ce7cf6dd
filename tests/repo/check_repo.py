#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of the repository itself, on its tracked files: every source file names its
licence in an SPDX line (GPL-2.0-or-later where QEMU and Linux require it), the docs cite
only what the repository carries, and ci/apt-sources.sh reads both apt sources formats.
Prints 'repo: N passed, N failed'."""
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = {".c", ".h", ".cc", ".hpp", ".cu", ".cuh", ".py", ".sh", ".inc", ".patch", ".S"}
SOURCE_NAMES = {"Makefile", "meson.build", "meson_options.txt", "Kbuild", "run"}
# Code that becomes part of QEMU or of the Linux kernel.
GPL_DIRS = ("qemu-device/overlay/", "qemu-device/patches/", "kmod/")
GPL = "GPL-2.0-or-later"

passed = failed = 0


def check(ok, what):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(("ok   " if ok else "FAIL ") + what)


def tracked():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=TOP, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


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
    files = tracked()
    sources = [f for f in files if Path(f).suffix in SOURCE_SUFFIXES or Path(f).name in SOURCE_NAMES]
    sources = [f for f in sources if not f.startswith("tests/fuzz/regressions/")]
    missing = [f for f in sources if spdx_of(f) is None]
    check(not missing, f"every source file has an SPDX line ({len(sources)} files"
                       + (f"; missing: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''})" if missing else ")"))
    wrong = [f for f in sources if f.startswith(GPL_DIRS) and spdx_of(f) and GPL not in spdx_of(f)]
    check(not wrong, f"QEMU overlay, patches and csd.ko are {GPL}" + (f" (not: {', '.join(wrong)})" if wrong else ""))
    for name in ("LICENSE", "LICENSES/GPL-2.0-or-later.txt", "LICENSES/MIT.txt"):
        check((TOP / name).is_file(), f"{name} is in the repository")

    docs = [f for f in files if f.endswith(".md") or f.endswith(".h")]
    outside = [f for f in docs if any(s in (TOP / f).read_text(errors="replace")
                                      for s in ("../shared/", "shared/spec/", "shared/notes/", "/work/"))]
    check(not outside, "docs cite only files in the repository" + (f" (outside: {', '.join(outside)})" if outside else ""))
    for spec in ("spec/csd-command-set.md", "spec/nvme-cs.md"):
        check((TOP / spec).is_file(), f"the contract {spec} is in the repository")

    # ci/apt-sources.sh: either sources format gives the same entries.
    with tempfile.TemporaryDirectory() as tmp:
        etc = Path(tmp)
        (etc / "sources.list.d").mkdir()
        (etc / "sources.list").write_text(
            "# installer\ndeb [arch=amd64 signed-by=/k.gpg] http://archive.example/debian/ bookworm main\n"
            "deb http://security.example/debian-security bookworm-security main\n")
        one = subprocess.run(["bash", str(TOP / "ci/apt-sources.sh"), "--print"], capture_output=True, text=True,
                             env={"CSD_APT_ETC": tmp, "PATH": "/usr/bin:/bin"})
        (etc / "sources.list").unlink()
        (etc / "sources.list.d" / "debian.sources").write_text(
            "Types: deb\nURIs: http://archive.example/debian/\nSuites: bookworm bookworm-updates\n"
            "Components: main\nSigned-By: /k.gpg\n\nTypes: deb\nURIs: http://security.example/debian-security\n"
            "Suites: bookworm-security\nComponents: main\nSigned-By: /k.gpg\n")
        deb822 = subprocess.run(["bash", str(TOP / "ci/apt-sources.sh"), "--print"], capture_output=True, text=True,
                                env={"CSD_APT_ETC": tmp, "PATH": "/usr/bin:/bin"})
        want = ("Types: deb\nURIs: http://archive.example/debian/\nSuites: bookworm-backports\nComponents: main\n"
                "Signed-By: /k.gpg\n\nTypes: deb-src\nURIs: http://archive.example/debian/\nSuites: trixie\n"
                "Components: main\nSigned-By: /k.gpg\n\nTypes: deb-src\nURIs: http://archive.example/debian/\n"
                "Suites: bookworm\nComponents: main\nSigned-By: /k.gpg\n")
        check(one.returncode == 0 and one.stdout.endswith(want), "apt-sources reads a one-line sources.list")
        check(deb822.returncode == 0 and deb822.stdout.endswith(want), "apt-sources reads deb822 .sources")
        (etc / "sources.list.d" / "debian.sources").unlink()
        none = subprocess.run(["bash", str(TOP / "ci/apt-sources.sh"), "--print"], capture_output=True, text=True,
                              env={"CSD_APT_ETC": tmp, "PATH": "/usr/bin:/bin"})
        check(none.returncode != 0 and "no 'bookworm' entry" in none.stderr, "apt-sources says so when it finds none")

    print(f"repo: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
