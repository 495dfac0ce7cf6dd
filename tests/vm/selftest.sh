#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the VM harness itself: hung tests and a frozen guest fail the run within bounded
# time and leave no QEMU behind. Prints 'N passed, N failed'.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
result() { if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "ok - $2"; else fail=$((fail + 1)); echo "not ok - $2"; fi; }

start=$(date +%s)
out=$(timeout 120 python3 "$here/csdvm.py" test --dir "$here/selftest" pass.sh hang-test.sh slow-pass.sh hang-guest.sh 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | sed 's/^/#   /'
[ $rc = 1 ]; result $? "a run with hung tests exits 1 (got $rc)"
[ $took -lt 100 ]; result $? "the harness ended a frozen guest in bounded time (${took} s)"
grep -q '^PASS pass.sh' <<<"$out"; result $? "the passing test passed"
grep -q 'FAILED hang-test.sh.*exit 137' <<<"$out"; result $? "the guest-side timeout killed the hung test"
grep -q 'FAILED hang-guest.sh.*timeout' <<<"$out"; result $? "the host-side timeout caught the frozen guest"
grep -q '^PASS slow-pass.sh' <<<"$out"; result $? "a test in the same guest as a shorter-timeout one ran under its own timeout"
grep -q '2 passed, 2 failed' <<<"$out"; result $? "the closing line counts 2 passed, 2 failed"
! pgrep -f "csdvm-.*initrd.cpio" >/dev/null; result $? "no QEMU left running"
echo "harness: $pass passed, $fail failed"
[ $fail = 0 ]
