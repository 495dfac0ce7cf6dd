# SPDX-License-Identifier: MIT
# Agent queues: csd.ko creates an I/O queue pair in the ivshmem peer's BAR (a host file, as
# a GPU's registered memory is on the GPU machine) and the host's CPU agent drives it with
# no MMIO doorbell (QEMU polls the shadow doorbells: agent-poll-us): Reads checked against
# the namespace's host file, SLM Write/Read, Execute, bad SQEs answered with error
# completions; only root may create one; a controller reset, or the namespace detached,
# with a pair live leaves the guest and the drive working.
# vm: csd=on slm=64M peer=4M subsys device=agent-poll-us=20 alone
. /csd/tests/lib.sh
peer=$(peer_device) || fail "no ivshmem peer device"
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
# the namespace detached while a pair is live: the agent's Read gets an error completion;
# attached again, its Reads work
cntlid=$(nvme id-ctrl /dev/nvme0 | sed -n 's/^cntlid *: *//p')
echo "nvme detach-ns /dev/nvme0 -n 1 -c $cntlid" > /tmp/detach.sh
printf 'nvme attach-ns /dev/nvme0 -n 1 -c %s\nsleep 1\n' "$cntlid" > /tmp/attach.sh
kmod_check agent /dev/csd0 $((2 * mib)) $mib 16 $((32 * mib)) host:reads sh:/tmp/detach.sh host:detached \
    sh:/tmp/attach.sh host:reads,slm || fail "agent queue pair and a namespace detached meanwhile"
i=0
until ls /dev/nvme0n* 2>/dev/null | grep -q . || [ $i -ge 50 ]; do nvme ns-rescan /dev/nvme0; sleep 0.2; i=$((i + 1)); done
b=$(ls /dev/nvme0n* 2>/dev/null | head -n 1)
[ -b "$b" ] || fail "the namespace's block device is back"
dd if=$b of=/dev/null bs=1M count=4 iflag=direct 2>/dev/null || fail "the namespace attached again"
# csd.ko keeps the namespace it attached to (ENODEV after a detach, docs/kmod.md): loaded again
rmmod csd || fail "rmmod after the detach"
insmod /csd/kmod/csd.ko group=990 p2p_peer=$peer p2p_bar=2 || fail "insmod after the detach"
kmod_check agent /dev/csd0 0 $mib 16 $((32 * mib)) host:reads || fail "an agent queue pair after the namespace came back"
# a hostile guest's CSD Agent Queue (C8h) straight to the drive: refused, and nothing breaks
c8() {  # c8 EXPECTED-STATUS-HEX ARGS...: the command must fail with that status
    want=$1; shift
    out=$(nvme admin-passthru /dev/nvme0 --opcode=0xc8 "$@" 2>&1) && fail "C8h $* accepted"
    echo "$out" | grep -qi "$want" || { echo "$out"; fail "C8h $*: want status $want"; }
}
c8 0x4101 --cdw10=99                                  # no such queue
c8 0x4002 --cdw10=$((1 | 1 << 16))                    # reserved bits of CDW10: Invalid Field
c8 0x4002 --cdw10=1 --cdw11=1                         # CDW11 is reserved
c8 0x4101 --cdw10=0                                   # the admin queue
c8 0x4002 --cdw10=1 --cdw12=0 --cdw14=4096            # nvme-core's queue 1: interrupts on
dd if=$b of=/dev/null bs=1M count=4 iflag=direct 2>/dev/null || fail "the namespace after the bad C8h"
echo "bad CSD Agent Queue commands: refused"
rmmod csd || fail "rmmod"
if dmesg | grep -E 'WARNING|BUG|Oops' ; then fail "kernel log has a WARN, BUG or oops"; fi
echo "agent queue pairs driven from the host: Reads, SLM Write/Read, Execute, bad SQEs, a reset"
