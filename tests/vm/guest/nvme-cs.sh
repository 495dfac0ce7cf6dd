# SPDX-License-Identifier: MIT
# The standard front end (csd.nvme-cs=on) from a stock kernel with nvme-cli: the memory
# (NSID 2, CSI 03h) and compute (NSID 3, CSI 04h) namespaces appear as generic char
# devices; Memory Write/Read with io-passthru; a memory range set with admin-passthru;
# Execute Program (copy, 01h) through the set and with inline ranges; activation; the
# range set log; Commands Supported and Effects (05h) per command set. These are
# docs/nvme-cs.md's recipes, run verbatim.
# vm: csd=on slm=64M device=csd.nvme-cs=on
. /csd/tests/lib.sh
cd /tmp

nvme list-ns /dev/nvme0 > ns.txt || fail "nvme list-ns"
grep -q "0x2" ns.txt && grep -q "0x3" ns.txt || { cat ns.txt; fail "NSIDs 2 and 3 not listed"; }
echo "nvme list-ns: $(tr '\n' ' ' < ns.txt)"
nvme ns-descs /dev/nvme0 --namespace-id=2 | tee descs.txt
grep -qiE "csi *: *(0x)?3$" descs.txt || fail "NSID 2 does not report CSI 3"
nvme ns-descs /dev/nvme0 --namespace-id=3 | grep -qiE "csi *: *(0x)?4$" || fail "NSID 3 does not report CSI 4"
# The kernel names char devices in the order it finds namespaces (in parallel), so
# $MEM need not be NSID 2: ask each one (NVME_IOCTL_ID).
# (an if, not "grep && echo": under set -e a last node that is not the one asked for would end the test)
ng_of() { for d in /dev/ng0n*; do if nvme get-ns-id "$d" | grep -q "namespace-id:$1\$"; then echo "$d"; fi; done; }
MEM=$(ng_of 2) CP=$(ng_of 3)
[ -c "$MEM" ] && [ -c "$CP" ] || { ls -l /dev/ng*; fail "no generic char devices for NSIDs 2 and 3"; }
echo "char devices: NSID 2 $MEM, NSID 3 $CP"

# Memory Write (05h) 16 bytes at byte 4096 of the memory namespace, Memory Read (02h) back
printf 'nvme-cs standard' > in.bin
check nvme io-passthru $MEM --opcode=0x05 --namespace-id=2 --cdw10=4096 --cdw12=16 \
    --data-len=16 --write --input-file=in.bin
nvme io-passthru $MEM --opcode=0x02 --namespace-id=2 --cdw10=4096 --cdw12=16 \
    --data-len=16 --read --raw-binary > out.bin || fail "Memory Read"
cmp in.bin out.bin || fail "Memory Read returned other bytes"
echo "Memory Write + Read: $(cat out.bin)"

# Memory Range Set Management (admin 89h), create: two 32-byte descriptors (NSID 2,
# 16 bytes, from byte 4096 / to byte 65536); the new RSID is the result
le32() {  # one little-endian 32-bit value
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24)))"
}
range() {  # range NSID LEN START: one descriptor, little-endian
    le32 $1; le32 $2; le32 $(($3 & 0xffffffff)); le32 $(($3 >> 32))
    head -c 16 /dev/zero
}
{ range 2 16 4096; range 2 16 65536; } > ranges.bin
out=$(nvme admin-passthru /dev/nvme0 --opcode=0x89 --cdw10=0 --cdw11=1 --data-len=64 --write \
    --input-file=ranges.bin 2>&1) || { echo "$out"; fail "Memory Range Set Management"; }
rsid=$(echo "$out" | grep -o 'result: 0x[0-9a-f]*' | cut -d' ' -f2)
echo "range set created: RSID $rsid"
[ -n "$rsid" ] && [ "$((rsid))" -ne 0 ] || fail "no RSID"

# Execute Program (01h, compute namespace): copy (program index 01h) through the set
check nvme io-passthru $CP --opcode=0x01 --namespace-id=3 --cdw2=$((1 | rsid << 16)) --cdw3=2
nvme io-passthru $MEM --opcode=0x02 --namespace-id=2 --cdw10=65536 --cdw12=16 \
    --data-len=16 --read --raw-binary > copy.bin || fail "Memory Read of the copy"
