# SPDX-License-Identifier: MIT
# Partner guest of the two-guest fabric tests: exports its CSD controller (/dev/nvme0) through
# Linux's nvmet passthrough on NVMe/TCP 10.99.0.1:4420, over virtio-net whose wire is a QEMU
# stream netdev to the other guest, and serves until the harness ends it.
. /csd/tests/lib.sh
fabric_modules
fabric_link 10.99.0.1
fabric_export /dev/nvme0 10.99.0.1 1
echo "target ready: /dev/nvme0 ($(cat /sys/class/nvme/nvme0/serial)) on 10.99.0.1:4420"
while :; do sleep 3600; done
