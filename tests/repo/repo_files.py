# SPDX-License-Identifier: MIT
"""The repository's files for the checks in tests/repo: git's tracked files in a git
checkout, else (a tarball, a copy) every file under the top but build output (any build/
folder, .git, __pycache__, *.egg-info)."""
import os
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".gl", "build", "__pycache__"}
_said = False


def in_git_checkout(top: Path = TOP) -> bool:
    """Whether top is the top of a git work tree (not merely inside another repository)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=top, capture_output=True, text=True)
    except OSError:
        return False
    return out.returncode == 0 and Path(out.stdout.strip()).resolve() == top.resolve()


def repo_files(top: Path = TOP) -> list[str]:
    """The repository's files, relative to top: git's tracked files, or, outside a git
    checkout, every file of the tree but build output (said once, on stderr)."""
    global _said
    if in_git_checkout(top):
        out = subprocess.run(["git", "ls-files", "-z"], cwd=top, capture_output=True, check=True).stdout
        return [p for p in out.decode().split("\0") if p]
    if not _said:
        print(f"repo: {top} is not a git checkout: checking every file under it but build output (build/, .git, __pycache__, *.egg-info)",
              file=sys.stderr)
        _said = True
    files = []
    for d, dirs, names in os.walk(top):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.endswith(".egg-info")]
        files += [os.path.relpath(os.path.join(d, n), top) for n in names if not n.endswith(".pyc")]
    return sorted(files)
