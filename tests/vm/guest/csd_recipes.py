# SPDX-License-Identifier: MIT
"""Runs the ```sh blocks of a Markdown file in one shell, in order, and compares each
block's output with the ```text block right after it (when there is one).
Usage: csd_recipes.py FILE [MARK]: with MARK, only the ```sh blocks whose fence follows a
line MARK (the README marks its guest recipes '<!-- guest recipe -->'; its other blocks
run on the host)."""
import re
import subprocess
import sys

from csd_guest import Checks
from markdown_recipes import agrees, recipes as marked_recipes

doc = open(sys.argv[1]).read()
mark = sys.argv[2] if len(sys.argv) > 2 else None
recipes = marked_recipes(doc, [mark] if mark else None)  # (script, expected or None)

script = "".join(f"echo '@@RECIPE {i}'\n{body}\n" for i, (body, _) in enumerate(recipes))
out = subprocess.run(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     text=True).stdout
parts = re.split(r"^@@RECIPE (\d+)\n", out, flags=re.M)
got = {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
c = Checks()
for i, (body, want) in enumerate(recipes):
    first = body.strip().splitlines()[0][:60]
    if want is None:
        c.ok(i in got, f"recipe {i} ran: {first}")
        continue
    ok = agrees(got.get(i, ""), want)
    if not ok:
        print(f"--- recipe {i} printed:\n{got.get(i, '<nothing>')}--- the document says:\n{want}")
    c.ok(ok, f"recipe {i} prints what the document says: {first}")
c.ok(len(recipes) >= (1 if mark else 8), f"{len(recipes)} recipes found")
c.report()
