#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What crosses the bus per kind of drive (docs/real-drives.md): on three in-process drives
# (vendor; standard-only: both front ends with the vendor I/O off and CSD_IGNORE_VENDOR=1;
# plain: host mode), a store holding a 1 MiB object of 65536 16-byte records (u32 index,
# f32 (7919 i mod 65536) / 65536, u64 3 i), then `csdctl --bus-stats run filter` on the f32
# keeping 32833 records into a new object and `run checksum --algo crc32c` of the object.
# Prints a markdown table (commands, bytes to / from the drive) and the checksums, which
# must agree. Counts of commands and bytes, not times: the same on any machine.
# Usage: bench/run-bus-by-drive.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csdctl="$top/build/meson/host/csdctl"
[ -x "$csdctl" ] || { echo "run-bus-by-drive: $csdctl missing (make build)" >&2; exit 1; }
python3 - "$tmp/recs.bin" <<'EOF'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(b"".join(struct.pack("<Ifq", i, (7919 * i % 65536) / 65536, 3 * i) for i in range(65536)))
EOF
# bus JSON line of csdctl's --bus-stats (stderr) -> "commands, to / from"
bus() {
    python3 -c '
import json, sys
b = json.loads([l for l in sys.stdin if l.startswith("{")][-1])
print("%d, %d / %d %s" % (b["bus_commands"], b["bus_bytes_to_device"], b["bus_bytes_from_device"], b["where"]))'
}
echo "| drive | where | filter: commands, bytes to / from the drive | checksum: commands, bytes to / from |"
echo "|---|---|---|---|"
sums=""
for kind in vendor standard plain; do
    case $kind in
        vendor) env=(); dev="emu:$tmp/v.img?size=64M"; label="vendor (emulated)" ;;
        standard) env=(CSD_IGNORE_VENDOR=1); dev="emu:$tmp/s.img?size=64M&nvme-cs=1&vendor-io=0"
                  label='standard-only (`CSD_IGNORE_VENDOR=1`, `nvme-cs=1&vendor-io=0`)' ;;
        plain) env=(CSD_IGNORE_VENDOR=1); dev="emu:$tmp/p.img?size=64M"; label="plain (host mode)" ;;
    esac
    run() { env "${env[@]}" "$csdctl" -d "$dev" "$@"; }
    run format > /dev/null
    run put recs "$tmp/recs.bin" > /dev/null
    f=$(run --bus-stats run filter recs hot --record-size 16 --field-offset 4 --type f32 --op ge \
        --lo 0.4990081787109375 2>&1)
    grep -q "^32833 matching records" <<<"$f" || { echo "run-bus-by-drive: $kind: filter kept not 32833: $f" >&2; exit 1; }
    c=$(run --bus-stats run checksum recs --algo crc32c 2>&1)
    fb=$(bus <<<"$f"); cb=$(bus <<<"$c")
    echo "| $label | ${fb##* } | ${fb% *} | ${cb% *} |"
    sums+="$kind: $(grep '^crc32c' <<<"$c")"$'\n'
done
echo
printf '%s' "$sums"
[ "$(printf '%s' "$sums" | awk '{print $NF}' | sort -u | wc -l)" = 1 ] || { echo "run-bus-by-drive: the checksums differ" >&2; exit 1; }
