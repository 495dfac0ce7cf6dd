#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes the nvme device with csd=on as QEMU sees it: QEMU's own generic-fuzz target
# (libFuzzer, clang, ASan + UBSan) drives MMIO, PCI config and DMA into the controller,
# whose device core is built with the same instrumentation. Runs for SECONDS (default 60)
# on JOBS workers (default 1) from the corpus kept in build/fuzz/qemu-generic/corpus
# (it grows across runs) plus the checked-in regressions. Prints
# 'qemu-fuzz: N passed, N failed' and the executions done; a finding is in
# build/fuzz/qemu-generic/findings/.
# Usage: tests/fuzz/run-qemu-fuzz.sh [SECONDS] [JOBS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
jobs=${2:-1}
dir="$top/build/fuzz/qemu-generic"
core="$top/qemu-device/core"
mkdir -p "$dir/corpus" "$dir/findings" "$dir/core"

fail() { echo "qemu-fuzz: $*"; echo "qemu-fuzz: 0 passed, 1 failed"; exit 1; }

# ---- the device core, instrumented like QEMU (coverage for libFuzzer, ASan, UBSan)
lib="$dir/core/libcsd_core.a"
srcs=("$core"/src/*.cc "$core"/src/programs/*.cc "$top"/spec/crc32c.cc)
bpf_flags=() libs="-lopenblas -lzstd -llz4 -ldl -lxxhash -lisal"
if pkg-config --exists libdpdk; then
    inc=$(pkg-config --variable=includedir libdpdk)
    bpf_flags=(-DCSD_HAVE_BPF -I"$inc" -I"$inc/../x86_64-linux-gnu/dpdk")
    libs="$libs -lrte_bpf -lrte_eal"
fi
echo "$libs -lstdc++ -lm" > "$dir/core/link-libs.txt"
if [ ! -f "$lib" ] || [ -n "$(find "${srcs[@]}" "$core/include" "$top/spec" -newer "$lib" 2>/dev/null)" ]; then
    echo "qemu-fuzz: building the device core with clang++ (fuzzer-no-link, address, undefined)"
    rm -rf "$dir/core/obj" && mkdir -p "$dir/core/obj"
    for s in "${srcs[@]}"; do
        o="$dir/core/obj/$(basename "$(dirname "$s")")_$(basename "$s" .cc).o"
        clang++ -std=c++17 -O1 -g -fPIC -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function,vptr \
            -DCSD_HAVE_XXHASH -DCSD_HAVE_ISAL "${bpf_flags[@]}" -I"$core/include" -I"$top/spec" \
            $(pkg-config --cflags openblas) -c "$s" -o "$o" || fail "core source $s did not build"
    done
    rm -f "$lib" && ar rcs "$lib" "$dir"/core/obj/*.o
fi

# ---- QEMU's fuzzer binary, cached on its inputs like the ordinary build
bash "$top/qemu-device/build-qemu.sh" --fuzz --core-lib "$lib" --core-libs "$dir/core/link-libs.txt" ||
    fail "QEMU's fuzzer did not build"
bin="$top/build/qemu-fuzz/qemu-fuzz-x86_64"

# ---- the run (the setup is shared with carried runs: qemu-fuzz-env.sh)
FIRMWARE="$top/build/share/qemu"
# shellcheck source=qemu-fuzz-env.sh
. "$here/qemu-fuzz-env.sh"
python3 "$here/make_seeds.py" qemu-generic "$dir/corpus"   # controller up, one of each command
regressions=()
[ -d "$here/regressions/qemu-generic" ] && regressions=("$here/regressions/qemu-generic")
log="$dir/last-run.log"
# A backstop: libFuzzer checks -max_total_time only between inputs and not while it loads
# the corpus; should an input ever loop where the per-input -timeout cannot stop it, the
# whole run (workers included: timeout signals its process group) ends here as a failure.
guard=$((secs + 900))
start=$(date +%s)
if [ "$jobs" -gt 1 ]; then
    # libFuzzer's -jobs writes one fuzz-N.log per worker, counted below; they are appended to
    # the log for its reports (the parent has copies only of the workers that finished).
    (cd "$dir" && rm -f fuzz-*.log &&
     ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        timeout -s KILL "$guard" "$bin" --fuzz-target=generic-fuzz -jobs="$jobs" -workers="$jobs" -max_total_time="$secs" \
        "${QEMU_FUZZ_OPTS[@]}" -artifact_prefix="$dir/findings/" \
        "$dir/corpus" "${regressions[@]}") > "$log" 2>&1
    rc=$?
    cat "$dir"/fuzz-*.log >> "$log" 2>/dev/null
else
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        timeout -s KILL "$guard" "$bin" --fuzz-target=generic-fuzz -max_total_time="$secs" "${QEMU_FUZZ_OPTS[@]}" \
        -artifact_prefix="$dir/findings/" "$dir/corpus" "${regressions[@]}" > "$log" 2>&1
    rc=$?
fi
if [ "$jobs" -gt 1 ]; then execs=$(qemu_fuzz_execs "$dir"/fuzz-*.log); else execs=$(qemu_fuzz_execs "$log"); fi
took=$(( $(date +%s) - start ))
echo "qemu-fuzz: $execs executions in $took s on $jobs worker(s); corpus $(ls "$dir/corpus" | wc -l) inputs"
echo "$(date -u +%FT%TZ) $execs $took $jobs" >> "$dir/executions.txt"
echo "qemu-fuzz: executions so far (all runs kept in $dir/executions.txt): $(awk '{n += $2} END {print n + 0}' "$dir/executions.txt")"
if [ $rc != 0 ] && grep -q "libFuzzer: run interrupted" "$log" && ! grep -q -E "$QEMU_FUZZ_REPORTS" "$log"; then
    rc=0   # stopped early (Ctrl-C; exit 72, or 1 from -jobs): the executions count, nothing was found
fi
if [ $rc = 0 ] && [ "$execs" -gt 0 ]; then
    echo "ok   generic-fuzz nvme csd=on: $took s, no findings"
    echo "qemu-fuzz: 1 passed, 0 failed"
else
    why="exit $rc"
    [ $rc = 137 ] && [ $took -ge $guard ] && why="still running after $guard s: a hang the per-input -timeout did not end"
    tail -n 60 "$log"
    echo "FAIL generic-fuzz nvme csd=on ($why): see $log and $dir/findings/"
    echo "qemu-fuzz: 0 passed, 1 failed"
    exit 1
fi
