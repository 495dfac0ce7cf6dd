#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The checks' list of the repository's files (repo_files.py): git's tracked files in a git
checkout; outside one (a tarball, a copied tree) every file but build output, said on
stderr, instead of a crash in 'git ls-files'. Prints 'repo-files: N passed, N failed'."""
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks
from repo_files import TOP, repo_files

check = Checks("repo-files")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        for f in ("Makefile", "docs/a.md", "build/venv/x.py", "python/build/lib/y.py", "python/n.egg-info/PKG-INFO",
                  "tests/__pycache__/t.cpython-311.pyc", "tests/t.py"):
            (top / f).parent.mkdir(parents=True, exist_ok=True)
            (top / f).write_text("")
        err = subprocess.run([sys.executable, "-c", "import sys; from repo_files import repo_files; "
                              "print(repo_files(__import__('pathlib').Path(sys.argv[1])))", tmp],
                             cwd=Path(__file__).parent, capture_output=True, text=True)
        check(err.returncode == 0 and err.stdout.strip() == "['Makefile', 'docs/a.md', 'tests/t.py']",
              f"outside a git checkout: every file but build output (got {err.stdout.strip() or err.stderr.strip()})")
        check("not a git checkout" in err.stderr, "outside a git checkout: says so")
    files = repo_files()
    check("Makefile" in files and not any(f.startswith("build/") for f in files),
          f"in this tree: its files, none under build/ ({len(files)} files)")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
