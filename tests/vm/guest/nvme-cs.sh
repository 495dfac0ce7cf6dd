# The standard front end (csd.nvme-cs=on) from a stock kernel with nvme-cli: the memory
# (NSID 2, CSI 03h) and compute (NSID 3, CSI 04h) namespaces appear as generic char
# devices; Memory Write/Read with io-passthru; a memory range set with admin-passthru;
# Execute Program (copy, 01h) through the set and with inline ranges; activation; the
# range set log. These are docs/nvme-cs.md's recipes, run verbatim.
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
range() {  # range NSID LEN START: one descriptor, little-endian
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24)))"
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($2 & 255)) $(($2 >> 8 & 255)) $(($2 >> 16 & 255)) $(($2 >> 24)))"
    for i in 0 1 2 3 4 5 6 7; do printf "$(printf '\\x%02x' $(($3 >> (8 * i) & 255)))"; done
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
