# SPDX-License-Identifier: MIT
# The example operator plug-in (substring_search, 0040h) loaded with csd.plugin-dir:
# listed in C0h with type 2 and run from the guest with nvme-cli, checked against grep.
# vm: csd=on slm=64M plugins
. /csd/tests/lib.sh
csdctl --json programs | grep -q '{"id":64,"name":"substring_search","type":2}' || fail "C0h does not list the plug-in"
# 64 records of 32 bytes: lines of text, NUL-padded
rm -f /tmp/recs
for i in $(seq 0 63); do
    case $((i % 5)) in
        0) line="record $i holds compute" ;;
        1) line="record $i is plain" ;;
        *) line="storage $i computes too" ;;
    esac
    printf '%-32.32s' "$line" | tr ' ' '\0' >> /tmp/recs
done
want=$(for i in $(seq 0 63); do [ $((i % 5)) != 1 ] && echo $i; done | wc -l)
nvme io-passthru /dev/ng0n1 --opcode=0x81 --namespace-id=1 --write \
    --cdw10=0 --cdw12=2048 --data-len=2048 --input-file=/tmp/recs > /dev/null 2>&1 || fail "SLM Write"
le16() { printf "$(printf '\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)))"; }
le32() { le16 $(($1 & 65535)); le16 $(($1 >> 16 & 65535)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
{ printf 'CSDX'; le16 1; le16 0x40; le16 2; le16 0; le32 80
  le64 0; le64 2048; le64 8192; le64 256
  le32 32; le32 64; le32 7; le32 0; printf 'compute'; head -c 57 /dev/zero; } > /tmp/desc
out=$(nvme io-passthru /dev/ng0n1 --opcode=0x85 --namespace-id=1 --write \
    --cdw10=128 --data-len=128 --input-file=/tmp/desc 2>&1) || fail "Execute substring_search: $out"
echo "$out"
echo "$out" | grep -q "result: 0x$(printf %08x $((want * 4)))" || fail "expected $want matches"
got=$(nvme io-passthru /dev/ng0n1 --opcode=0x82 --namespace-id=1 --read --cdw10=8192 \
    --cdw12=$((want * 4)) --data-len=$((want * 4)) --raw-binary 2>/dev/null | od -A n -t u4 -v | tr -s ' ' '\n' | grep -v '^$' | tr '\n' ' ')
exp=$(for i in $(seq 0 63); do [ $((i % 5)) != 1 ] && printf '%s ' $i; done)
[ "$got" = "$exp" ] || fail "indices: got '$got', want '$exp'"
echo "the plug-in found the $want records containing 'compute'"
# The same with the nvme csd plugin: by name, its parameter bytes from a file (a plug-in's
# parameters are its own), and named in program-list as a plug-in.
nvme csd program-list /dev/ng0n1 | grep -q '^0040h  operator plug-in substring_search$' ||
    fail "nvme csd program-list: $(nvme csd program-list /dev/ng0n1)"
{ le32 32; le32 64; le32 7; le32 0; printf 'compute'; head -c 57 /dev/zero; } > /tmp/params
out=$(nvme csd exec /dev/ng0n1 --program=substring_search --ranges=0:2048,16384:256 \
    --params-file=/tmp/params 2>&1) || fail "nvme csd exec substring_search: $out"
[ "$out" = "substring_search: dw0 0x$(printf %08x $((want * 4))) dw1 0x$(printf %08x $want)" ] || fail "nvme csd exec: $out"
[ "$(nvme csd slm-read /dev/ng0n1 --slm-offset=16384 --length=$((want * 4)) -b | od -A n -t u4 -v | tr -s ' ' '\n' | grep -v '^$' | tr '\n' ' ')" = "$exp" ] ||
    fail "nvme csd: indices differ"
if out=$(nvme csd exec /dev/ng0n1 --program=substring_search --ranges=0:2048,16384:256 --count=3 2>&1); then
    fail "a plug-in took --count"
fi
echo "nvme csd exec substring_search: ok"
