#!/usr/bin/env bash
# Builds the libFuzzer target over the device core with clang (ASan + UBSan) and runs it
# for SECONDS (default 60) from the seed corpus; prints 'fuzz: N passed, N failed'.
# Usage: tests/fuzz/run-fuzz.sh [SECONDS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
out="$top/build/fuzz"
mkdir -p "$out/corpus" "$out/findings"
core="$top/qemu-device/core"
bin="$out/fuzz_execute"
srcs=("$here/fuzz_execute.cc" "$core"/src/*.cc "$core"/src/programs/*.cc "$top"/spec/crc32c.cc)
if [ ! -x "$bin" ] || [ -n "$(find "${srcs[@]}" "$core/include" "$core/src" "$top/spec" -newer "$bin" 2>/dev/null)" ]; then
    echo "fuzz: building with clang++ (address, undefined, fuzzer)"
    clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -DCSD_HAVE_XXHASH -DCSD_HAVE_ISAL -I"$core/include" -I"$top/spec" $(pkg-config --cflags openblas) \
        "${srcs[@]}" -o "$bin" $(pkg-config --libs openblas libzstd liblz4 libxxhash libisal) || {
        echo "fuzz: 0 passed, 1 failed (build)"; exit 1; }
fi
python3 "$here/make_seeds.py" "$out/corpus"
log="$out/last-run.log"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$out/findings/" "$out/corpus" "$here/regressions" > "$log" 2>&1
rc=$?
grep -E "^stat::number_of_executed_units|^stat::new_units_added|Done [0-9]+ runs" "$log"
if [ $rc = 0 ]; then
    echo "fuzz: 1 passed, 0 failed (${secs} s, no findings)"
else
    tail -n 40 "$log"
    echo "fuzz: 0 passed, 1 failed (finding in $out/findings)"
    exit 1
fi
