#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Review of issue 28 (ci/apt-sources.sh and ci/root-lib.sh): two source lists real Debian 12
machines have. FAILS on main 8bbba74 (both checks). Prints 'apt-review: N passed, N failed'.
1. One-line Debian entry in sources.list plus a third-party deb822 file whose Suites names
   bookworm (Docker's documented set-up): the Debian archive must be the one copied.
2. Debian 12 cloud image: 'URIs: mirror+file:///etc/apt/mirrors/debian.list': apt takes it,
   but ci/root-lib.sh hands the same URI to debootstrap, which knows no mirror+file."""
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
passed = failed = 0


def check(ok, what):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(("ok   " if ok else "FAIL ") + what)


def first_uri(etc):
    out = subprocess.run(["bash", str(TOP / "ci/apt-sources.sh"), "--print"], capture_output=True, text=True,
                         env={"CSD_APT_ETC": str(etc), "PATH": "/usr/bin:/bin"}).stdout
    return next((line.split()[1] for line in out.splitlines() if line.startswith("URIs:")), "")


with tempfile.TemporaryDirectory() as tmp:
    etc = Path(tmp)
    (etc / "sources.list.d").mkdir()
    (etc / "sources.list").write_text("deb http://deb.debian.org/debian/ bookworm main non-free-firmware\n")
    (etc / "sources.list.d" / "docker.sources").write_text(
        "Types: deb\nURIs: https://download.docker.com/linux/debian\nSuites: bookworm\n"
        "Components: stable\nSigned-By: /etc/apt/keyrings/docker.asc\n")
    uri = first_uri(etc)
    check(uri == "http://deb.debian.org/debian/", f"a third-party deb822 bookworm entry is not taken for Debian's (got {uri})")

with tempfile.TemporaryDirectory() as tmp:
    etc = Path(tmp)
    (etc / "sources.list.d").mkdir()
    (etc / "sources.list.d" / "debian.sources").write_text(
        "Types: deb deb-src\nURIs: mirror+file:///etc/apt/mirrors/debian.list\n"
        "Suites: bookworm bookworm-updates bookworm-backports\nComponents: main\n")
    uri = first_uri(etc)
    # root_make passes this URI to debootstrap, whose just_get() knows http(s)://, ftp://,
    # file: and ssh: only: 'E: unknown location mirror+file:///...' (seen with debootstrap 1.0.128)
    check(not uri.startswith("mirror+"), f"the URI root-lib.sh gives debootstrap is one it can fetch from (got {uri})")

print(f"apt-review: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
