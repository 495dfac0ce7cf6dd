# SPDX-License-Identifier: MIT
# A drive the project did not make: QEMU's stock nvme device (csd off) stands for a plain
# SSD. libcsd opens it in host mode (every program runs on the guest's CPU, on the device
# core, over the bytes read from the drive; docs/real-drives.md): csdctl says so, and the
# library suite (its Drives tests compare host mode with a host computation there) and the
# Python suite pass on it, each host-mode skip named. The Python suite's tests that take no
# drive (in-process devices of their own, csdctl's .npy files, the linkage) are python.sh's:
# the same code in the same guest, whatever drive is named; here only those that take one.
# vm: csd=off timeout=580
. /csd/tests/lib.sh
ng=$(nvm_ng)
info=$(csdctl -d "$ng" info) || fail "csdctl info on a plain drive: $info"
echo "$info"
echo "$info" | grep -q "^drive speaks   none (a plain NVMe drive)" || fail "csdctl info does not say the drive speaks none"
echo "$info" | grep -q "0008h  checksum         device-defined   runs on the host" || fail "csdctl info does not list where checksum runs"
check csdctl -d "$ng" format --force  # the tests before it in this guest wrote there
printf 123456789 > /tmp/blob
check csdctl -d "$ng" put blob /tmp/blob
got=$(csdctl -d "$ng" run checksum blob --algo crc32c 2>/tmp/where) || fail "csdctl run checksum: $got"
echo "$got"; cat /tmp/where
[ "$got" = "crc32c blob e3069283" ] || fail "checksum on the host: got '$got', want crc32c blob e3069283"
grep -q "^ran on the host" /tmp/where || fail "csdctl did not say where the checksum ran"
CSD_TEST_DEVICE=$ng CSD_TEST_PLAIN=1 csd-library-tests --gtest_brief=1 || fail "library suite in host mode"
cd /csd/python
CSD_TEST_DEVICE=$ng CSD_TEST_DEVICE_ONLY=1 python3 -m pytest -q -rs -p no:cacheprovider tests || fail "pytest in host mode"
