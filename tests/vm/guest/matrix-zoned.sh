# SPDX-License-Identifier: MIT
# The feature matrix (docs/feature-matrix.md) on the zoned format: every guest way in, every row
# (tests/matrix/matrix.py), each cell the reference result or a named refusal.
# vm: csd=on ns=zoned=on,zoned.zone_size=4M device=csd.nvme-cs=on,csd.nvme-cs.mem-nsid=2 alone timeout=600
exec python3 /csd/matrix/guest_run.py zoned
