#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every relative link in the tracked Markdown files resolves inside the repository: the file
(or folder) exists and, for a '#anchor', a heading of the target gives that anchor (GitHub's
slugs). Prints each broken link as FILE:LINE: TARGET (why) and 'links: N passed, N failed'."""
import re
import sys
from pathlib import Path

from repo_files import TOP, repo_files

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    h = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors the headings of a Markdown file give (duplicates numbered as GitHub does)."""
    seen: dict[str, int] = {}
    out = set()
    fence = False
    for line in path.read_text(errors="replace").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def main() -> int:
    passed = failed = 0
    for f in (f for f in repo_files() if f.endswith(".md")):
        fence = False
        for no, line in enumerate((TOP / f).read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):   # http:, mailto: ...
                    continue
                path, _, frag = target.partition("#")
                dest = (TOP / f).parent / path if path else TOP / f
                why = None
                if not dest.exists():
                    why = "no such file"
                elif TOP.resolve() not in dest.resolve().parents and dest.resolve() != TOP.resolve():
                    why = "outside the repository"
                elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                    why = f"no heading gives #{frag}"
                if why:
                    failed += 1
                    print(f"{f}:{no}: {target} ({why})")
                else:
                    passed += 1
    print(f"links: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
