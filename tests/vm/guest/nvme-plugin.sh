# SPDX-License-Identifier: MIT
# `nvme csd ...` (host/nvme-cli-plugin), the nvme-cli plugin staged as the guest's nvme:
# every command against the raw `nvme io-passthru` form or a known answer, the CSD status
# names in its errors (stock nvme-cli prints "unrecognized(0x41c0)"), and -o json.
# vm: csd=on slm=64M timeout=300
. /csd/tests/lib.sh
ng=$(nvm_ng)
[ "$(command -v nvme)" = /csd/bin/nvme ] || fail "the guest's nvme is $(command -v nvme), not the staged /csd/bin/nvme"
nvme csd version > /dev/null 2>&1 || fail "nvme has no csd plugin: $(nvme csd version 2>&1 | head -n 1)"

# json FILE EXPR: evaluates a Python expression over the JSON object j read from FILE.
json() { python3 -c "import json,sys; j = json.load(open(sys.argv[1])); print($2)" "$1"; }
# Little-endian fields (as docs/command-set.md writes them from the shell).
le16() { printf "$(printf '\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)))"; }
le32() { le16 $(($1 & 65535)); le16 $(($1 >> 16 & 65535)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
# f32s X...: the floats' bytes; unpack FMT: stdin's bytes as struct FMT, printed by Python
f32s() { python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<%df' % (len(sys.argv) - 1), *map(float, sys.argv[1:])))" "$@"; }
unpack() { python3 -c "import struct,sys; print(*struct.unpack(sys.argv[1], sys.stdin.buffer.read()))" "$1"; }

# ---------------------------------------------------------------- info, program-list
check nvme csd info /dev/nvme0
echo "$out"
echo "$out" | grep -q '^version  *1\.1$' || fail "info: no version 1.1"
echo "$out" | grep -q '^0008h  device-defined   checksum$' || fail "info: no checksum program"
nvme csd info "$ng" -o json > /tmp/info.json || fail "info -o json"
[ "$(json /tmp/info.json 'j["slm_size"]')" = "$(csdctl --json info | python3 -c 'import json,sys; print(json.load(sys.stdin)["slm_size"])')" ] ||
    fail "info -o json: slm_size differs from csdctl's"
[ "$(json /tmp/info.json '[p["name"] for p in j["programs"]][1]')" = gemm ] || fail "info -o json: programs"
nvme csd info "$ng" -b > /tmp/c0.plugin && nvme get-log /dev/nvme0 --log-id=0xc0 --log-len=4096 -b > /tmp/c0.raw &&
    cmp /tmp/c0.plugin /tmp/c0.raw || fail "info -b is not log page C0h"
echo "info: ok"

# ---------------------------------------------------------------- slm-write, slm-read
head -c 64 /dev/zero | tr '\0' 'x' > /tmp/xs
check nvme csd slm-write "$ng" --slm-offset=4096 --data=/tmp/xs
printf '123456789' > /tmp/digits
check nvme csd slm-write "$ng" --slm-offset=4101 --data=/tmp/digits   # unaligned start and end
[ "$out" = "wrote 9 bytes to SLM offset 4101" ] || fail "slm-write said: $out"
got=$(nvme io-passthru "$ng" --opcode=0x82 --namespace-id=1 --read --cdw10=4096 --cdw12=20 \
        --data-len=20 --raw-binary 2>/dev/null)
[ "$got" = "xxxxx123456789xxxxxx" ] || fail "SLM after an unaligned slm-write: '$got'"
[ "$(nvme csd slm-read "$ng" --slm-offset=4101 --length=9 -b)" = 123456789 ] || fail "slm-read -b"
nvme csd slm-read "$ng" --slm-offset=4101 --length=9 --data=/tmp/back > /dev/null && cmp /tmp/back /tmp/digits ||
    fail "slm-read --data"
nvme csd slm-read "$ng" --slm-offset=4101 --length=3 -o json > /tmp/r.json || fail "slm-read -o json"
[ "$(json /tmp/r.json 'j["data"]')" = 313233 ] || fail "slm-read -o json: $(cat /tmp/r.json)"
# --length takes the first bytes of the input only
printf 'abcdefghijklmnopqrst' > /tmp/letters
check nvme csd slm-write "$ng" --slm-offset=4096 --length=3 --data=/tmp/letters
[ "$out" = "wrote 3 bytes to SLM offset 4096" ] || fail "slm-write --length: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=4096 --length=6 -b)" = abcxx1 ] || fail "slm-write --length wrote more"
# stdin, and more than one transfer (MDTS): 1 MiB + 4 bytes
head -c 1048580 /dev/urandom > /tmp/big
nvme csd slm-write "$ng" --slm-offset=8388608 < /tmp/big > /dev/null || fail "slm-write from stdin"
nvme csd slm-read "$ng" --slm-offset=8388608 --length=1048580 -b | cmp - /tmp/big || fail "1 MiB round trip"
echo "slm-write, slm-read: ok"

# ---------------------------------------------------------------- exec
check nvme csd exec "$ng" --program=checksum --ranges=4101:9 --algo=crc32c
[ "$out" = "checksum: dw0 0xe3069283 dw1 0x00000000" ] || fail "checksum: $out"
# the same Execute by hand (the descriptor docs/command-set.md builds with printf)
desc() { printf 'CSDX'; le16 1; le16 $1; le16 $2; le16 0; le32 $3; }
{ desc 8 1 4; le64 4101; le64 9; le32 0; } > /tmp/desc
nvme io-passthru "$ng" --opcode=0x85 --namespace-id=1 --write --cdw10=36 --data-len=36 \
    --input-file=/tmp/desc 2>&1 | grep -q 'result: 0xe3069283' || fail "raw checksum"
# xxh64 by program id, -o json; the raw form's DW0 is the low half of the 64-bit result
nvme csd exec "$ng" -p 8 -r 4101:9 --algo=xxh64 -o json > /tmp/x.json || fail "checksum by id"
{ desc 8 1 4; le64 4101; le64 9; le32 1; } > /tmp/desc
raw=$(nvme io-passthru "$ng" --opcode=0x85 --namespace-id=1 --write --cdw10=36 --data-len=36 \
    --input-file=/tmp/desc 2>&1 | sed -n 's/.*result: \(0x[0-9a-f]*\).*/\1/p')
[ "$(json /tmp/x.json '"0x%08x" % j["dw0"]')" = "$raw" ] &&
[ "$(json /tmp/x.json 'j["result"] == j["dw0"] | j["dw1"] << 32')" = True ] || fail "xxh64: $(cat /tmp/x.json), raw DW0 $raw"
# gemm of two 2x2 matrices
f32s 1 2 3 4 5 6 7 8 | nvme csd slm-write "$ng" --slm-offset=0 > /dev/null || fail "gemm inputs"
check nvme csd exec "$ng" --program=gemm --ranges=0:16,16:16,32:16 --m=2 --n=2 --k=2
[ "$out" = "gemm: dw0 0x00000010 dw1 0x00000000" ] || fail "gemm: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=32 --length=16 -b | unpack '<4f')" = "19.0 22.0 43.0 50.0" ] ||
    fail "gemm result"
# elementwise axpb in place, then reduce (f32 sum of the row, an f64)
check nvme csd exec "$ng" --program=elementwise --ranges=32:16,32:16 --op=axpb --count=4 --a=2 --b=1
check nvme csd exec "$ng" --program=reduce --ranges=32:16,48:8 --op=sum --dtype=f32 --cols=4
[ "$(nvme csd slm-read "$ng" --slm-offset=48 --length=8 -b | unpack '<d')" = 272.0 ] ||
    fail "elementwise + reduce: $(nvme csd slm-read "$ng" --slm-offset=48 --length=8 -b | unpack '<d')"
# filter: records of 8 bytes (i32 key, pad), keys 5, 50, 500, -7: indices of those > 40
{ for k in 5 50 500 -7; do le32 $((k & 0xffffffff)); le32 0; done; } > /tmp/recs
nvme csd slm-write "$ng" --slm-offset=8192 --data=/tmp/recs > /dev/null || fail "filter records"
check nvme csd exec "$ng" --program=filter --ranges=8192:32,12288:16 --record-size=8 --count=4 \
    --type=i32 --op=gt --lo=40 --indices
[ "$out" = "filter: dw0 0x00000008 dw1 0x00000002" ] || fail "filter: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=12288 --length=8 -b | unpack '<2I')" = "1 2" ] ||
    fail "filter indices"
