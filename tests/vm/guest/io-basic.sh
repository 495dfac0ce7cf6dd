# SPDX-License-Identifier: MIT
# Stock NVMe I/O: the guest sees controller and namespace; block device and passthrough
# agree byte for byte; flushed data reaches the backing file on the host.
# vm: csd=off
# vm: csd=on
. /csd/tests/lib.sh

nvme id-ctrl /dev/nvme0 > /tmp/id-ctrl || fail "nvme id-ctrl failed"
grep -Eq '^sn +: csd0001' /tmp/id-ctrl || fail "serial csd0001 not in id-ctrl"
nvme list | grep -q '/dev/nvme0n1' || fail "namespace missing from nvme list"
[ -c /dev/ng0n1 ] || fail "/dev/ng0n1 (generic char device) missing"

bs=$(lba_size)
nlb=$((65536 / bs))                 # 64 KiB per transfer
slba=$((1048576 / bs))              # at 1 MiB

# block device -> passthrough Read (opcode 02h)
dd if=/dev/urandom of=/tmp/a bs=65536 count=1 2>/dev/null
dd if=/tmp/a of=/dev/nvme0n1 bs=65536 seek=16 oflag=direct conv=fsync 2>/dev/null
nvme io-passthru /dev/ng0n1 --opcode=0x02 --namespace-id=1 --data-len=65536 --read \
    --cdw10=$slba --cdw11=0 --cdw12=$((nlb - 1)) --raw-binary > /tmp/b || fail "passthru read"
cmp /tmp/a /tmp/b || fail "passthru read differs from block write"

# passthrough Write (opcode 01h) -> block device
dd if=/dev/urandom of=/tmp/c bs=65536 count=1 2>/dev/null
nvme io-passthru /dev/ng0n1 --opcode=0x01 --namespace-id=1 --data-len=65536 --write \
    --cdw10=$((slba + nlb)) --cdw11=0 --cdw12=$((nlb - 1)) --input-file=/tmp/c > /dev/null \
    || fail "passthru write"
dd if=/dev/nvme0n1 of=/tmp/d bs=65536 skip=17 count=1 iflag=direct 2>/dev/null
cmp /tmp/c /tmp/d || fail "block read differs from passthru write"

# Flush, then the host reads the backing file while the guest still runs.
nvme flush /dev/nvme0n1 --namespace-id=1 > /dev/null || fail "nvme flush"
sum=$(cat /tmp/a /tmp/c | sha256sum | cut -d' ' -f1)
host_check backing-file 1048576 131072 "$sum"
echo "block and passthrough agree; backing file holds the flushed bytes"
