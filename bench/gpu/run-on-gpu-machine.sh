#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host-only build on a machine with an NVIDIA GPU (no QEMU, libnvme or liburing
# needed: the in-process device), then the GPU tests (also under compute-sanitizer), the
# bandwidth benchmark (the pinned pipeline's sweep, the simulated peer-to-peer drive) and the
# Python GPU tests, GPU-initiated I/O (random Reads and Executes, checked on the GPU, also
# under compute-sanitizer; rates on 1-256 queues), the GPU-initiated gather, the prefetching
# loader, streaming inference with the layer loader, and (with build/gpu-stack.tar.xz carried) the whole stack under QEMU with csd.ko's
# peer-to-peer path. Writes logs to $OUT (default build/gpu-out). QUICK=1: the landing
# (tests, gpu_bench, the sweep) and the timing-model table only, sanitizer included.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$top/build/gpu-out}
mkdir -p "$out"
cd "$top"
{
    nvidia-smi -L
    echo "python3: $(command -v python3)"
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    meson setup build/gpu-host -Dpassthru=disabled -Dbuildtype=release 2>&1 | grep -E "found|Has header|ERROR|Message" | tail -30
    ninja -C build/gpu-host 2>&1 | grep -E "error|FAILED" | head -30
    echo "== core and library tests (host-only build)"
    build/gpu-host/tests/unit/csd-core-tests --gtest_brief=1 | tail -2
    build/gpu-host/tests/unit/csd-core-portable-tests --gtest_brief=1 | tail -2
    build/gpu-host/tests/host/csd-library-tests --gtest_brief=1 | tail -2
    echo "== GPU tests"
    build/gpu-host/tests/gpu/csd-gpu-tests 2>&1 | tail -15
    echo "== GPU-initiated commands (GpuQueues): the gather checked (under compute-sanitizer at the end)"
    build/gpu-host/tests/host/csd-queue-processor-tests --gtest_brief=1 | tail -2
    [ -n "${QUICK:-}" ] || timeout 120 build/gpu-host/bench/gpu/gpu_gather check
    echo "== GPU-initiated random Reads (512 B, 4 KiB) and Executes, every byte and result checked on the GPU"
    timeout 120 build/gpu-host/bench/gpu/gpu_io check
} 2>&1 | tee "$out/gpu-tests.log"
{
    echo "== gpu_bench with the library's defaults (object: the pinned pipeline; p2p: the simulated peer-to-peer drive)"
    build/gpu-host/bench/gpu/gpu_bench 1024
    echo "== the pinned pipeline's sweep (chunk size x readers), from which the defaults are picked"
    timeout 200 build/gpu-host/bench/gpu/gpu_bench sweep
    echo "== each pipeline landing timed alone: after the object's put or not, the namespace registered or not"
    timeout 200 build/gpu-host/bench/gpu/gpu_bench why
    if [ -n "${QUICK:-}" ]; then
        echo "== GPU-initiated 512 B Reads under the ll-nand-gen5 timing model"
        timeout 200 build/gpu-host/bench/gpu/gpu_io model 16
        exit 0
    fi
    echo "== GPU-initiated I/O: random 512 B / 4 KiB Reads and Executes from kernels, 1-256 queues"
    timeout 300 build/gpu-host/bench/gpu/gpu_io bench 16
    echo "== GPU-initiated gather against host-issued (65536 random 4 KiB records)"
    timeout 300 build/gpu-host/bench/gpu/gpu_gather bench 65536 8
} 2>&1 | tee "$out/gpu-bench.log"
[ -z "${QUICK:-}" ] && {
    echo "== Python"
    CSD_LIBDIR="$top/build/gpu-host/host" python3 -m pip install -q --no-build-isolation ./python 2>&1 | tail -5  # absolute: pip builds in python/
    (cd /tmp && python3 -m pytest -q -p no:cacheprovider "$top/python/tests" 2>&1 | tail -15)
    echo "== what a user would otherwise write, against the drive's paths"
    python3 bench/gpu/landing_vs_torch.py 2>&1 | tail -30
    echo "== streaming inference with the layer loader (a small Llama; bench/gpu/run-stream-llama.sh for the 7B one)"
    python3 bench/gpu/stream_llama.py --layers 8 --hidden 2048 --intermediate 5504 --heads 16 --prompt 512 \
        --decode 8 --slow-decode 4 --budget-layers 4 --out "$out" 2>&1 | tail -16
    echo "== GPU idle per training step, with and without prefetch"
    python3 bench/gpu/prefetch_training.py 24 2 4096
    python3 bench/gpu/prefetch_training.py 24 2 512 | tail -2
} 2>&1 | tee "$out/gpu-python.log"
# Last, being the slowest: the same checks under compute-sanitizer.
[ -n "${QUICK:-}" ] && {
    echo "== GPU tests under compute-sanitizer (the timed concurrency tests left out)"
    timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full build/gpu-host/tests/gpu/csd-gpu-tests --gtest_brief=1 --gtest_filter=-*WhileLanding* 2>&1 | grep -vE "^=========  +(Host Frame|Saved host)" | tail -40
    exit 0
} 2>&1 | tee "$out/gpu-sanitizer.log"
[ -n "${QUICK:-}" ] && exit 0
{
    echo "== GPU tests under compute-sanitizer (the timed concurrency tests left out)"
    timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full build/gpu-host/tests/gpu/csd-gpu-tests --gtest_brief=1 --gtest_filter=-*WhileLanding* 2>&1 | grep -vE "^=========  +(Host Frame|Saved host)" | tail -40
    echo "== GPU-initiated reads and Executes under compute-sanitizer"
    timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck build/gpu-host/bench/gpu/gpu_io check 2>&1 | tail -4
    timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck build/gpu-host/bench/gpu/gpu_gather check 2>&1 | tail -3
} 2>&1 | tee "$out/gpu-sanitizer.log"
{
    echo "== the whole stack: QEMU (TCG) + csd.ko peer-to-peer into a CUDA-registered ivshmem BAR"
    if [ -f build/gpu-stack.tar.xz ]; then
        bash bench/gpu/full-stack/run.sh 64 4 | grep -v "guest|"
    else
        echo "skipped: build/gpu-stack.tar.xz not carried (bench/gpu/full-stack/make-carry.sh here, then carry it)"
    fi
} 2>&1 | tee "$out/gpu-full-stack.log"
