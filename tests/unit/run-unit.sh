#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the host-side test programs: device-core GoogleTest suites, libcsd's integration
# suite against the in-process device, the C API test, what libcsd links
# (tests/host/linkage.sh), libcsd-snia's call-by-call test and the SNIA API's usage flow
# (examples/snia/flow.c) on each kind of in-process drive, the fio engine's example jobs
# on the host's fio (tests/host/fio-engine.sh) and the feature matrix's in-process cells
# (tests/matrix/run-host.py). Prints 'unit: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mb="$top/build/meson"
pass=0 fail=0
# libcsd's suites run once per front end: the vendor commands, then the standard ones
# (CSD_FRONT_END=nvme-cs; the in-process device then refuses the vendor data commands);
# the library suite also as a standard-only drive (the in-process device's switch vendor=off:
# CSD_TEST_STANDARD_ONLY=1) and in host mode (programs on the host, docs/real-drives.md).
for run in "$mb/tests/unit/csd-core-tests" "$mb/tests/unit/csd-core-portable-tests" \
           "$mb/tests/unit/csd-crc32c-tests" "$mb/tests/unit/csd-crc32c-portable-tests" \
           "$mb/tests/unit/csd-crc32c-sse42-tests" "$mb/tests/unit/csd-crc32c-table-tests" \
           "$mb/tests/host/csd-library-tests" "$mb/tests/host/csd-library-tests@nvme-cs" \
           "$mb/tests/host/csd-library-tests@standard-only" "$mb/tests/host/csd-library-tests@host" \
           "$mb/tests/host/csd-stream-tests" "$mb/tests/host/csd-stream-tests@nvme-cs" "$mb/tests/host/csd-stream-tests@host" \
           "$mb/tests/host/csd-drive-set-tests" "$mb/tests/host/csd-queue-processor-tests" \
           "$mb/tests/host/csd-catalog-tests" "$mb/tests/host/csd-npy-tests" "$mb/tests/host/csd-c-api-test" "$mb/tests/host/csd-c-api-test@nvme-cs" \
           "$mb/tests/host/csd-snia-test" "$mb/examples/snia/snia-flow@vendor" "$mb/examples/snia/snia-flow@standard-only" \
           "$mb/examples/snia/snia-flow@host" \
           "$top/tests/host/linkage.sh" "$top/tests/host/fio-engine.sh" \
           "$top/tests/host/test_csdctl.py" "$top/tests/matrix/run-host.py" \
           $( [ -x "$mb/tests/gpu/csd-gpu-tests" ] && echo "$mb/tests/gpu/csd-gpu-tests"); do
    bin=${run%@*}
    front_end=$([ "$run" != "$bin" ] && echo "${run#*@}")
    [ -x "$bin" ] || { echo "unit: $bin missing (make build)"; fail=$((fail + 1)); continue; }
    echo "--- $(basename "$bin")${front_end:+ (front end $front_end)}"
    tmp=
    case "$bin" in
        *-test | *.py) args=() ;;
        *.sh) args=("$mb") ;;
        *snia-flow)  # a drive of the kind named: standard-only is the emulator's vendor=off, host CSD_FRONT_END
            tmp=$(mktemp /tmp/csd-snia-flow-XXXXXX)
            args=("emu:$tmp?size=16M&slm=8M$([ "$front_end" = standard-only ] && echo '&nvme-cs=1&vendor=off')") ;;
        *) args=(--gtest_brief=1) ;;
    esac
    std_only=$([ "$front_end" = standard-only ] && echo 1)
    [ "$front_end" = standard-only ] && front_end=nvme-cs
    out=$(CSD_FRONT_END=$front_end CSD_TEST_STANDARD_ONLY=$std_only "$bin" "${args[@]}" 2>&1); rc=$?
    [ -z "$tmp" ] || rm -f "$tmp"
    echo "$out" | grep -v '^\[ *\(RUN\|OK\) *\]\|^ok   '
    # GoogleTest's summary, or the plain closing line of a C test, linkage.sh, test_csdctl.py
    # or the feature matrix's host cells (run-host.py)
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p; s/^\(c-api\|linkage\|csdctl\|snia\|snia-flow\|fio-engine\|matrix-host\): \([0-9]*\) passed.*/\2/p' <<<"$out")
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p; s/^\(c-api\|linkage\|csdctl\|snia\|snia-flow\|fio-engine\|matrix-host\): [0-9]* passed, \([0-9]*\) failed.*/\2/p' <<<"$out")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    [ $rc = 0 ] || [ "${f:-0}" != 0 ] || fail=$((fail + 1))
done
echo "unit: $pass passed, $fail failed"
[ $fail = 0 ]
