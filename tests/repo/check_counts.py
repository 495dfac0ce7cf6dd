#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts and versions the docs and the code state in words agree with their one source:
the command set's version (spec/csd-command-set.md's title) in spec/csd_spec.h and in the
nvme-cli plugin's description and header; the number of device-defined programs
(spec/csd_spec.h's CSD_PROG_ ids) in docs/command-set.md and docs/architecture.md."""
import re
import sys
from pathlib import Path

from checks import Checks

TOP = Path(__file__).resolve().parents[2]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen"]


def main() -> int:
    c = Checks("counts")
    version = re.search(r"^# CSD command set, version (\d+\.\d+)", (TOP / "spec/csd-command-set.md").read_text(), re.M)
    c(version, "spec/csd-command-set.md's title names the command set's version")
    if not version:
        return c.report()
    v = version[1]
    for path, pattern in (("spec/csd_spec.h", r"wire format, version (\d+\.\d+)"),
                          ("host/nvme-cli-plugin/csd-nvme.h", r"\(CSD command set (\d+\.\d+)\)"),
                          ("host/nvme-cli-plugin/csd-nvme.c", r"plugin for the CSD command set (\d+\.\d+)")):
        m = re.search(pattern, (TOP / path).read_text())
        c(m and m[1] == v, f"{path} says command set {v} (says {m[1] if m else 'none'})")
    ids = set(re.findall(r"^\s*CSD_PROG_\w+ = (0x[0-9A-Fa-f]+),", (TOP / "spec/csd_spec.h").read_text(), re.M))
    n = len(ids)
    c(n >= 12, f"spec/csd_spec.h names {n} device-defined programs")
    cs = (TOP / "docs/command-set.md").read_text()
    for pattern in (r"max_ranges 16, (\d+) programs,", r"^programs\s+(\d+)$"):
        found = re.findall(pattern, cs, re.M)
        c(found and all(int(x) == n for x in found), f"docs/command-set.md's '{pattern}' says {n} (says {found})")
    arch = re.search(r"the (\w+) built in", (TOP / "docs/architecture.md").read_text())
    c(arch and arch[1] == WORDS[n], f"docs/architecture.md says the {WORDS[n]} built in (says {arch[1] if arch else None})")
    return c.report()


if __name__ == "__main__":
    sys.exit(main())
