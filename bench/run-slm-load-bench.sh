#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SLM Load against a direct read of the same namespace bytes (docs/perf.md, "SLM Load in the
# guest"), side by side in one run: in a TCG guest, bench/slm_load_bench on /dev/ng0n1 (SLM
# Load: namespace -> device memory) against O_DIRECT reads of /dev/nvme0n1 (namespace ->
# guest memory through the same controller and QEMU's block layer); then on the host, the
# in-process device (emu:) over the same bytes against buffered reads of its file.
# Usage: bench/run-slm-load-bench.sh [--perf DIR]   (--perf: perf record -g of QEMU meanwhile)
# Environment: CSD_QEMU (another QEMU build, to compare), SIZES (default 16,64), REPS (9).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
perf_dir=""
[ "${1:-}" = --perf ] && perf_dir=$(realpath -m "$2")
sizes=${SIZES:-16,64}
reps=${REPS:-9}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# real bytes, not a sparse file: every Load and read copies them from the page cache
head -c 256M /dev/urandom > "$tmp/ns.img"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## guest (TCG): SLM Load on /dev/ng0n1 against O_DIRECT reads of /dev/nvme0n1"
if [ -n "$perf_dir" ]; then
    mkdir -p "$perf_dir"
    (   # perf on QEMU once it runs, for as long as it runs
        for _ in $(seq 600); do
            pid=$(pgrep -f "file=$tmp/ns.img" | head -1) && break
            sleep 0.1
        done
        [ -n "${pid:-}" ] && exec perf record -g -o "$perf_dir/qemu.perf.data" -p "$pid" >"$perf_dir/perf.log" 2>&1
    ) &
fi
python3 "$top/tests/vm/csdvm.py" cmd --disk "$tmp/ns.img" --slm 256M --memory 1G --timeout 500 \
    "for r in 1 2; do slm_load_bench /dev/ng0n1 /dev/nvme0n1 --mib $sizes --reps $reps; done"
wait
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## host: the in-process device (emu:) over the same file against buffered reads of it"
"$top/build/meson/bench/slm_load_bench" "emu:$tmp/ns.img?slm=256M" "$tmp/ns.img" --buffered --mib "$sizes" --reps "$reps"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
