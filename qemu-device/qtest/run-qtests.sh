#!/usr/bin/env bash
# Runs QEMU's qos-test nvme paths (stock tests and the csd ones from the overlay) against
# build/qemu/qemu-system-x86_64; prints TAP and a closing 'N passed, N failed' line.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
export QTEST_QEMU_BINARY="$top/build/qemu/qemu-system-x86_64"
qos="$top/build/qemu/qos-test"
[ -x "$qos" ] && [ -x "$QTEST_QEMU_BINARY" ] || { echo "qtest: build QEMU first (make qemu)" >&2; exit 1; }

mapfile -t paths < <("$qos" -l 2>/dev/null | grep -E '/(nvme|csd)[-/]' )
[ ${#paths[@]} -gt 0 ] || { echo "qtest: qos-test lists no nvme tests" >&2; exit 1; }
pass=0 fail=0
for p in "${paths[@]}"; do
    out=$(timeout 120 "$qos" --tap -m quick -p "$p" 2>&1)
    rc=$?
    if [ $rc = 0 ] && grep -q '^ok ' <<<"$out" && ! grep -q '^not ok' <<<"$out"; then
        pass=$((pass + 1)); echo "ok $((pass + fail)) $p"
    else
        fail=$((fail + 1)); echo "not ok $((pass + fail)) $p"; sed 's/^/#   /' <<<"$out" | tail -n 30
    fi
done
echo "qtest: $pass passed, $fail failed"
[ $fail = 0 ]
