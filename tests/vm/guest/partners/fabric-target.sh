# Partner guest of the two-guest fabric tests: exports its CSD controller (/dev/nvme0) through
# Linux's nvmet passthrough on NVMe/TCP 10.99.0.1:4420, over virtio-net whose wire is a QEMU
# stream netdev to the other guest, and serves until the harness ends it.
. /csd/tests/lib.sh
fabric_modules
i=0
while [ ! -e /sys/class/net/eth0 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "no eth0 (virtio-net)"; usleep 100000
done
ip addr add 10.99.0.1/24 dev eth0 || fail "address on eth0"
ip link set eth0 up || fail "eth0 up"
fabric_export /dev/nvme0 10.99.0.1 1
echo "target ready: /dev/nvme0 ($(cat /sys/class/nvme/nvme0/serial)) on 10.99.0.1:4420"
while :; do sleep 3600; done
