#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs bench/vm/slm_bench.py in a guest with a 4 KiB-LBA namespace of 512 MiB and 512 MiB
# of SLM (TCG guest; device work runs on QEMU's host threads).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# real bytes, not a sparse file: the Load then reads 256 MiB from the page cache
head -c 512M /dev/urandom > "$tmp/ns.img"
exec python3 "$top/tests/vm/csdvm.py" cmd --disk "$tmp/ns.img" --slm 512M --lbads 12 --memory 2G \
    "python3 /csd/bench/slm_bench.py"
