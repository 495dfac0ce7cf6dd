#!/busybox/sh
# SPDX-License-Identifier: MIT
# /init of the nvme-csd guest: mounts the read-only /usr image, then runs /csd/main from
# the per-run archive (tests or one command) or, without one, an interactive shell.
export PATH=/csd/bin:/usr/sbin:/usr/bin:/busybox
export HOME=/root TERM=${TERM:-linux}
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts
hostname -F /etc/hostname

insmod /modules/virtio_blk.ko
i=0
while [ ! -b /dev/vda ] && [ $i -lt 500 ]; do usleep 10000; i=$((i + 1)); done
if ! mount -t ext4 -o ro /dev/vda /usr; then
    echo "@@CSD FATAL cannot mount the /usr image (/dev/vda)"
    poweroff -f
fi
export LD_LIBRARY_PATH=/csd/lib PYTHONPATH=/csd/python PYTHONDONTWRITEBYTECODE=1 CSD_BPF_DIR=/csd/bpf

# Settings from the host (CSD_* variables), then the job.
[ -f /csd/env ] && . /csd/env
cd /csd 2>/dev/null || cd /
if [ -x /csd/main ]; then
    /csd/main
    echo "@@CSD EXIT $?"
else
    echo "nvme-csd guest: $(uname -r); type 'poweroff -f' (or Ctrl-a x) to leave"
    setsid cttyhack sh -l
fi
sync
poweroff -f
