#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu_bench of two source trees (main and a branch, say) on the GPU machine: each built
# host-only, then run alternately round by round, so that both see the same machine in the
# same state; prints every run and the median GB/s per size of the pipeline (SLM) and
# object columns.
# Usage: bench/gpu/before-after.sh BEFORE_DIR AFTER_DIR [ROUNDS [MAX_MIB CHUNK_MIB BUFFERS READERS]]
set -uo pipefail
before=$1 after=$2 rounds=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
args=("${@:-}")
[ $# -gt 0 ] || args=(1024 16 4 8)
for t in "$before" "$after"; do
    (cd "$t" && { [ -d build/gpu-host ] || meson setup build/gpu-host -Dpassthru=disabled -Dbuildtype=release > /dev/null; } &&
        ninja -C build/gpu-host bench/gpu/gpu_bench > /dev/null) || { echo "build of $t failed"; exit 1; }
done
log=$(mktemp)
for ((r = 1; r <= rounds; r++)); do
    for t in before after; do
        dir=$([ $t = before ] && echo "$before" || echo "$after")
        echo "== gpu_bench ${args[*]}: $t, round $r" | tee -a "$log"
        "$dir/build/gpu-host/bench/gpu/gpu_bench" "${args[@]}" | tee -a "$log"
    done
done
python3 - "$log" <<'PY'
import re, statistics, sys
runs, who = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"== gpu_bench .*: (before|after), round", line)
    if m:
        who = m.group(1)
        continue
    f = line.split()
    if who and f and f[0].endswith("K") and f[0][:-1].isdigit():
        runs.setdefault((who, f[0]), []).append((float(f[3]), float(f[5]), float(f[2])))
print("median GB/s of the rounds (pipeline = slm_to_gpu through the pinned pipeline, object = object_to_gpu)")
print(f"{'size':>10} {'pipeline before':>16} {'pipeline after':>15} {'object before':>14} {'object after':>13} {'after/before':>13} {'ceiling':>8}")
for size in sorted({s for _, s in runs}, key=lambda s: int(s[:-1])):
    b, a = runs[("before", size)], runs[("after", size)]
    med = lambda v, i: statistics.median(x[i] for x in v)
    print(f"{size:>10} {med(b, 0):16.2f} {med(a, 0):15.2f} {med(b, 1):14.2f} {med(a, 1):13.2f} "
          f"{med(a, 1) / med(b, 1):12.2f}x {med(a, 2):8.2f}")
PY
rm -f "$log"
