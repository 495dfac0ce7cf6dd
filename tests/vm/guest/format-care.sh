# SPDX-License-Identifier: MIT
# A real drive treated with care (issue 43): on QEMU's stock nvme (csd off: a plain SSD,
# opened in host mode) csdctl writes nothing to the default device it was not told to use,
# and format refuses a namespace holding a GPT (written byte by byte: the guest has no
# sfdisk or sgdisk) or an ext2/3/4 filesystem (busybox mke2fs where the guest has it, else
# its superblock magic), naming it and writing nothing; --force formats over either.
# vm: csd=off
. /csd/tests/lib.sh
ng=$(nvm_ng)
blk=/dev/nvme${ng#/dev/ng}
bs=$(lba_size)
[ "$ng" = /dev/ng0n1 ] || fail "the stock drive is $ng, not csdctl's default /dev/ng0n1"
unset CSD_DEVICE

# Writes /tmp/head (1 MiB) over the drive's first MiB, past the page cache.
put_head() { dd if=/tmp/head of="$blk" bs=1048576 count=1 oflag=direct conv=fsync 2>/dev/null || fail "writing $blk"; }
# The drive's first MiB now, read past the page cache.
get_head() { dd if="$blk" of="$1" bs=1048576 count=1 iflag=direct 2>/dev/null || fail "reading $blk"; }
# Writes printf's bytes $2 into /tmp/head at byte $1.
poke() { printf "$2" | dd of=/tmp/head bs=1 seek="$1" conv=notrunc 2>/dev/null; }

# 1. A plain drive csdctl picked by default: commands that write are refused, nothing written.
dd if=/dev/urandom of=/tmp/head bs=1048576 count=1 2>/dev/null
put_head
printf 123 > /tmp/blob
for cmd in "format" "format --force" "put blob /tmp/blob" "rm blob" "reclaim"; do
    if out=$(csdctl $cmd 2>&1); then fail "csdctl $cmd wrote to the default device: $out"; fi
    rc=$(csdctl $cmd >/dev/null 2>&1; echo $?)
    [ "$rc" = 2 ] || fail "csdctl $cmd: exit $rc, not 2"
    echo "$out" | grep -q "plain NVMe drive" && echo "$out" | grep -q -- "-d /dev/ng0n1" ||
        fail "csdctl $cmd does not say why: $out"
done
get_head /tmp/now
cmp /tmp/head /tmp/now || fail "a refused command wrote to the drive"
csdctl info > /dev/null || fail "csdctl info (reads only) on the default device"
echo "host mode on the default /dev/ng0n1: format, put, rm, reclaim refused without -d; nothing written"

# 2. A GPT: a protective MBR (one entry of type EEh, 55AAh) and 'EFI PART' at LBA 1.
dd if=/dev/zero of=/tmp/head bs=1048576 count=1 2>/dev/null
poke 450 '\356'; poke 454 '\001'; poke 510 '\125\252'
poke "$bs" 'EFI PART'
put_head
if out=$(csdctl -d "$ng" format 2>&1); then fail "format over a GPT: $out"; fi
echo "$out"
echo "$out" | grep -q "GPT partition table (LBA 1 'EFI PART', $bs-byte LBAs)" || fail "the refusal does not name the GPT: $out"
echo "$out" | grep -q -- "csdctl format --force" || fail "the refusal does not name --force: $out"
get_head /tmp/now
cmp /tmp/head /tmp/now || fail "the refused format wrote"
check csdctl -d "$ng" format --force
echo "GPT: refused, named, nothing written; --force formats"

# 3. An ext2/3/4 filesystem.
dd if=/dev/zero of=/tmp/head bs=1048576 count=1 2>/dev/null
if command -v mke2fs > /dev/null; then
    mke2fs -F /tmp/head 1024 > /dev/null 2>&1 || fail "mke2fs"
    how=mke2fs
else
    poke 1080 '\123\357'
    how="its superblock magic"
fi
put_head
if out=$(csdctl -d "$ng" format 2>&1); then fail "format over an ext2/3/4 filesystem ($how): $out"; fi
echo "$out"
echo "$out" | grep -q "ext2/3/4 filesystem (magic EF53h at byte 1080)" || fail "the refusal does not name ext2/3/4: $out"
get_head /tmp/now
cmp /tmp/head /tmp/now || fail "the refused format wrote"
check csdctl -d "$ng" format --force
echo "ext2/3/4 ($how): refused, named, nothing written; --force formats"

# 4. The store itself, and a zeroed drive.
check csdctl -d "$ng" put blob /tmp/blob
if out=$(csdctl -d "$ng" format 2>&1); then fail "format over a store: $out"; fi
echo "$out" | grep -q "holds an object store" || fail "the refusal does not name the store: $out"
[ "$(csdctl -d "$ng" get blob -)" = 123 ] || fail "the store's object after a refused format"
dd if=/dev/zero of="$blk" bs=1048576 count=1 oflag=direct conv=fsync 2>/dev/null
check csdctl -d "$ng" format
echo "a store: refused; a zeroed drive: formatted without --force"
