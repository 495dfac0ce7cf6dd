#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python suite on the host against the in-process device, in the project's virtual
# environment build/venv (python/install.sh makes it: numpy, pytest and torch from pip).
# Prints 'python: N passed, N failed, N skipped' (skips with their reasons above it).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/python/install.sh" test || { echo "python: 0 passed, 1 failed (install)"; exit 1; }
cd "$top"   # not python/, so the installed package is the one imported
out=$("${CSD_VENV:-$top/build/venv}/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests 2>&1)
rc=$?
echo "$out"
p=$(grep -oE '[0-9]+ passed' <<<"$out" | tail -1 | cut -d' ' -f1)
f=$(grep -oE '[0-9]+ (failed|error)' <<<"$out" | awk '{s+=$1} END {print s+0}')
[ $rc = 0 ] || [ "${f:-0}" != 0 ] || f=1
s=$(grep -oE '[0-9]+ skipped' <<<"$out" | tail -1 | cut -d' ' -f1)
echo "python: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
[ $rc = 0 ]
