# SPDX-License-Identifier: MIT
# The feature matrix (docs/feature-matrix.md) in exact mode: a timing model (gen4x4-8core) with
# csd.exact=on under -icount, so every completion lands at its modelled time and the guest is held while the
# host is slower; every guest way in, every row, each cell the reference result or a named
# refusal, and no overrun of the model (C1h) on either drive.
# vm: csd=on drives=2 exact icount=0 device=csd.nvme-cs=on,csd.model=gen4x4-8core alone timeout=900
exec python3 /csd/matrix/guest_run.py exact
