# SPDX-License-Identifier: MIT
# The drive over NVMe/TCP on the guest's loopback, served by Linux's own target: nvmet
# passthrough of the CSD controller on 127.0.0.1:4420, connected back with nvme-cli; then
# libcsd's suite, csdctl and the Python suite against the fabric namespace's /dev/ngXnY.
# vm: csd=on slm=64M alone timeout=400
. /csd/tests/lib.sh
fabric_modules
fabric_export /dev/nvme0 127.0.0.1 1
ng=$(fabric_connect 127.0.0.1 5 1 csd0001)
fab=$(ctrl_of $ng)
echo "fabric controller $fab ($(cat /sys/class/nvme/$fab/transport) $(cat /sys/class/nvme/$fab/address)), namespace $ng"
csdctl -d $ng info || fail "csdctl info over the fabric"
CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 || fail "libcsd suite over NVMe/TCP"
CSD_TEST_DEVICE=$ng CSD_TEST_URING=1 csd-library-tests --gtest_brief=1 || fail "libcsd suite over NVMe/TCP, io_uring"
cd /csd/python
CSD_TEST_DEVICE=$ng CSD_TEST_DEVICE_ONLY=1 python3 -m pytest -q -rs -p no:cacheprovider -k "not nvme-cs" tests || fail "Python suite over NVMe/TCP"
fabric_disconnect $ng
