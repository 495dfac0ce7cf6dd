#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes the nvme device with csd=on as QEMU sees it: QEMU's own generic-fuzz target
# (libFuzzer, clang, ASan + UBSan) drives MMIO, PCI config and DMA into the controller,
# whose device core (meson's fuzzing build, build/meson-fuzz) carries the same instrumentation. Runs for SECONDS (default 60)
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
mkdir -p "$dir/corpus" "$dir/findings"
rm -rf "$dir/core"   # the core this script once built itself

fail() { echo "qemu-fuzz: $*"; echo "qemu-fuzz: 0 passed, 1 failed"; exit 1; }

# ---- the device core, instrumented like QEMU (coverage for libFuzzer, ASan, UBSan): meson's
# fuzzing build, shared with run-fuzz.sh (fuzz-build.sh), brought up to date once
# shellcheck source=fuzz-build.sh
. "$here/fuzz-build.sh"
fuzz_build core/libcsd_core.a || fail "the fuzzing build of the device core (build/meson-fuzz) failed"
lib="$FUZZ_BUILD/core/libcsd_core.a"

# ---- QEMU's fuzzer binary, cached on its inputs like the ordinary build
bash "$top/qemu-device/build-qemu.sh" --fuzz --core-lib "$lib" --core-libs "$FUZZ_BUILD/core/csd_core_link_libs.txt" ||
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
