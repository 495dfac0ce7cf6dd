#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On the GPU machine: unpacks build/gpu-stack.tar.xz (made here by make-carry.sh and carried
# with the checkout) and runs full_stack_p2p.py: QEMU under TCG, csd.ko's peer-to-peer SLM Read
# into an ivshmem BAR whose host file this machine's process registered with CUDA, bytes
# checked on the GPU, against the path without peer-to-peer. Usage: run.sh [LEN_MIB] [ROUNDS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
[ -f "$top/build/gpu-stack.tar.xz" ] || { echo "full-stack: build/gpu-stack.tar.xz missing (bench/gpu/full-stack/make-carry.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$top/build/gpu-stack.tar.xz"
python3 "$top/bench/gpu/full-stack/full_stack_p2p.py" "$tmp/gpu-stack" "${1:-16}" "${2:-4}"
