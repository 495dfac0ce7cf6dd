#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On the GPU machine: unpacks build/gpu-stack.tar.xz (made here by make-carry.sh and carried
# with the checkout) and runs full_stack_p2p.py: QEMU under TCG, csd.ko's peer-to-peer SLM Read
# into an ivshmem BAR whose host file this machine's process registered with CUDA, bytes
# checked on the GPU, against the path without peer-to-peer. Usage: run.sh [LEN_MIB] [ROUNDS]
# run.sh agent [READS_PER_PAIR] [PAIRS]: full_stack_agent.py instead, GPU kernels driving
# agent queue pairs of the emulated controller; with build/gpu-queues.tar.xz carried too
# (make-carry.sh --gpu-queues), GpuQueues on the in-process device beside it (gpu_io bench:
# the same random Reads from kernels, served by host threads).
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
[ -f "$top/build/gpu-stack.tar.xz" ] || { echo "full-stack: build/gpu-stack.tar.xz missing (bench/gpu/full-stack/make-carry.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$top/build/gpu-stack.tar.xz"
if [ "${1:-}" != agent ]; then
    python3 "$top/bench/gpu/full-stack/full_stack_p2p.py" "$tmp/gpu-stack" "${1:-16}" "${2:-4}"
    exit
fi
rc=0
python3 "$top/bench/gpu/full-stack/full_stack_agent.py" "$tmp/gpu-stack" "${2:-20000}" "${3:-8}" || rc=1
if [ -f "$top/build/gpu-queues.tar.xz" ]; then
    tar -C "$tmp" -xJf "$top/build/gpu-queues.tar.xz"
    echo "== GpuQueues on the in-process device (gpu_io bench 8: kernels' random Reads served by host threads)"
    LD_LIBRARY_PATH="$tmp/gpu-queues/lib:${CUDA_HOME:-/usr/local/cuda}/lib64" timeout 90 stdbuf -oL \
        "$tmp/gpu-queues/gpu_io" bench 8 | head -n 20 || true
fi
exit $rc