cmp in.bin copy.bin || fail "Execute Program through the range set did not copy"
echo "Execute Program (copy via RSID $rsid): ok"

# deactivated (admin 88h, bit 16), it does not run: Program Not Activated (SCT 1h, 98h)
check nvme admin-passthru /dev/nvme0 --opcode=0x88 --cdw10=$((1 | 1 << 16))
if out=$(nvme io-passthru $CP --opcode=0x01 --namespace-id=3 --cdw2=$((1 | rsid << 16)) --cdw3=2 2>&1); then
    fail "a deactivated program ran"
fi
echo "$out" | grep -qi "0x[4]*198\|PROGRAM_NOT_ACTIVATED\|not activated" || { echo "$out"; fail "not Program Not Activated"; }
check nvme admin-passthru /dev/nvme0 --opcode=0x88 --cdw10=1
echo "deactivated: refused; activated again"

# inline ranges: the two descriptors are the data; Linux cannot set CDW4, so CDW15 = 64
{ range 2 16 4096; range 2 16 131072; } > inline.bin
check nvme io-passthru $CP --opcode=0x01 --namespace-id=3 --cdw2=1 --cdw3=2 --cdw15=64 \
    --data-len=64 --write --input-file=inline.bin
nvme io-passthru $MEM --opcode=0x02 --namespace-id=2 --cdw10=131072 --cdw12=16 \
    --data-len=16 --read --raw-binary > copy2.bin || fail "Memory Read of the second copy"
cmp in.bin copy2.bin || fail "Execute Program with inline ranges did not copy"
echo "Execute Program (inline ranges): ok"

# log 84h (Memory Range Set List): one set, its RSID
nvme get-log /dev/nvme0 --log-id=0x84 --log-len=128 --raw-binary > log84.bin || fail "get-log 84h"
[ "$(od -An -tu4 -N4 log84.bin | tr -d ' ')" = 1 ] || fail "log 84h does not hold one set"
[ "$(od -An -tu2 -j8 -N2 log84.bin | tr -d ' ')" = "$((rsid))" ] || fail "log 84h: another RSID"
echo "log 84h: 1 set, RSID $((rsid))"
check nvme admin-passthru /dev/nvme0 --opcode=0x89 --cdw10=$((1 | rsid << 16))
echo "range set deleted"

# Memory Copy (01h, format 2h): 8 LBAs of the NVM namespace into memory; Copy (19h) with
# the memory source format 4h: memory back to other LBAs. The 32-byte source descriptor
# of format 2h: SNSID, 4 reserved, SLBA, NLB (0's based), 14 reserved.
blk=/dev/nvme$(nvm_ng | cut -c8-)   # the NVM namespace's block device
head -c 4096 /dev/urandom > lbas.bin
dd if=lbas.bin of=$blk bs=4096 seek=100 oflag=direct 2>/dev/null || fail "write LBAs 800-807"
{ le32 1; le32 0; le32 800; le32 0; printf '\007\000'; head -c 14 /dev/zero; } > src.bin
check nvme io-passthru $MEM --opcode=0x01 --namespace-id=2 --cdw10=262144 --cdw12=0x200 \
    --data-len=32 --write --input-file=src.bin
nvme io-passthru $MEM --opcode=0x02 --namespace-id=2 --cdw10=262144 --cdw12=4096 \
    --data-len=4096 --read --raw-binary > mem.bin || fail "Memory Read after Memory Copy"
cmp lbas.bin mem.bin || fail "Memory Copy did not bring the LBAs' bytes"
echo "Memory Copy (format 2h): LBAs 800-807 -> memory 262144: same bytes"
{ range 2 4096 262144; } > mr.bin
check nvme io-passthru $(nvm_ng) --opcode=0x19 --namespace-id=1 --cdw10=1600 --cdw12=0x400 \
    --data-len=32 --write --input-file=mr.bin
dd if=$blk of=lbas2.bin bs=4096 skip=200 count=1 iflag=direct 2>/dev/null || fail "read LBAs 1600-1607"
cmp lbas.bin lbas2.bin || fail "Copy format 4h did not write memory's bytes"
echo "Copy (format 4h): memory 262144 -> LBAs 1600-1607: same bytes"

