# SPDX-License-Identifier: MIT
# The drive of another guest over NVMe/TCP: the partner guest (partners/fabric-target.sh)
# exports its CSD controller through nvmet passthrough on 10.99.0.1; this guest reaches it
# over virtio-net whose wire is a QEMU stream netdev on the host's loopback (no slirp, tap or
# bridge), connects with nvme-cli and runs libcsd's suite (ioctl; fabric-loopback.sh also runs
# it over io_uring), csdctl and the Python suite on it.
# vm: csd=on slm=64M alone partner=fabric-target.sh timeout=600
. /csd/tests/lib.sh
fabric_modules
fabric_link 10.99.0.2
ng=$(fabric_connect 10.99.0.1 180 2 csd0101)
fab=$(ctrl_of $ng)
serial=$(tr -d " " < /sys/class/nvme/$fab/serial)
echo "fabric controller $fab ($(cat /sys/class/nvme/$fab/transport) $(cat /sys/class/nvme/$fab/address)), serial $serial, namespace $ng"
[ "$serial" = csd0101 ] || fail "the TCP controller is not the partner guest's drive (serial '$serial')"
rx0=$(cat /sys/class/net/eth0/statistics/rx_bytes)
csdctl -d $ng info || fail "csdctl info over the network"
CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 || fail "libcsd suite against the other guest's drive"
cd /csd/python
CSD_TEST_DEVICE=$ng CSD_TEST_DEVICE_ONLY=1 python3 -m pytest -q -rs -p no:cacheprovider -k "not nvme-cs" tests || fail "Python suite against the other guest's drive"
rx=$(( $(cat /sys/class/net/eth0/statistics/rx_bytes) - rx0 ))
echo "eth0 received $rx bytes from the partner guest during the suites"
[ $rx -gt 1000000 ] || fail "the suites moved only $rx bytes over the link: were they local?"
fabric_disconnect $ng
