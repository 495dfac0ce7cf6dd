#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reads into GPU memory on a machine with an NVIDIA GPU: builds the host-only libcsd, its GPU
# part, gpu_io and the queue processor's tests in build/gpu-host, runs the queue processor's
# tests, gpu_io check (every Read checked on the GPU where it landed: the arena, GPU memory
# moved by each mover, an SLM Read, destinations outside the window), `gpu_io $SANITIZER_ARGS`
# under compute-sanitizer memcheck (correctness before rates; see below), the resident copy
# kernel's rows with each shape in VRAM_SHAPES (BLOCKSxWARPS, default: none), gpu_io vram
# (the rates of docs/perf.md; its resident rows with VRAM_SHAPE, default 1x16). The
# sanitizer's default is check lane, the resident copy kernel's lanes driven directly
# (`check vram` runs every mover's Reads through the queues, but under compute-sanitizer those
# of the resident one do not complete). Logs to $OUT (default build/gpu-out).
source "$(dirname "$0")/gpu-machine-env.sh"
{
    nvidia-smi -L
    [ -f $b/build.ninja ] || meson setup $b -Dpassthru=disabled -Dbuildtype=release 2>&1 | grep -E "ERROR|cudart|nvcc"
    meson compile -C $b csd:shared_library csd-emu:shared_library csd_gpu gpu_io csd-queue-processor-tests 2>&1 | grep -E "error|FAILED" | head -30
    echo "== built at $(date +%T)"
    echo "== the queue processor's tests (a held mover: completions only once moved, bad destinations, full staging)"
    $b/tests/host/csd-queue-processor-tests --gtest_brief=1 2>&1 | tail -3
    echo "== gpu_io check ${CHECK_ARGS:-}: Reads (arena, GPU memory by each mover), SLM Reads, Executes, bad destinations"
    timeout ${CHECK_TIMEOUT:-200} $b/bench/gpu/gpu_io check ${CHECK_ARGS:-}
} 2>&1 | tee "$out/vram-tests.log"
{
    echo "== gpu_io ${SANITIZER_ARGS:-check lane} under compute-sanitizer memcheck"
    timeout ${SANITIZER_TIMEOUT:-300} /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full \
        $b/bench/gpu/gpu_io ${SANITIZER_ARGS:-check lane} 2>&1 | grep -vE "^=========  +(Host Frame|Saved host)" | tail -30
    echo "== done at $(date +%T)"
} 2>&1 | tee "$out/vram-sanitizer.log"
for shape in ${VRAM_SHAPES:-}; do
    echo "== gpu_io vram ${VRAM_POLLERS:-16} ${shape#*x} ${shape%x*} resident: the resident copy kernel, $shape warps a poller"
    timeout 120 $b/bench/gpu/gpu_io vram "${VRAM_POLLERS:-16}" "${shape#*x}" "${shape%x*}" resident
done 2>&1 | tee "$out/vram-shapes.log"
{
    echo "== gpu_io vram ${VRAM_POLLERS:-16}: random Reads into GPU memory against the arena and cudaMemcpyAsync; $(date +%T)"
    shape=${VRAM_SHAPE:-1x16}
    timeout ${VRAM_TIMEOUT:-300} $b/bench/gpu/gpu_io vram "${VRAM_POLLERS:-16}" "${shape#*x}" "${shape%x*}"
    echo "== done at $(date +%T)"
} 2>&1 | tee "$out/vram-bench.log"
