# SPDX-License-Identifier: MIT
# The feature matrix (docs/feature-matrix.md) on the reset format: every guest way in, every row
# (tests/matrix/matrix.py), each cell the reference result or a named refusal.
# vm: csd=on cu=1 device=csd.nvme-cs=on alone timeout=600
exec python3 /csd/matrix/guest_run.py reset
