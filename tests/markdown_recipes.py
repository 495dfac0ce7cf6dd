# SPDX-License-Identifier: MIT
"""The shell recipes of a Markdown file, read one way for every test that runs them as
written: its ```sh blocks (those whose fence follows a marker line, such as the README's
'<!-- build recipe -->', '<!-- host recipe -->' and '<!-- guest recipe -->'), each with the
```text block right after it, which is what it must print. Standard library only: the
host's python/tests/test_readme.py, the guest's csd_recipes.py and
tests/fresh/readme-first-ten-minutes.sh share it.
Usage: markdown_recipes.py FILE DIR MARK...  writes the recipes marked MARK (any of them), in
                                             the file's order, as DIR/NN.sh, with DIR/NN.expected
                                             beside each one that has a text block
       markdown_recipes.py --compare GOT EXPECTED  exit 0 when GOT printed what EXPECTED says"""
import re
import sys
from pathlib import Path


def blocks(doc: str) -> list[tuple[str, str, str]]:
    """Every fenced block of the Markdown text doc: (kind, body, the line before the fence)."""
    return [(m[1], m[2], doc[:m.start()].rstrip("\n").rsplit("\n", 1)[-1])
            for m in re.finditer(r"```(\w*)\n(.*?)```", doc, re.S)]


def recipes(doc: str, marks: "list[str] | None" = None) -> list[tuple[str, "str | None"]]:
    """The ```sh blocks of doc (those after a line equal to one of marks; all when marks is
    None), in order: (script, the ```text block right after it, or None)."""
    found = blocks(doc)
    out = []
    for i, (kind, body, before) in enumerate(found):
        if kind == "sh" and (marks is None or before.strip() in marks):
            nxt = found[i + 1] if i + 1 < len(found) else None
            out.append((body, nxt[1] if nxt and nxt[0] == "text" else None))
    return out


def agrees(got: str, want: str) -> bool:
    """Whether a recipe's output got is the text the document says (trailing space aside)."""
    return got.rstrip() == want.rstrip()


def main(argv: list[str]) -> int:
    """The command line (the module's docstring)."""
    if len(argv) == 3 and argv[0] == "--compare":
        got, want = Path(argv[1]).read_text(errors="replace"), Path(argv[2]).read_text()
        if agrees(got, want):
            return 0
        print(f"--- the recipe printed:\n{got}--- the document says:\n{want}", end="")
        return 1
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    doc, out = Path(argv[0]).read_text(), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    found = recipes(doc, argv[2:])
    for n, (script, want) in enumerate(found, 1):
        (out / f"{n:02}.sh").write_text(script)
        if want is not None:
            (out / f"{n:02}.expected").write_text(want)
    if not found:
        print(f"markdown_recipes: no recipe marked {' or '.join(argv[2:])} in {argv[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
