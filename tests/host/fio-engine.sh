#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fio engine (host/fio-engine, docs/fio.md) on the host's fio, against the in-process
# device: every example job of examples/fio runs without an error and moves its I/O (the
# slm job's writes read back through fio's crc32c verification, the exec jobs' results
# checked against the host's computation by csd_verify), and bad options stop a job with a
# message naming them. Guest: tests/vm/guest/csd-fio.sh runs the same jobs on /dev/ng0n1.
# Usage: tests/host/fio-engine.sh MESON_BUILD   Prints 'fio-engine: N passed, N failed'.
set -uo pipefail
mb=${1:?usage: fio-engine.sh MESON_BUILD}
top=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "fio-engine: FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CSD_ENGINE="$top/build/fio/csd-fio.so"
export CSD_DEVICE="emu:$tmp/ns.img?size=64M&slm=48M"
export CSD_NVME="$tmp/ns.img"
export CSD_BPF="$mb/examples/bpf/threshold.o"
if [ ! -f "$CSD_ENGINE" ]; then
    bad "$CSD_ENGINE missing (make fio-engine)"
    echo "fio-engine: $pass passed, $fail failed"
    exit 1
fi
command -v fio >/dev/null || { bad "fio is not installed (make deps)"; echo "fio-engine: $pass passed, $fail failed"; exit 1; }

# Runs a job file; checks each job ended without error and moved I/O (JSON), naming it.
run_jobs() {  # JOB_FILE [fio options...]
    local file=$1; shift
    local out="$tmp/$(basename "$file").json"
    if ! timeout 300 fio --output-format=json "$@" "$file" > "$out" 2> "$tmp/err"; then
        bad "$(basename "$file"): fio failed: $(head -c 600 "$tmp/err")"
        return
    fi
    while IFS= read -r line; do
        case "$line" in ok*) ok ;; *) bad "$(basename "$file"): $line" ;; esac
    done < <(python3 - "$out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for j in d["jobs"]:
    ios = j["read"]["total_ios"] + j["write"]["total_ios"]
    if j["error"] != 0 or ios == 0:
        print(f"{j['jobname']}: error {j['error']}, {ios} I/Os")
    else:
        print(f"ok {j['jobname']}")
    if j["jobname"] == "slm-write-verify" and j["read"]["total_ios"] != j["write"]["total_ios"]:
        print(f"slm-write-verify: {j['write']['total_ios']} writes but {j['read']['total_ios']} verified")
EOF
)
}
for f in slm media exec exec-bpf; do
    rm -f "$tmp/ns.img"
    run_jobs "$top/examples/fio/$f.fio"
done
run_jobs "$top/examples/fio/mixed.fio" --runtime=2

# Refused with a message: one job, its options on the command line.
refused() {  # WHAT EXPECTED-TEXT fio options...
    local what=$1 want=$2; shift 2
    if timeout 60 fio --name=bad --ioengine="external:$CSD_ENGINE" --filename=csd --csd_device="$CSD_DEVICE" \
            --thread --size=1M --bs=4k "$@" > "$tmp/out" 2>&1 && ! grep -q "err=" "$tmp/out"; then
        bad "$what: fio ran it"
    elif grep -q -- "$want" "$tmp/out"; then
        ok
    else
        bad "$what: no '$want' in: $(head -c 600 "$tmp/out")"
    fi
}
refused "an unknown program" "csd_program=nosuch: no program of that name or id" --csd_program=nosuch --rw=read
refused "exec with writes" "runs programs on reads" --csd_program=copy --rw=write
refused "media with fio's verify" "moves no data to the host" --csd_mode=media --rw=write --verify=crc32c
refused "a window past SLM" "need more than the drive's" --csd_mode=slm --rw=read --size=1G
refused "csd_verify of xxh64" "the host checks crc32c only" --csd_program=checksum --csd_algo=xxh64 --csd_verify=1 --rw=read
refused "a bad algorithm" "csd_algo=md5: not one of crc32c, xxh64" --csd_program=checksum --csd_algo=md5 --rw=read
refused "filter without csd_lo" "filter needs csd_lo" --csd_program=filter --csd_record_size=16 --csd_type=i32 --csd_op=gt --rw=read
refused "a bad mode" "csd_mode=dma: not slm, media or exec" --csd_mode=dma --rw=read
refused "media I/O not in whole LBAs" "is not in whole LBAs" --csd_mode=media --rw=read --bs=100
refused "a drive that is not there" "csd: bad: /nonexistent/ng0n1: open /nonexistent/ng0n1" --csd_device=/nonexistent/ng0n1 --rw=read
refused "csd_verify without a program (slm)" "csd_verify checks programs' results: csd_mode=slm runs none" \
    --csd_mode=slm --csd_verify=1 --rw=read
refused "csd_verify without a program (media)" "csd_mode=media runs none" --csd_mode=media --csd_verify=1 --rw=read
printf 'no ELF' > "$tmp/not-elf.o"
refused "an image that is no ELF object" "not a BPF ELF object the device accepts" \
    --csd_bpf="$tmp/not-elf.o" --csd_record_size=16 --rw=read
if grep -q "instruction 4294967295" "$tmp/out"; then bad "a bad ELF object names instruction FFFFFFFFh: $(grep csd: "$tmp/out")"; else ok; fi
echo "fio-engine: $pass passed, $fail failed"
[ $fail = 0 ]
