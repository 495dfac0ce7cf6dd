#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the VM harness itself: hung tests and a frozen guest fail the run within bounded
# time and leave no QEMU behind. Prints 'N passed, N failed'.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
# This run's guests keep their files under a folder of its own, so that the check for QEMUs
# left behind sees only them (other runs on the machine may have guests up).
export TMPDIR=$(mktemp -d /tmp/csdvm-selftest.XXXXXX)
trap 'rm -rf "$TMPDIR"' EXIT
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
# `make vm CSD_PROPS=... DRIVES=N` (csdvm.py cmd/shell --device-props/--drives) starts the
# device the docs describe: the standard front end's namespaces on each of two drives.
out=$(CSD_PROPS='csd.nvme-cs=on,csd.model=gen4x4-8core' CSD_DRIVES=2 timeout 120 python3 "$here/csdvm.py" cmd \
      'ls /dev | grep -E "^ng[01]n[123]$" | tr "\n" " "' 2>&1)
grep -q 'ng0n1 ng0n2 ng0n3 ng1n1 ng1n2 ng1n3' <<<"$out"; result $? "CSD_PROPS and CSD_DRIVES shape the device (got: $(tail -n 1 <<<"$out"))"
out=$(timeout 60 python3 "$here/csdvm.py" cmd --device-props 'csd.no-such-property=1' true 2>&1); rc=$?
[ $rc != 0 ] && grep -q "no-such-property" <<<"$out"; result $? "a property QEMU does not know fails the boot with QEMU's reason (exit $rc)"
# Two stagings of the guest's files at once (make vm in one terminal, make check in another)
# both succeed, and a guest packed meanwhile gets a whole build/guest.
top=$(cd "$here/../.." && pwd)
if [ -f "$top/build/images/usr.list" ] && [ -d "$top/build/guest" ]; then
    bash "$top/images/stage-guest.sh" > "$TMPDIR/stage1" 2>&1 & p1=$!
    bash "$top/images/stage-guest.sh" > "$TMPDIR/stage2" 2>&1 & p2=$!
    out=$(timeout 120 python3 "$here/csdvm.py" cmd 'ls /csd/bin/csdctl' 2>&1); rc=$?
    wait $p1; r1=$?
    wait $p2; r2=$?
    [ $r1 = 0 ] && [ $r2 = 0 ]; result $? "two stagings at once both succeed (exit $r1, $r2: $(tail -n 1 "$TMPDIR/stage1") / $(tail -n 1 "$TMPDIR/stage2"))"
    [ $rc = 0 ]; result $? "a guest started during them has the staged files (exit $rc: $(tail -n 1 <<<"$out"))"
fi
# A QEMU of this run still alive (/proc read directly: a fresh Debian root has no pgrep).
left=
for f in /proc/[0-9]*/cmdline; do
    case $(tr '\0' ' ' 2>/dev/null < "$f") in
    *qemu-system*"$TMPDIR/csdvm-"*initrd.cpio*) left="$left ${f%/cmdline}";;
    esac
done
[ -z "$left" ]; result $? "no QEMU left running${left:+ (left:$left)}"
echo "harness: $pass passed, $fail failed"
[ $fail = 0 ]
