#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets over the device core with clang (ASan + UBSan) and runs
# each for SECONDS (default 60) from its seed corpus: fuzz_execute (descriptors and
# programs over SLM), fuzz_program (downloadable program images and their runs),
# fuzz_elf (program images built by a structure-aware mutator: sections, symbols,
# relocations, string tables; accepted ones run JIT-compiled and interpreted),
# fuzz_catalog (the object store's catalog decoder and journal), fuzz_nvme_cs (the
# standard front end's decoders: range sets, activation, Execute Program, memory commands)
# and fuzz_npy (numpy dtype text and .npy files, host/store/npy.cc).
# Prints 'fuzz: N passed, N failed'.
# The targets and the instrumented core come from meson's fuzzing build (fuzz-build.sh).
# Usage: tests/fuzz/run-fuzz.sh [SECONDS] [TARGET ...]  (FUZZ_JOBS: targets run at once)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_execute fuzz_program fuzz_elf fuzz_catalog fuzz_nvme_cs fuzz_npy)
out="$top/build/fuzz"
# shellcheck source=fuzz-build.sh
. "$here/fuzz-build.sh"
fuzz_build "${targets[@]/#/tests/fuzz/}" || { echo "fuzz: the fuzzing build (build/meson-fuzz) failed"; echo "fuzz: 0 passed, ${#targets[@]} failed"; exit 1; }

# One target: its seeds, then libFuzzer over the corpus (it grows across runs) and the kept
# regressions (each replayed as the corpus loads) for SECONDS. Prints its report lines.
run_target() {
    local t=$1 dir="$out/$1" bin="$FUZZ_BUILD/tests/fuzz/$1" regressions=() rc
    [ -d "$dir" ] || rm -f "$dir"  # a binary of the one-target layout this replaced
    mkdir -p "$dir/corpus" "$dir/findings"
    [ -x "$bin" ] || { echo "FAIL $t: not built ($bin)"; return 1; }
    python3 "$here/make_seeds.py" "$t" "$dir/corpus"
    [ -d "$here/regressions/$t" ] && regressions=("$here/regressions/$t")
    local log="$dir/last-run.log"
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$dir/findings/" "$dir/corpus" "${regressions[@]}" > "$log" 2>&1
    rc=$?
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|Done [0-9]+ runs" "$log" | sed "s/^/$t: /"
    if [ $rc = 0 ]; then
        echo "ok   $t: ${secs} s, no findings"
    else
        tail -n 40 "$log"
        echo "FAIL $t: finding in $dir/findings"
        return 1
    fi
}

# The targets run side by side, FUZZ_JOBS at a time (default: one per core); each one's
# report is printed whole when it ends.
jobs=${FUZZ_JOBS:-$(nproc)}
mkdir -p "$out"
pass=0 fail=0 running=0
declare -A pid_of=()
reap() {   # waits for one target to end and counts it
    local pid t
    wait -n -p pid; local rc=$?
    t=${pid_of[$pid]}
    cat "$out/$t.report"; rm -f "$out/$t.report"
    if [ $rc = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    running=$((running - 1))
}
for t in "${targets[@]}"; do
    [ $running -lt "$jobs" ] || reap
    run_target "$t" > "$out/$t.report" 2>&1 &
    pid_of[$!]=$t
    running=$((running + 1))
done
while [ $running -gt 0 ]; do reap; done
echo "fuzz: $pass passed, $fail failed"
[ $fail = 0 ]
