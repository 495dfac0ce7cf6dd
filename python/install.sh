#!/usr/bin/env bash
# Installs what the Python suite needs into the PATH's python3 (numpy, pytest, torch from
# pip) and the nvme_csd package itself; skips the package build when its sources and
# the library's are unchanged since the last install.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore
missing=()
# CSD_PY_DEMO=1: only what the package itself needs (make demo), not the suite's torch.
wanted="numpy pytest torch setuptools pybind11"
[ "${CSD_PY_DEMO:-0}" = 1 ] && wanted="numpy setuptools pybind11"
for m in $wanted; do
    "$py" -c "import $m" 2>/dev/null || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "python: pip install ${missing[*]} (torch is large: a few minutes the first time)"
    "$py" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
stamp="$top/build/python-install.stamp"
hash=$(cat "$top"/python/setup.py "$top"/python/pyproject.toml "$top"/python/src/*.cc "$top"/python/nvme_csd/*.py \
       "$top"/host/lib/*.cc "$top"/host/lib/*.hpp "$top"/host/include/csd/*.hpp "$top"/host/include/*.h \
       "$top"/qemu-device/core/src/*.cc "$top"/qemu-device/core/src/*.h "$top"/qemu-device/core/src/programs/* \
       "$top"/qemu-device/core/include/*.h | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ] && "$py" -c "import nvme_csd._core" 2>/dev/null; then
    exit 0
fi
echo "python: pip install ./python"
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation "$top/python"
mkdir -p "$top/build"
echo "$hash" > "$stamp"
