#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the type stubs of the extension module nvme_csd._core with pybind11-stubgen,
# from the module installed in the project's virtual environment (python/install.sh test),
# into python/nvme_csd/_core/ (or $CSD_STUBS_OUT: the suite compares the two).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
vpy=${CSD_VENV:-$top/build/venv}/bin/python
out=${CSD_STUBS_OUT:-$top/python/nvme_csd/_core}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"   # not python/: the installed module is the one described
"$vpy" -m pybind11_stubgen nvme_csd._core -o "$tmp/stubs" --numpy-array-use-type-var >/dev/null
mkdir -p "$out"
rm -f "$out"/*.pyi
cp "$tmp"/stubs/nvme_csd/_core/*.pyi "$out"/
echo "stubs: $(ls "$out"/*.pyi | wc -l) files in $out"
