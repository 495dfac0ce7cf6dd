# SPDX-License-Identifier: MIT
# A real peer workload: fio writes and verifies (crc32c) through the block device with
# io_uring, and through the generic char device with the io_uring_cmd engine.
# vm: csd=on timeout=300
. /csd/tests/lib.sh

fio --name=blk --filename=/dev/nvme0n1 --ioengine=io_uring --direct=1 --rw=randwrite \
    --bs=4k --size=32M --iodepth=16 --verify=crc32c --do_verify=1 --verify_fatal=1 \
    --randrepeat=0 --output-format=terse --terse-version=3 > /tmp/fio-blk || {
    cat /tmp/fio-blk; fail "fio on /dev/nvme0n1"; }
echo "fio io_uring on /dev/nvme0n1: ok ($(cut -d';' -f7 /tmp/fio-blk) KiB/s written)"

if fio --enghelp 2>/dev/null | grep -q io_uring_cmd; then
    fio --name=cmd --filename=/dev/ng0n1 --ioengine=io_uring_cmd --cmd_type=nvme \
        --rw=randwrite --bs=4k --size=32M --offset=64M --iodepth=16 --verify=crc32c \
        --do_verify=1 --verify_fatal=1 --randrepeat=0 --output-format=terse \
        --terse-version=3 > /tmp/fio-cmd || { cat /tmp/fio-cmd; fail "fio io_uring_cmd on /dev/ng0n1"; }
    echo "fio io_uring_cmd on /dev/ng0n1: ok ($(cut -d';' -f7 /tmp/fio-cmd) KiB/s written)"
else
    echo "this fio has no io_uring_cmd engine; block device run only"
fi