# the other programs, each by its options: copy, softmax, convert, conv2d, decompress
check nvme csd exec "$ng" --program=copy --ranges=4101:9,20480:12
[ "$out" = "copy: dw0 0x00000009 dw1 0x00000000" ] || fail "copy: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=20480 --length=9 -b)" = 123456789 ] || fail "copy result"
check nvme csd exec "$ng" --program=softmax --ranges=0:16,64:16 --rows=1 --cols=4
[ "$out" = "softmax: dw0 0x00000010 dw1 0x00000000" ] || fail "softmax: $out"
check nvme csd exec "$ng" --program=convert --ranges=0:16,80:8 --op=f32_f16 --count=4
[ "$out" = "convert: dw0 0x00000008 dw1 0x00000000" ] || fail "convert: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=80 --length=8 -b | od -A n -t x2 | tr -s ' ')" = " 3c00 4000 4200 4400" ] ||
    fail "convert result (f16 1, 2, 3, 4)"
# conv2d: the 1x1x2x2 input 1, 2, 3, 4 (SLM 0) times a 1x1 filter 5 (SLM 16), no bias
check nvme csd exec "$ng" --program=conv2d --ranges=0:16,16:4,0:0,96:16 --channels=1 --height=2 \
    --width=2 --filters=1 --kernel-h=1 --kernel-w=1
