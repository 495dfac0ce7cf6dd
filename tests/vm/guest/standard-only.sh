# SPDX-License-Identifier: MIT
# The emulated drive with both front ends, opened three ways in the guest: as a drive that
# speaks only the standard (CSD_IGNORE_VENDOR=1, the test aid of docs/real-drives.md: its
# vendor signature and logs ignored, its capabilities read from 82h/83h and a probe), in
# host mode (its programs on the guest's CPU), and as it is; csdctl info says each, and the
# library suite passes on the first two (its Drives tests compare host mode with the
# drive's offload on the same bytes).
# vm: csd=on slm=64M device=csd.nvme-cs=on timeout=580
. /csd/tests/lib.sh
ng=$(nvm_ng)
for how in "CSD_IGNORE_VENDOR=1" "CSD_FRONT_END=host" "CSD_FRONT_END=vendor"; do
    info=$(env $how csdctl -d "$ng" info) || fail "csdctl info ($how): $info"
    echo "== $how"; echo "$info"
done
env CSD_IGNORE_VENDOR=1 csdctl -d "$ng" info | grep -q "^drive speaks   standard" || fail "standard-only: csdctl info"
env CSD_IGNORE_VENDOR=1 csdctl -d "$ng" info | grep -q "^SLM            67108864 bytes (64 MiB, probe)" || fail "standard-only: SLM size probe"
env CSD_IGNORE_VENDOR=1 csdctl -d "$ng" stats | grep -q "^statistics unavailable" || fail "standard-only: stats not unavailable"
CSD_TEST_DEVICE=$ng CSD_IGNORE_VENDOR=1 CSD_FRONT_END=nvme-cs csd-library-tests --gtest_brief=1 || fail "library suite, standard-only"
CSD_TEST_DEVICE=$ng CSD_FRONT_END=host csd-library-tests --gtest_brief=1 || fail "library suite, host mode"
CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 --gtest_filter='Drives.*' || fail "host mode against the vendor offload"
