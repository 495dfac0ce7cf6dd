#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The docs cite only what the repository carries: no Markdown file or header names a path
outside it (the workspace's shared folders), and the contracts the docs cite are under
spec/. Prints 'citations: N passed, N failed'."""
import sys

from checks import Checks
from repo_files import TOP, repo_files

OUTSIDE = ("../shared/", "shared/spec/", "shared/notes/", "/work/")
CONTRACTS = ("spec/csd-command-set.md", "spec/nvme-cs.md")

check = Checks("citations")


def main():
    docs = [f for f in repo_files() if f.endswith(".md") or f.endswith(".h")]
    outside = [f for f in docs if any(s in (TOP / f).read_text(errors="replace") for s in OUTSIDE)]
    check(not outside, "docs cite only files in the repository" + (f" (outside: {', '.join(outside)})" if outside else ""))
    for spec in CONTRACTS:
        check((TOP / spec).is_file(), f"the contract {spec} is in the repository")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
