#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python suite on the host against the in-process device, in the project's virtual
# environment build/venv (python/install.sh makes it: numpy, pytest and torch from pip),
# with csdctl and the example eBPF programs built first (meson, build/meson).
# Prints 'python: N passed, N failed, N skipped' (skips with their reasons above it).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/python/install.sh" test || { echo "python: 0 passed, 1 failed (install)"; exit 1; }
# What the suite runs besides the package: csdctl (test_npy) and the example eBPF programs
# (test_program, test_btree, test_close, test_trends), from the meson build install.sh used;
# without them those tests skip.
mb=${CSD_MESON_BUILD:-$top/build/meson}
bpf=$(meson introspect --targets "$mb" 2>/dev/null |
      "${CSD_VENV:-$top/build/venv}/bin/python" -c 'import json, sys
print(" ".join(t["name"] for t in json.load(sys.stdin) if t["name"].startswith("bpf-example-")))')
nice -n 10 meson compile -C "$mb" -j 2 csdctl $bpf > /dev/null ||
    { echo "python: building csdctl and the example eBPF programs in $mb failed (meson compile -C $mb csdctl $bpf)"
      echo "python: 0 passed, 1 failed (build)"; exit 1; }
export CSDCTL=${CSDCTL:-$mb/host/csdctl} CSD_BPF_DIR=${CSD_BPF_DIR:-$mb/examples/bpf}
cd "$top"   # not python/, so the installed package is the one imported
out=$("${CSD_VENV:-$top/build/venv}/bin/python" -m pytest -q -rfEs -p no:cacheprovider python/tests 2>&1)
rc=$?
echo "$out"
p=$(grep -oE '[0-9]+ passed' <<<"$out" | tail -1 | cut -d' ' -f1)
f=$(grep -oE '[0-9]+ (failed|error)' <<<"$out" | awk '{s+=$1} END {print s+0}')
[ $rc = 0 ] || [ "${f:-0}" != 0 ] || f=1
s=$(grep -oE '[0-9]+ skipped' <<<"$out" | tail -1 | cut -d' ' -f1)
echo "python: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
[ $rc = 0 ]
