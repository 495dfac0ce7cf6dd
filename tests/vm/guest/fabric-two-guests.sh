# SPDX-License-Identifier: MIT
# The drive of another guest over NVMe/TCP: the partner guest (partners/fabric-target.sh)
# exports its CSD controller through nvmet passthrough on 10.99.0.1; this guest reaches it
# over virtio-net whose wire is a QEMU stream netdev on the host's loopback (no slirp, tap or
# bridge), connects with nvme-cli and runs csdctl, a cross-section of libcsd's suite and of
# the Python suite on it: SLM data both ways at odd offsets and several transfers long,
# statuses, typed and overlapping Executes, the object store, Compare and Write. Both suites
# run whole over NVMe/TCP in fabric-loopback.sh (the same host and target code; only the
# wire differs), where a command costs a third of what it costs across two TCG guests.
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
tests="Library.DetectsTheDevice Library.SlmWriteReadAnyAlignmentAndSize Library.ErrorsNameTheStatus
       Library.TypedProgramsMatchHostComputation Library.AsyncExecutesOverlap
       Store.PutGetListRemoveAndReopen CompareAndWrite.ThreadsOnOneDeviceLoseNoUpdate"
n=$(echo $tests | wc -w)
out=$(CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 --gtest_filter="$(echo $tests | tr ' ' :)" 2>&1) ||
    { echo "$out"; fail "libcsd tests against the other guest's drive"; }
echo "$out" | tail -n 3
# A renamed test would drop out of the filter unnoticed: every one named must have run.
echo "$out" | grep -q "PASSED .*[^0-9]$n tests\?\." || { echo "$out"; fail "not all $n libcsd tests named ran"; }
cd /csd/python
CSD_TEST_DEVICE=$ng CSD_TEST_DEVICE_ONLY=1 python3 -m pytest -q -rs -p no:cacheprovider \
    tests/test_device.py::test_quickstart tests/test_device.py::test_caps_and_programs \
    tests/test_device.py::test_store_mapping tests/test_device.py::test_bad_input_is_a_clear_error_and_device_stays_usable \
    -k "not nvme-cs" || fail "Python tests against the other guest's drive"
rx=$(( $(cat /sys/class/net/eth0/statistics/rx_bytes) - rx0 ))
echo "eth0 received $rx bytes from the partner guest during the tests"
[ $rx -gt 1000000 ] || fail "the tests moved only $rx bytes over the link: were they local?"
fabric_disconnect $ng