[ "$out" = "conv2d: dw0 0x00000010 dw1 0x00000000" ] || fail "conv2d: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=96 --length=16 -b | unpack '<4f')" = "5.0 10.0 15.0 20.0" ] || fail "conv2d result"
printf 'hello, drive' | zstd -q -c > /tmp/z
zlen=$(stat -c %s /tmp/z)
nvme csd slm-write "$ng" --slm-offset=24576 --data=/tmp/z > /dev/null || fail "zstd frame"
check nvme csd exec "$ng" --program=decompress --ranges=24576:$zlen,28672:64 --algo=zstd
[ "$out" = "decompress: dw0 0x0000000c dw1 0x00000000" ] || fail "decompress: $out"
[ "$(nvme csd slm-read "$ng" --slm-offset=28672 --length=12 -b)" = "hello, drive" ] || fail "decompress result"
# Output Overflow: the detail says what was needed
if out=$(nvme csd exec "$ng" --program=filter --ranges=8192:32,12288:4 --record-size=8 --count=4 \
        --type=i32 --op=gt --lo=40 --indices 2>&1); then fail "filter into 4 bytes succeeded"; fi
echo "$out"
echo "$out" | grep -q 'NVMe status: Output Overflow (0x41c4): filter: output range too small (DW0 8: bytes needed, DW1 2)' ||
    fail "Output Overflow not named: $out"
echo "exec: ok"

# ---------------------------------------------------------------- errors in words
if out=$(nvme csd exec "$ng" --program=0x42 --ranges=0:16 2>&1); then fail "program 42h ran"; fi
[ "$out" = "csd exec: NVMe status: Invalid Program (0x41c0): 0042h" ] || fail "unknown program: $out"
raw=$(nvme io-passthru "$ng" --opcode=0x8c --namespace-id=1 --cdw10=0x1ff 2>&1 || true)
echo "stock nvme-cli says: $raw"
if out=$(nvme csd program-unload "$ng" --slot=0x1ff 2>&1); then fail "unloading an empty slot succeeded"; fi
[ "$out" = "csd program-unload: NVMe status: Invalid Program (0x41c0): slot 0x01ff" ] || fail "empty slot: $out"
if nvme csd exec "$ng" --program=0x42 --ranges=0:16 -o json > /tmp/e.json; then fail "program 42h ran (json)"; fi
[ "$(json /tmp/e.json 'j["status"], j["status_name"], j["dnr"]')" = "16832 Invalid Program True" ] ||
    fail "json error: $(cat /tmp/e.json)"
if out=$(nvme csd slm-read "$ng" --slm-offset=67108860 --length=8 2>&1); then fail "read past SLM succeeded"; fi
echo "$out" | grep -q 'SLM Range Out of Bounds (0x41c2)' || fail "out of bounds: $out"
if out=$(nvme csd exec "$ng" --program=checksum --ranges=0:4 --algo=crc32c --m=3 2>&1); then fail "--m taken by checksum"; fi
[ "$out" = "csd exec: --m does not apply to checksum (it takes: algo )" ] || fail "foreign option: $out"
if out=$(nvme csd exec "$ng" --program=reduce --ranges=0:4,8:8 --op=median --dtype=f32 --cols=1 2>&1); then fail "median"; fi
[ "$out" = "csd exec: --op median is none of sum, min, max, mean, argmax, argmin" ] || fail "bad op: $out"
if out=$(nvme csd exec "$ng" --program=nosuch --ranges=0:4 2>&1); then fail "nosuch ran"; fi
echo "$out" | grep -q "the device has no program named 'nosuch'" || fail "unknown name: $out"
if out=$(nvme csd info /dev/nvme0 -o yaml 2>&1); then fail "-o yaml accepted"; fi
echo "errors: ok"

