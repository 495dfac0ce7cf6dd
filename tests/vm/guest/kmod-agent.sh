# SPDX-License-Identifier: MIT
# Agent queues: csd.ko creates an I/O queue pair in the ivshmem peer's BAR (a host file, as
# a GPU's registered memory is on the GPU machine) and the host's CPU agent drives it with
# no MMIO doorbell (QEMU polls the shadow doorbells: agent-poll-us): Reads checked against
# the namespace's host file, SLM Write/Read, Execute, bad SQEs answered with error
# completions; only root may create one; a controller reset with a pair live leaves the
# guest and the drive working.
# vm: csd=on slm=64M peer=4M device=agent-poll-us=20 alone
. /csd/tests/lib.sh
peer=""
for d in /sys/bus/pci/devices/*; do
    [ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1110" ] && peer=$(basename $d)
done
[ -n "$peer" ] || fail "no ivshmem peer device"
mib=1048576
insmod /csd/kmod/csd.ko group=990 p2p_peer=$peer p2p_bar=2 p2p_offset=0 p2p_size=$((4 * mib)) || fail "insmod"
# random bytes in the namespace's first 16 MiB: the host compares the agent's Reads with its file
dd if=/dev/urandom of=/dev/nvme0n1 bs=1M count=16 oflag=direct 2>/dev/null || fail "pattern into the namespace"
# a tenant cannot create one (an agent's commands bypass partitions and allocations)
su -s /bin/sh csduser -c "kmod_check agent /dev/csd0 0 $mib 64 0" > /tmp/out 2>&1 && fail "agent queue by a tenant"
grep -q "FAIL agent queue pair created (errno 1" /tmp/out || { cat /tmp/out; fail "a tenant's agent queue should be EPERM"; }
echo "a tenant's agent queue: EPERM"
kmod_check agent /dev/csd0 0 $mib 64 $((32 * mib)) host:reads,slm,execute,bad,rate,2000 || fail "agent queue pair driven by the host"
# a pair live through a controller reset: the guest recovers the drive, the pair is gone
kmod_check agent /dev/csd0 $mib $mib 32 $((32 * mib)) host:reads reset host:silent || fail "agent queue pair and a reset"
dd if=/dev/nvme0n1 of=/dev/null bs=1M count=4 iflag=direct 2>/dev/null || fail "the namespace after the reset"
kmod_check zero-race /dev/csd0 || fail "csd.ko's own commands after the reset"
rmmod csd || fail "rmmod"
if dmesg | grep -E 'WARNING|BUG|Oops' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "agent queue pairs driven from the host: Reads, SLM Write/Read, Execute, bad SQEs, a reset"
