#!/usr/bin/env bash
# Runs the device-core GoogleTest binaries; prints 'unit: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
for t in csd-core-tests csd-core-portable-tests; do
    bin="$top/build/meson/tests/unit/$t"
    [ -x "$bin" ] || { echo "unit: $bin missing (make build)"; fail=$((fail + 1)); continue; }
    out=$("$bin" --gtest_brief=1 2>&1); rc=$?
    echo "$out" | grep -v '^\[ *\(RUN\|OK\) *\]'
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' <<<"$out")
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' <<<"$out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    [ $rc = 0 ] || [ -n "$f" ] || fail=$((fail + 1))
done
echo "unit: $pass passed, $fail failed"
[ $fail = 0 ]
