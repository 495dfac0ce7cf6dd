# SPDX-License-Identifier: MIT
# The recipes of docs/command-set.md, run verbatim; each one's output must equal the
# text block that follows it in the document.
# vm: csd=on slm=64M cu=2 alone
exec python3 /csd/tests/csd_recipes.py /csd/docs/command-set.md
