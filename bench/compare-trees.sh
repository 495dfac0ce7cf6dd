#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the same benchmarks on two built trees of nvme-csd, alternating between them, so a
# change's before and after are measured in one run (issue 29's table in docs/perf.md):
# core_bench, csdctl bench on the in-process device, and in a TCG guest csdctl bench over
# ioctl and io_uring (bench/run-lib-bench.sh) and the SLM/gemm bench (bench/run-vm-bench.sh).
#
# Usage: bench/compare-trees.sh BEFORE_TREE AFTER_TREE [ROUNDS]
#   each tree has been built with `make qemu image build guest` (build/meson, build/qemu,
#   build/guest); ROUNDS (default 1) repeats the alternation. Output: one labelled block per
#   tree and benchmark, then nothing else; read the numbers side by side.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_TREE AFTER_TREE [ROUNDS]" >&2; exit 2; }
before=$(realpath "$1"); after=$(realpath "$2"); rounds=${3:-1}
for t in "$before" "$after"; do
    for f in build/meson/bench/core_bench build/meson/host/csdctl build/qemu/qemu-system-x86_64; do
        [ -x "$t/$f" ] || { echo "compare-trees: $t/$f missing: build that tree first (make qemu image build guest)" >&2; exit 1; }
    done
done
run() {   # run LABEL TREE COMMAND...: prints a header and the command's output
    local label=$1 tree=$2; shift 2
    echo "===== $label [$tree] $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    (cd "$tree" && "$@") 2>&1 | grep -v '^build-\|^csdvm: booting' || echo "compare-trees: $label failed in $tree"
}
img=$(mktemp /tmp/compare-trees.XXXXXX.img)
trap 'rm -f "$img"' EXIT
truncate -s 256M "$img"
for ((r = 1; r <= rounds; r++)); do
    for t in "$before" "$after"; do
        run core_bench "$t" env OPENBLAS_NUM_THREADS=2 build/meson/bench/core_bench
        run "csdctl bench emu:" "$t" build/meson/host/csdctl --device "emu:$img" bench --seconds 3
    done
    for t in "$before" "$after"; do run "guest csdctl bench (ioctl, io_uring)" "$t" bash bench/run-lib-bench.sh; done
    for t in "$before" "$after"; do run "guest SLM/gemm bench" "$t" bash bench/run-vm-bench.sh; done
done
