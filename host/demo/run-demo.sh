#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: boots the guest with a 1 GiB CSD namespace and 512 MiB of SLM and runs
# host/demo/demo.py in it (the dataset is made in the guest; nothing else is needed),
# then the design-space table (python/demo/design_space.py, beside the Python package it
# uses): the same questions under each timing-model preset, in-drive vs classic. Plots of
# both go to build/plots/ (offload.png, design-space.png) where matplotlib is installed.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
truncate -s 1G "$tmp/namespace.img"
python3 "$top/tests/vm/csdvm.py" cmd --disk "$tmp/namespace.img" --slm 512M --memory 3G \
    --timeout 900 "python3 /csd/demo/demo.py" | tee "$tmp/demo.out"
rm -f "$tmp/namespace.img"
echo
echo "== design space: is offload worth it on the drive being designed? (timing model presets)"
bash "$top/python/install.sh" demo
"${CSD_VENV:-$top/build/venv}/bin/python" "$top/python/demo/plots.py" offload "$tmp/demo.out" "$top/build/plots/offload.png"
"${CSD_VENV:-$top/build/venv}/bin/python" "$top/python/demo/design_space.py" --dir "$tmp"
