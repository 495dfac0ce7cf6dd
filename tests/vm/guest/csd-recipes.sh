# SPDX-License-Identifier: MIT
# The recipes of docs/command-set.md, then the README's guest recipes (marked
# '<!-- guest recipe -->'), run verbatim; each one's output must equal the text block that
# follows it in the document. The README's start as after 'make vm': no program loaded.
# vm: csd=on slm=64M cu=2 alone
python3 /csd/tests/csd_recipes.py /csd/docs/command-set.md || exit 1
for slot in $(csdctl program list | awk '{print $1}'); do
    csdctl program unload "0x${slot%h}" || exit 1
done
exec python3 /csd/tests/csd_recipes.py /csd/README.md '<!-- guest recipe -->'
