# The drive over NVMe/TCP on the guest's loopback, served by Linux's own target: nvmet
# passthrough of the CSD controller on 127.0.0.1:4420, connected back with nvme-cli; then
# libcsd's suite, csdctl and the Python suite against the fabric namespace's /dev/ngXnY.
# vm: csd=on slm=64M alone timeout=400
. /csd/tests/lib.sh
for m in configfs nvmet nvmet-tcp nvme-fabrics nvme-tcp; do
    insmod /modules/$m.ko || fail "insmod $m"
done
grep -q " /sys/kernel/config " /proc/mounts || mount -t configfs none /sys/kernel/config || fail "mount configfs"
ip link set lo up || fail "loopback up"
cfg=/sys/kernel/config/nvmet
sub=$cfg/subsystems/nqn.2026-11.io.nvme-csd:fabric
mkdir $sub || fail "nvmet subsystem"
echo 1 > $sub/attr_allow_any_host
echo -n /dev/nvme0 > $sub/passthru/device_path || fail "passthru device_path"
echo 1 > $sub/passthru/enable || fail "passthru enable"
mkdir $cfg/ports/1
echo tcp > $cfg/ports/1/addr_trtype
echo ipv4 > $cfg/ports/1/addr_adrfam
echo 127.0.0.1 > $cfg/ports/1/addr_traddr
echo 4420 > $cfg/ports/1/addr_trsvcid
ln -s $sub $cfg/ports/1/subsystems/ || fail "nvmet port"
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n nqn.2026-11.io.nvme-csd:fabric \
    --hostnqn=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001 \
    --hostid=00000000-0000-4000-8000-000000000001 \
    || { dmesg | tail -15; fail "nvme connect"; }
# the fabric controller (transport tcp) and its namespace's nodes, once the scan made them
fab="" ng=""
for i in $(seq 30); do
    for c in /sys/class/nvme/nvme*; do
        if [ "$(cat $c/transport)" = tcp ]; then fab=$(basename $c); fi
    done
    for b in /dev/${fab:-none}n*; do
        if [ -b "$b" ]; then ng=/dev/ng${b#/dev/nvme}; fi
    done
    if [ -c "$ng" ]; then break; fi
    sleep 1
done
[ -n "$fab" ] || fail "no NVMe/TCP controller"
[ -c "$ng" ] || { ls -l /dev/ng* /dev/nvme*; fail "no namespace node on the fabric controller $fab"; }
echo "fabric controller $fab ($(cat /sys/class/nvme/$fab/transport) $(cat /sys/class/nvme/$fab/address)), namespace $ng"
csdctl -d $ng info || fail "csdctl info over the fabric"
CSD_TEST_DEVICE=$ng csd-library-tests --gtest_brief=1 || fail "libcsd suite over NVMe/TCP"
CSD_TEST_DEVICE=$ng CSD_TEST_URING=1 csd-library-tests --gtest_brief=1 || fail "libcsd suite over NVMe/TCP, io_uring"
cd /csd/python
CSD_TEST_DEVICE=$ng python3 -m pytest -q -rs -p no:cacheprovider -k "not nvme-cs" tests || fail "Python suite over NVMe/TCP"
nvme disconnect -d $fab > /dev/null || fail "nvme disconnect"
