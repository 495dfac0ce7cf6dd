#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Streaming put and get against holding the whole object in host memory, side by side in
# one run on the in-process device (emu:): for each size (GiB; default 1 4), peak resident
# memory (/usr/bin/time's maximum RSS) and throughput of
#   csdctl put FILE, put - from a pipe, get to FILE, get - into a pipe        (streaming)
#   Python: dev.store.put_file / get_file                                     (streaming)
#   Python: dev.store["x"] = np.fromfile(FILE) / dev.store["x"].tofile(FILE)  (in memory: what
#           a user writes without put_file)
#   $CSDCTL_BEFORE put / get, when set (a csdctl built before streaming: the object in memory)
# Writes the Markdown table docs/perf.md shows. Needs 3x the largest size free under $TMPDIR.
# usage: bench/run-stream-bench.sh [SIZE_GIB...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
csdctl=${CSDCTL:-$top/build/meson/host/csdctl}
py=${PYTHON:-$top/build/venv/bin/python}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4)
dir=$(mktemp -d "${TMPDIR:-/tmp}/csd-stream-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# row LABEL GIB CMD...: runs CMD under /usr/bin/time, prints a table row
row() {
    local label=$1 gib=$2
    shift 2
    sync
    /usr/bin/time -f "%M %e" -o "$dir/time" "$@" > /dev/null
    read -r kb secs < "$dir/time"
    awk -v l="$label" -v g="$gib" -v kb="$kb" -v s="$secs" \
        'BEGIN { printf "| %s | %d GiB | %.0f MiB | %.1f s | %.0f MiB/s |\n", l, g, kb / 1024, s, g * 1024 / s }'
}

echo "| what | object | peak RSS | time | rate |"
echo "|---|---|---|---|---|"
for gib in "${sizes[@]}"; do
    head -c "$((gib << 30))" /dev/urandom > "$dir/src.bin"
    export CSD_DEVICE="emu:$dir/ns.img?size=$((2 * gib + 1))G"
    rm -f "$dir/ns.img"
    "$csdctl" format > /dev/null
    row "csdctl put FILE" "$gib" "$csdctl" put x "$dir/src.bin"
    row "csdctl put - (from a pipe)" "$gib" sh -c "cat '$dir/src.bin' | '$csdctl' put x -"
    row "csdctl get NAME FILE" "$gib" "$csdctl" get x "$dir/out.bin"
    row "csdctl get NAME - (into a pipe)" "$gib" sh -c "'$csdctl' get x - | cat > /dev/null"
    cmp "$dir/src.bin" "$dir/out.bin"
    row "Python put_file(path)" "$gib" "$py" -c "import nvme_csd as n; n.open('$CSD_DEVICE').store.put_file('x', '$dir/src.bin')"
    row "Python get_file(name, path)" "$gib" "$py" -c "import nvme_csd as n; n.open('$CSD_DEVICE').store.get_file('x', '$dir/out.bin')"
    row "Python store[x] = np.fromfile(path) (in memory)" "$gib" "$py" -c \
        "import numpy as np, nvme_csd as n; n.open('$CSD_DEVICE').store['x'] = np.fromfile('$dir/src.bin', np.uint8)"
    row "Python store[x].tofile(path) (in memory)" "$gib" "$py" -c \
        "import nvme_csd as n; n.open('$CSD_DEVICE').store['x'].tofile('$dir/out.bin')"
    if [ -n "${CSDCTL_BEFORE:-}" ]; then
        row "csdctl put FILE, before streaming" "$gib" "$CSDCTL_BEFORE" put x "$dir/src.bin"
        row "csdctl get NAME FILE, before streaming" "$gib" "$CSDCTL_BEFORE" get x "$dir/out.bin"
    fi
    cmp "$dir/src.bin" "$dir/out.bin"
    rm -f "$dir/ns.img" "$dir/src.bin" "$dir/out.bin"
done
