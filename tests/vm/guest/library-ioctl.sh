# SPDX-License-Identifier: MIT
# libcsd's integration suite in the guest over ioctl passthrough on the NVM namespace's
# /dev/ngXnY, speaking the vendor commands and then the standard NVMe computational storage
# command sets.
# vm: csd=on slm=64M device=csd.nvme-cs=on timeout=300
. /csd/tests/lib.sh
ng=$(nvm_ng)
CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 || fail "over the vendor commands"
CSD_TEST_DEVICE=$ng CSD_FRONT_END=nvme-cs csd-library-tests --gtest_brief=1 || fail "over the standard commands"