# logs 1Ah / 1Bh: one reachability group holding NSIDs 1, 2, 3; one association of it
nvme get-log /dev/nvme0 --log-id=0x1a --log-len=60 --raw-binary > log1a.bin || fail "get-log 1Ah"
[ "$(od -An -tu4 -j16 -N8 log1a.bin | tr -s ' ')" = " 1 3" ] || { od -An -tx1 log1a.bin; fail "log 1Ah: not group 1 of 3 NSIDs"; }
[ "$(od -An -tu4 -j48 -N12 log1a.bin | tr -s ' ')" = " 1 2 3" ] || fail "log 1Ah: not NSIDs 1, 2, 3"
nvme get-log /dev/nvme0 --log-id=0x1b --log-len=52 --raw-binary > log1b.bin || fail "get-log 1Bh"
[ "$(od -An -tu4 -j48 -N4 log1b.bin | tr -d ' ')" = 1 ] || fail "log 1Bh: association without group 1"
echo "logs 1Ah/1Bh: group 1 = NSIDs 1 2 3, association 1 = group 1"

# Commands Supported and Effects (05h) per command set: a raw Get Log Page with the CSI in
# CDW14 bits 31:24. The memory set lists Memory Copy, Fill and Write as supported and
# changing contents (3: CSUPP | LBCC), Memory Read as supported (1); the compute set lists
# Execute Program (3); other opcodes of either set: 0. (The kernel reads this log per
# command set: unprivileged passthrough may send only the commands it lists.)
effects() {  # effects CSI: the log's I/O command part as one dword per line
    nvme admin-passthru /dev/nvme0 --opcode=0x02 --cdw10=$((5 | 1023 << 16)) --cdw14=$(($1 << 24)) \
        --data-len=4096 --read --raw-binary > eff$1.bin || fail "Get Log Page 05h with CSI $1"
    od -An -v -tu4 -j1024 -N1024 eff$1.bin | tr -s ' ' '\n' | sed '/^$/d'
}
effects 3 > eff3.txt
effects 4 > eff4.txt
effect_is() {  # effect_is CSI OPCODE WANT
    got=$(sed -n "$(($2 + 1))p" eff$1.txt)
    [ "$got" = "$3" ] || fail "log 05h, CSI $1: opcode $2 has effects $got, not $3"
}
effect_is 3 1 3; effect_is 3 2 1; effect_is 3 4 3; effect_is 3 5 3; effect_is 3 0 0; effect_is 3 25 0
effect_is 4 1 3; effect_is 4 2 0
[ "$(sort -u eff3.txt | tr '\n' ' ')" = "0 1 3 " ] && [ "$(grep -c -v '^0$' eff4.txt)" = 1 ] \
    || fail "log 05h lists other commands"
echo "log 05h: CSI 03h Memory Copy/Fill/Write (CSUPP|LBCC), Read (CSUPP); CSI 04h Execute Program (CSUPP|LBCC)"

# csdctl says which front ends the drive speaks and which it uses; a store put, a program
# run and a get over the standard commands alone (--front-end nvme-cs)
ng=$(nvm_ng)
info=$(csdctl -d $ng info) || fail "csdctl info"
{ echo "$info" | grep -q "^drive speaks *vendor (vendor, nvme-cs (memory namespace 2, compute namespace 3))" &&
  echo "$info" | grep -q "^front end *vendor$"; } \
    || { echo "$info"; fail "csdctl info does not say what the drive speaks"; }
csdctl -d $ng --front-end nvme-cs info | grep -q "^front end *nvme-cs$" || fail "csdctl --front-end nvme-cs info"
head -c 100000 /dev/urandom > blob.bin
CSD_FRONT_END=nvme-cs csdctl -d $ng format --force > /dev/null || fail "format over the standard commands"
CSD_FRONT_END=nvme-cs csdctl -d $ng put blob blob.bin > /dev/null || fail "put over the standard commands"
sum=$(CSD_FRONT_END=nvme-cs csdctl -d $ng run checksum blob) || fail "checksum over the standard commands"
csdctl -d $ng get blob back.bin > /dev/null || fail "get over the vendor commands"
cmp blob.bin back.bin || fail "the object put over the standard commands came back other"
[ "$sum" = "$(csdctl -d $ng run checksum blob)" ] || fail "checksums differ between the front ends"
echo "csdctl over the standard commands: info, format, put, run checksum ($sum); get over the vendor ones: same bytes"
