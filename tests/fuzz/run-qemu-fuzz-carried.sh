#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs QEMU's generic-fuzz from build/qemu-fuzz-carry.tar.xz (pack-qemu-fuzz.sh) on JOBS
# workers for SECONDS, with the setup of run-qemu-fuzz.sh (qemu-fuzz-env.sh), on a machine
# without a QEMU build. Prints the executions done; findings and the inputs the run added
# (new-corpus.tar.xz) go to $OUT (default build/qemu-fuzz-out) to be brought back.
# Usage: tests/fuzz/run-qemu-fuzz-carried.sh [SECONDS] [JOBS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-540}
jobs=${2:-$(nproc)}
out=${OUT:-$top/build/qemu-fuzz-out}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$top/build/qemu-fuzz-carry.tar.xz" || { echo "qemu-fuzz: build/qemu-fuzz-carry.tar.xz missing"; exit 1; }
c="$tmp/qemu-fuzz-carry"
FIRMWARE="$c/share"
# shellcheck source=qemu-fuzz-env.sh
. "$here/qemu-fuzz-env.sh"
mkdir -p "$out/findings" "$c/new"
ls "$c/corpus" > "$tmp/before"
# the workers get SIGINT (libFuzzer then prints its final statistics) if they outlive SECS + 30 s
(cd "$tmp" && LD_LIBRARY_PATH="$c/lib" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    timeout -s INT -k 20 $((secs + 30)) \
    "$c/qemu-fuzz-x86_64" --fuzz-target=generic-fuzz -jobs="$jobs" -workers="$jobs" -max_total_time="$secs" \
    "${QEMU_FUZZ_OPTS[@]}" -artifact_prefix="$out/findings/" "$c/corpus" "$here/regressions/qemu-generic" \
    > "$tmp/run.log" 2>&1)
rc=$?
pkill -INT -f "$c/qemu-fuzz-x86_64" 2>/dev/null; sleep 2
execs=$(qemu_fuzz_execs "$tmp"/fuzz-*.log)
crashes=$(cat "$tmp"/fuzz-*.log | grep -c -E "$QEMU_FUZZ_REPORTS")
ls "$c/corpus" | sort | comm -13 <(sort "$tmp/before") - > "$tmp/added"
tar -C "$c/corpus" -cJf "$out/new-corpus.tar.xz" -T "$tmp/added"  # unpack into build/fuzz/qemu-generic/corpus
echo "qemu-fuzz (carried): $execs executions in $secs s on $jobs workers, exit $rc, $crashes sanitizer or signal reports, $(wc -l < "$tmp/added") inputs added"
cat "$tmp"/fuzz-*.log | grep -E "ERROR|runtime error|deadly|SUMMARY" | head -20
ls "$out/findings" | grep -v "^slow-unit" | head
