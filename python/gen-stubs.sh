#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the type stubs of the extension module nvme_csd._core with pybind11-stubgen,
# from the module installed in the project's virtual environment (python/install.sh test),
# into python/nvme_csd/_core/ (or $CSD_STUBS_OUT: the suite compares the two). The module
# has the same functions built with or without CUDA (without, the gpu_* ones refuse), so
# the stubs are the same either way; they depend on the pybind11 the build used (pip's,
# in the build-isolated environment python/install.sh makes).
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
# The one difference between a build with the GPU part and one without is this value.
sed -i 's/^has_gpu_part: bool = \(True\|False\)$/has_gpu_part: bool/' "$out/__init__.pyi"
# Generated from the project's MIT sources: the licence line every file carries.
sed -i '1i # SPDX-License-Identifier: MIT' "$out"/*.pyi
echo "stubs: $(ls "$out"/*.pyi | wc -l) files in $out"