# ---------------------------------------------------------------- slm-load, slm-store
lbs=$(lba_size)
yes 'nvme-csd' | head -c $((2 * lbs)) > /tmp/blocks
dd if=/tmp/blocks of=/dev/nvme0n1 bs="$lbs" seek=8 oflag=direct 2>/dev/null || fail "dd"
check nvme csd slm-load "$ng" --start-block=8 --block-count=1 --slm-offset=1048576
[ "$out" = "loaded 2 blocks from block 8 into SLM offset 1048576" ] || fail "slm-load: $out"
nvme csd slm-read "$ng" --slm-offset=1048576 --length=$((2 * lbs)) -b | cmp - /tmp/blocks || fail "slm-load data"
check nvme csd slm-store "$ng" --start-block=100 --block-count=1 --slm-offset=1048576
dd if=/dev/nvme0n1 bs="$lbs" skip=100 count=2 iflag=direct 2>/dev/null | cmp - /tmp/blocks || fail "slm-store data"
if out=$(nvme csd slm-load "$ng" --start-block=$((1 << 40)) --block-count=0 --slm-offset=0 2>&1); then fail "load past the end"; fi
echo "$out" | grep -q 'LBA Out of Range' || fail "slm-load past the end: $out"
echo "slm-load, slm-store: ok"

# ---------------------------------------------------------------- programs of your own
check nvme csd program-load "$ng" --file=/csd/bpf/threshold.o --record-size=8
echo "$out"
slot=$(echo "$out" | sed -n 's/.*into slot \(0x[0-9a-f]*\)$/\1/p')
[ -n "$slot" ] || fail "program-load printed no slot: $out"
nvme csd program-list "$ng" | grep -q "^${slot#0x}h  downloaded       threshold$" || fail "program-list: $(nvme csd program-list "$ng")"
check nvme csd exec "$ng" --program=threshold --ranges=8192:32,16384:32 --count=4 --mode=filter --param=40
[ "$out" = "threshold: dw0 0x00000010 dw1 0x00000002" ] || fail "threshold filter: $out"
check nvme csd exec "$ng" --program=threshold --ranges=8192:32,0:0 --count=4 --mode=reduce --param=40
[ "$out" = "threshold: dw0 0x00000002 dw1 0x00000000" ] || fail "threshold reduce: $out"
nvme csd stats "$ng" | grep -q "^exec threshold  *[1-9]" || fail "stats: a loaded program's Executes by name"
check nvme csd program-unload "$ng" --slot="$slot"
[ "$out" = "unloaded slot $slot" ] || fail "program-unload: $out"
if out=$(nvme csd program-load "$ng" --file=/csd/bpf/loop.o --record-size=16 2>&1); then fail "loop.o loaded"; fi
echo "$out"
echo "$out" | grep -q 'NVMe status: Invalid Program Image (0x41c6): /csd/bpf/loop.o: the device refused instruction [0-9]' ||
    fail "loop.o: $out"
echo "programs: ok"

# ---------------------------------------------------------------- stats
nvme csd stats "$ng" -o json > /tmp/s.json || fail "stats -o json"
nvme csd exec "$ng" --program=checksum --ranges=4101:9 --algo=crc32c > /dev/null || fail "checksum"
nvme csd stats "$ng" -o json > /tmp/s2.json || fail "stats -o json"
[ "$(python3 -c "
import json
a, b = (json.load(open(f)) for f in ('/tmp/s.json', '/tmp/s2.json'))
per = lambda j: sum(p['exec_cmds'] for p in j['per_program'] if p['name'] == 'checksum')
print(per(b) - per(a), b['counters']['exec_cmds'] - a['counters']['exec_cmds'])")" = "1 1" ] ||
    fail "exec_cmds and checksum's Execute count did not grow by 1"
nvme csd stats "$ng" | grep -q '^exec checksum  *[0-9]' || fail "stats: $(nvme csd stats "$ng")"
echo "stats: ok"
echo "PASS"
