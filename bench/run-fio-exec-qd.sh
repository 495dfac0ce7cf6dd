#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Execute latency by queue depth through fio's csd engine (docs/fio.md) beside csdctl bench,
# on one drive: 4 KiB copy Executes (csdctl bench's workload) at fio iodepth 1, 8 and 32,
# and csdctl bench's own synchronous / QD1 / QD8 / QD32 numbers. Prints a markdown table
# (docs/perf.md) and the load average at the start and end.
# Usage: bench/run-fio-exec-qd.sh [DEVICE] [SECONDS]   (default: a new in-process device, 5 s)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dev=${1:-emu:$tmp/ns.img?size=64M&slm=48M}
secs=${2:-5}
engine="$top/build/fio/csd-fio.so"
csdctl="$top/build/meson/host/csdctl"
[ -f "$engine" ] || { echo "run-fio-exec-qd: $engine missing (make fio-engine)" >&2; exit 1; }
[ -x "$csdctl" ] || csdctl=csdctl
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at start: $(load)"
echo
echo "| queue depth | fio csd engine: Executes/s | clat mean | p50 | p99 | p99.9 | csdctl bench: Executes/s |"
echo "|---|---|---|---|---|---|---|"
bench=$("$csdctl" -d "$dev" bench --seconds "$secs" 2>&1)
cb() { sed -n "s/^Execute copy 4 KiB, $1: *\([0-9]*\) commands\/s/\1/p" <<<"$bench"; }
echo "| synchronous (csdctl) | | | | | | $(cb synchronous) |"
for qd in 1 8 32; do
    fio --output-format=json --name=copy --ioengine="external:$engine" --filename=csd --csd_device="$dev" \
        --thread --csd_mode=exec --csd_program=copy --rw=randread --bs=4k --size=16M --iodepth=$qd \
        --time_based --runtime="$secs" > "$tmp/fio.json"
    row=$(python3 - "$tmp/fio.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
c = r["clat_ns"]
p = c["percentile"]
us = lambda ns: f"{ns / 1000:.1f} us"
print(f"{r['iops']:,.0f} | {us(c['mean'])} | {us(p['50.000000'])} | {us(p['99.000000'])} | {us(p['99.900000'])}")
EOF
)
    qdn=$(printf '%2d' $qd)
    echo "| $qd | $row | $(cb "queue depth $qdn") |"
done
echo
echo "load average at end: $(load)"
