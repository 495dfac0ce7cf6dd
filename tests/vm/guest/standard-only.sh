# SPDX-License-Identifier: MIT
# A drive that speaks only the standard: the emulated drive with csd.vendor=off (no CSD1
# signature, no vendor opcodes, no log pages C0h/C1h; docs/real-drives.md), opened as it is
# and in host mode (its programs on the guest's CPU). csdctl info says what it speaks, its
# SLM size comes from a probe and its statistics are unavailable; the library suite passes
# over the standard commands and in host mode. (library-ioctl.sh compares host mode with
# the vendor drive's offload: its Drives tests.)
# vm: csd=on slm=64M device=csd.nvme-cs=on,csd.vendor=off timeout=580
. /csd/tests/lib.sh
ng=$(nvm_ng)
for how in "CSD_FRONT_END=" "CSD_FRONT_END=host"; do
    info=$(env $how csdctl -d "$ng" info) || fail "csdctl info ($how): $info"
    echo "== $how"; echo "$info"
done
csdctl -d "$ng" info | grep -q "^drive speaks   standard" || fail "standard-only: csdctl info"
csdctl -d "$ng" info | grep -q "^SLM            67108864 bytes (64 MiB, probe)" || fail "standard-only: SLM size probe"
csdctl -d "$ng" stats | grep -q "^statistics unavailable" || fail "standard-only: stats not unavailable"
if CSD_FRONT_END=vendor csdctl -d "$ng" info >/dev/null 2>&1; then fail "standard-only: the vendor front end opened"; fi
CSD_TEST_DEVICE=$ng CSD_TEST_STANDARD_ONLY=1 CSD_FRONT_END=nvme-cs csd-library-tests --gtest_brief=1 || fail "library suite, standard-only"
CSD_TEST_DEVICE=$ng CSD_TEST_STANDARD_ONLY=1 CSD_FRONT_END=host csd-library-tests --gtest_brief=1 || fail "library suite, host mode"
