#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the project's virtual environment (build/venv, from the machine's python3 or
# $PYTHON) and installs the nvme_csd package into it, with what the demo or the test
# suites need; never touches the interpreter it was made from. Skips the package build
# when its sources and the libcsd it carries are unchanged since the last install (a test
# install serves the demo too: its requirements include the demo's). $PYTHON naming
# another interpreter than the one build/venv was made from makes build/venv anew.
# Usage: python/install.sh [demo|test]   (demo: numpy, matplotlib; test, the default: + pytest, torch,
# mypy, pybind11-stubgen, tqdm: pyproject.toml's extras)
# Environment: PYTHON (default python3), CSD_VENV (default build/venv), CSD_MESON_BUILD.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
want=${1:-test}
py=${PYTHON:-python3}
venv=${CSD_VENV:-$top/build/venv}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
say() { echo "python: $*"; }

# The interpreter a venv was made from: its base prefix and version.
base_of() { "$1" -c 'import sys; print(sys.base_prefix, sys.version)' 2>/dev/null; }
if [ -n "${PYTHON:-}" ] && [ -x "$venv/bin/python" ] && [ "$(base_of "$venv/bin/python")" != "$(base_of "$py")" ]; then
    say "PYTHON=$PYTHON is not the interpreter $venv was made from ($("$venv/bin/python" --version 2>&1) in" \
        "$("$venv/bin/python" -c 'import sys; print(sys.base_prefix)')): making it anew"
    rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
    say "making the virtual environment $venv from $(command -v "$py") ($("$py" --version 2>&1))"
    "$py" -m venv "$venv" || {
        echo "python: '$py -m venv' failed; on Debian install python3-venv (make deps)" >&2
        exit 1
    }
fi
vpy="$venv/bin/python"

# What each use needs beyond the package (whose own dependencies pyproject.toml declares).
case "$want" in
    demo) extras="[plot]" ;;
    test) extras="[test]" ;;
    *) echo "python: unknown use '$want' (demo or test)" >&2; exit 2 ;;
esac

# The extension links libcsd.so, which it carries with libcsd-emu.so (python/setup.py):
# both built first by meson, in $CSD_MESON_BUILD (default build/meson).
mb=${CSD_MESON_BUILD:-$top/build/meson}
if [ ! -f "$mb/build.ninja" ]; then
    say "meson setup $mb (libcsd for the extension)"
    meson setup "$mb" --buildtype=release > /dev/null
fi
# By target name: libcsd's file is host/libcsd.so.VERSION (libcsd.so and .so.0 link to it).
# The GPU part's CRC-32C kernel too, where meson found nvcc (setup.py links it with gpu.cc).
kernel=$(ninja -C "$mb" -t targets all 2>/dev/null | grep '^host/gpu_crc32c.o:' > /dev/null && echo gpu_crc32c || true)
nice -n 10 meson compile -C "$mb" -j 2 csd:shared_library csd-emu:shared_library $kernel > /dev/null || {
    echo "python: building libcsd in $mb failed (meson compile -C $mb csd:shared_library csd-emu:shared_library)" >&2
    exit 1
}
export CSD_LIBDIR="$mb/host"

# One stamp per use, holding the hash of what was installed; the test install's serves the
# demo as well (the demo's requirements are among the test's).
stamp="$venv/nvme-csd-$want.stamp"
hash=$(cat "$top"/python/setup.py "$top"/python/pyproject.toml "$top"/python/src/*.cc "$top"/python/src/*.hpp "$top"/python/nvme_csd/*.py \
       "$top"/python/nvme_csd/py.typed "$top"/python/nvme_csd/_core/*.pyi \
       "$top"/host/include/csd/*.hpp "$top"/host/store/include/csd/*.hpp "$top"/host/include/*.h "$top"/spec/* "$top"/host/cuda/*.cc "$top"/host/cuda/*.hpp \
       "$CSD_LIBDIR"/libcsd.so "$CSD_LIBDIR"/libcsd-emu.so | sha256sum | cut -c1-16)
satisfied_by=("$stamp")
[ "$want" = test ] || satisfied_by+=("$venv/nvme-csd-test.stamp")
for s in "${satisfied_by[@]}"; do
    if [ "$(cat "$s" 2>/dev/null)" = "$hash" ] && "$vpy" -c "import nvme_csd._core" 2>/dev/null; then
        exit 0
    fi
done
[ "$want" = test ] && ! "$vpy" -c "import torch" 2>/dev/null &&
    say "installing the test requirements (torch is large: a few minutes the first time)"
say "pip install ./python$extras into $venv (builds the extension: a few minutes)"
# PEP 517 build in an isolated environment with the build requirements pyproject.toml names.
"$vpy" -m pip install -q "$top/python$extras"
"$vpy" -c "import nvme_csd._core" || { echo "python: the installed package does not import" >&2; exit 1; }
rm -f "$venv"/nvme-csd-*.stamp
echo "$hash" > "$stamp"
