#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ci/apt-sources.sh finds the machine's Debian archive in the source lists real Debian 12
machines have: either format (one-line sources.list from the installer, deb822 .sources),
not a third party's 'bookworm' entry (Docker's 'bookworm stable'), a cloud image's
mirror+file: list resolved for debootstrap (ci/root-lib.sh); ci/deps.sh checks its entries
even when every package is installed. Prints 'apt-sources: N passed, N failed'."""
import http.server
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from checks import Checks

TOP = Path(__file__).resolve().parents[2]
DEBIAN = ("Types: deb\nURIs: http://archive.example/debian/\nSuites: bookworm bookworm-updates\n"
          "Components: main\nSigned-By: /k.gpg\n\nTypes: deb\nURIs: http://security.example/debian-security\n"
          "Suites: bookworm-security\nComponents: main\nSigned-By: /k.gpg\n")
WANT = ("Types: deb\nURIs: http://archive.example/debian/\nSuites: bookworm-backports\nComponents: main\n"
        "Signed-By: /k.gpg\n\nTypes: deb-src\nURIs: http://archive.example/debian/\nSuites: trixie\n"
        "Components: main\nSigned-By: /k.gpg\n\nTypes: deb-src\nURIs: http://archive.example/debian/\n"
        "Suites: bookworm\nComponents: main\nSigned-By: /k.gpg\n")
DOCKER = ("Types: deb\nURIs: https://download.docker.com/linux/debian\nSuites: bookworm\n"
          "Components: stable\nSigned-By: /etc/apt/keyrings/docker.asc\n")

check = Checks("apt-sources")


def etc(files: dict[str, str]) -> tempfile.TemporaryDirectory:
    """A copy of /etc/apt holding these files (path under it -> text)."""
    tmp = tempfile.TemporaryDirectory()
    (Path(tmp.name) / "sources.list.d").mkdir()
    for name, text in files.items():
        (Path(tmp.name) / name).write_text(text)
    return tmp


def run(script: str, *args: str, etc_dir: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(TOP / script), *args], capture_output=True, text=True,
                          env={"CSD_APT_ETC": etc_dir, "PATH": "/usr/bin:/bin"})


def first_uri(out: str) -> str:
    return next((line.split()[1] for line in out.splitlines() if line.startswith("URIs:")), "")


def main():
    with etc({"sources.list": "# installer\ndeb [arch=amd64 signed-by=/k.gpg] http://archive.example/debian/ bookworm main\n"
                              "deb http://security.example/debian-security bookworm-security main\n"}) as d:
        one = run("ci/apt-sources.sh", "--print", etc_dir=d)
        check(one.returncode == 0 and one.stdout.endswith(WANT), "apt-sources reads a one-line sources.list")
    with etc({"sources.list.d/debian.sources": DEBIAN}) as d:
        deb822 = run("ci/apt-sources.sh", "--print", etc_dir=d)
        check(deb822.returncode == 0 and deb822.stdout.endswith(WANT), "apt-sources reads deb822 .sources")
    with etc({}) as d:
        none = run("ci/apt-sources.sh", "--print", etc_dir=d)
        check(none.returncode != 0 and "no Debian 'bookworm main' entry" in none.stderr,
              "apt-sources says so when it finds none")

    # Docker's documented set-up beside the installer's one-line entry: Docker's is a deb822
    # 'bookworm' entry too, but not Debian's archive (component stable, its own key).
    with etc({"sources.list": "deb http://deb.debian.org/debian/ bookworm main non-free-firmware\n",
              "sources.list.d/docker.sources": DOCKER}) as d:
        uri = first_uri(run("ci/apt-sources.sh", "--print", etc_dir=d).stdout)
        check(uri == "http://deb.debian.org/debian/", f"a third party's deb822 bookworm entry is not taken for Debian's (got {uri!r})")
    # Both deb822, the third party's file first, one with main: Debian's keyring wins.
    with etc({"sources.list.d/a-vendor.sources": DOCKER.replace("stable", "main"),
              "sources.list.d/debian.sources": DEBIAN.replace("/k.gpg", "/usr/share/keyrings/debian-archive-keyring.gpg")}) as d:
        uri = first_uri(run("ci/apt-sources.sh", "--print", etc_dir=d).stdout)
        check(uri == "http://archive.example/debian/", f"an entry signed by debian-archive-keyring is preferred (got {uri!r})")
    # A disabled stanza is not an entry.
    with etc({"sources.list.d/debian.sources": "Enabled: no\n" + DEBIAN.replace("archive.example", "old.example", 1),
              "sources.list": "deb [signed-by=/k.gpg] http://archive.example/debian/ bookworm main\n"}) as d:
        uri = first_uri(run("ci/apt-sources.sh", "--print", etc_dir=d).stdout)
        check(uri == "http://archive.example/debian/", f"a stanza with 'Enabled: no' is left out (got {uri!r})")

    # Debian 12 cloud image: apt takes mirror+file:, debootstrap (ci/root-lib.sh) knows only
    # http(s)://, ftp://, file: and ssh: ('E: unknown location mirror+file:///...').
    with etc({}) as d:
        mirrors = Path(d) / "mirrors" / "debian.list"
        mirrors.parent.mkdir()
        mirrors.write_text("# the cloud's mirror first\nhttp://cloud.example/debian\tpriority:1\nhttp://deb.example/debian\n")
        (Path(d) / "sources.list.d" / "debian.sources").write_text(
            f"Types: deb deb-src\nURIs: mirror+file://{mirrors}\n"
            "Suites: bookworm bookworm-updates bookworm-backports\nComponents: main\n")
        printed = run("ci/apt-sources.sh", "--print", etc_dir=d)
        check(first_uri(printed.stdout) == f"mirror+file://{mirrors}", "apt's entries keep the mirror+file: URI")
        archive = run("ci/apt-sources.sh", "--archive", etc_dir=d)
        check(archive.returncode == 0 and archive.stdout == "http://cloud.example/debian\n",
              f"the archive debootstrap is given is the mirror list's first (got {archive.stdout.strip()!r} {archive.stderr.strip()})")
        root_lib = (TOP / "ci/root-lib.sh").read_text()
        check('apt-sources.sh" --archive' in root_lib, "ci/root-lib.sh gives debootstrap apt-sources.sh --archive")
    # mirror+http(s): the list is fetched (apt-transport-mirror(1)), not the list's URL taken.
    with etc({}) as d:
        (Path(d) / "mirrors.txt").write_text("http://net.example/debian\n")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=d, **k)

            def log_message(self, *a):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        (Path(d) / "sources.list").write_text(f"deb mirror+http://127.0.0.1:{server.server_port}/mirrors.txt bookworm main\n")
        archive = run("ci/apt-sources.sh", "--archive", etc_dir=d)
        server.shutdown()
        check(archive.stdout == "http://net.example/debian\n",
              f"a mirror+http: list is fetched and its first mirror given (got {archive.stdout.strip()!r} {archive.stderr.strip()})")

    # ci/deps.sh: the entries are checked before 'nothing to install' (a missing trixie
    # deb-src entry made QEMU's source fetch say 'run make deps', which then did nothing).
    with etc({"sources.list.d/debian.sources": DEBIAN}) as d:
        missing = run("ci/deps.sh", "--check", etc_dir=d)
        check(missing.returncode == 1 and "nvme-csd.sources" in missing.stderr,
              "deps --check reports missing apt entries even with every package installed")
        (Path(d) / "sources.list.d" / "nvme-csd.sources").write_text(
            run("ci/apt-sources.sh", "--print", etc_dir=d).stdout)
        present = run("ci/deps.sh", "--check", etc_dir=d)
        check("nvme-csd.sources" not in present.stderr and run("ci/apt-sources.sh", "--check", etc_dir=d).returncode == 0,
              "deps --check is content with the entries once they are in place")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
