# SPDX-License-Identifier: MIT
# csd.ko tenants and the programs that read the namespace themselves (gather, embedding_bag,
# a downloaded program's chase): their LBAs come from SLM, which the tenant can rewrite, so
# the module puts the tenant's partition in each Execute as its LBA window (spec section 10)
# and the drive enforces it. Found by an outside review: csdother gathered csduser's bytes.
# Each tenant's LBA N is its own partition's block N; past its partition: LBA Out of Range.
# vm: csd=on slm=64M alone timeout=300
. /csd/tests/lib.sh
insmod /csd/kmod/csd.ko group=990 || fail "insmod csd.ko"
as() { user=$1; shift; su -s /bin/sh "$user" -c "$*"; }
a=$(id -u csduser) b=$(id -u csdother) part=65536
dev=/dev/csd0?slm=4M

# Known bytes at the same partition-relative LBAs in both partitions (root, whole namespace).
mark() {  # mark LBA TEXT
    printf '%s' "$2" | dd of=/dev/nvme0n1 bs=512 seek="$1" conv=sync,notrunc status=none || fail "dd at LBA $1"
}
f32s() {  # f32s LBA VALUE_HEX: four equal f32 at LBA (a one-row table of dim 4)
    printf "$2$2$2$2" | dd of=/dev/nvme0n1 bs=512 seek="$1" conv=sync,notrunc status=none || fail "dd at LBA $1"
}
mark 100 "secret-of-csduser"
mark $((part + 100)) "own-block-of-csdother"
f32s 200 '\x00\x00\x80\x3f'             # 1.0 in csduser's partition
f32s $((part + 200)) '\x00\x00\x00\x40'  # 2.0 in csdother's
sync
echo "uid:$a=0+$part,uid:$b=$part+$part" > /sys/module/csd/parameters/partitions

# gather: csdother's LBA 100 is its own block, never csduser's
as csdother "csdctl -d '$dev' run gather 100:0:21 --out /tmp/g" || fail "csdother's gather of its own LBA 100"
got=$(cat /tmp/g)
echo "csdother gathered its LBA 100: '$got'"
[ "$got" = "own-block-of-csdother" ] || fail "csdother's LBA 100 is not its own block (got '$got')"
as csduser "csdctl -d '$dev' run gather 100:0:17 --out /tmp/u" || fail "csduser's gather"
[ "$(cat /tmp/u)" = "secret-of-csduser" ] || fail "csduser's own LBA 100"
# past its partition: LBA Out of Range, nothing read
out=$(as csdother "csdctl -d '$dev' run gather $part:0:512 --out /tmp/g2" 2>&1) && fail "a gather past the partition succeeded"
echo "$out" | grep -q "LBA Out of Range" || fail "a gather past the partition: not LBA Out of Range ($out)"
echo "gather past the partition: $out"
# an entry far past the partition (another tenant's LBA as an absolute number) likewise
out=$(as csdother "csdctl -d '$dev' run gather 100:0:4 $((2 * part - 1)):0:512 $((part + 100)):0:8 --out /tmp/g3" 2>&1) &&
    fail "a gather reaching past the partition succeeded"
echo "$out" | grep -q "LBA Out of Range" || fail "gather: not LBA Out of Range ($out)"

# embedding_bag: the table at the tenant's LBA 200 is its own
got=$(as csdother "csdctl -d '$dev' run embedding-bag --table-lba 200 --rows 1 --dim 4 --indices 0 --offsets 0") ||
    fail "csdother's embedding_bag"
echo "csdother's embedding_bag of its LBA 200: $got"
[ "$got" = "2 2 2 2" ] || fail "csdother's table at its LBA 200 is not its own (got '$got')"
out=$(as csdother "csdctl -d '$dev' run embedding-bag --table-lba $((part - 1)) --rows 2 --dim 128 --indices 1 --offsets 0" 2>&1) &&
    fail "an embedding_bag table past the partition succeeded"
echo "$out" | grep -q "LBA Out of Range" || fail "embedding_bag past the partition: not LBA Out of Range ($out)"

# chase: a B+-tree csdother builds at its LBA 1000 is looked up there, every hop in its partition
as csdother "csdctl -d '$dev' btree build 1000 --count 100 >/dev/null" || fail "csdother's btree build"
got=$(as csdother "csdctl -d '$dev' btree lookup 1000 42 --program /csd/bpf/btree_lookup.o") || fail "csdother's lookup"
echo "csdother's chase: $got"
case $got in "42 420 "*) ;; *) fail "csdother's B+-tree lookup at its LBA 1000 (got '$got')" ;; esac
out=$(as csdother "csdctl -d '$dev' btree lookup $part 42 --program /csd/bpf/btree_lookup.o" 2>&1) &&
    fail "a chase starting past the partition succeeded"
echo "$out" | grep -q "LBA Out of Range" || fail "chase past the partition: not LBA Out of Range ($out)"

echo "" > /sys/module/csd/parameters/partitions
rmmod csd
echo "media programs through csd.ko read only the tenant's partition, relative to its start"
