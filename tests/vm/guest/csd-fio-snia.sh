# SPDX-License-Identifier: MIT
# The SNIA Computational Storage API's usage flow (examples/snia/flow.c, libcsd-snia) on the
# emulated drive and through csd.ko as a non-root user (and a program load past csd.ko's
# quota through the API and the engine), then the fio engine's example jobs
# (examples/fio, docs/fio.md) on the drive with the guest's fio: SLM Write/Read verified by
# fio, SLM Load/Store, programs checked against the host's computation, a downloaded eBPF
# program, and Executes beside io_uring reads.
# vm: csd=on slm=64M timeout=600
. /csd/tests/lib.sh
ng=$(nvm_ng)

snia-flow "$ng" > /tmp/flow 2>&1 || { cat /tmp/flow; fail "snia-flow on $ng"; }
echo "$ng: $(tail -n 1 /tmp/flow)"
# ... and through csd.ko as a non-root tenant (the module unloaded again for the next test)
if [ -f /csd/kmod/csd.ko ]; then
    insmod /csd/kmod/csd.ko group=990 || fail "insmod csd.ko"
    su -s /bin/sh csduser -c "snia-flow '/dev/csd0?slm=16M'" > /tmp/flow 2>&1 || {
        cat /tmp/flow; rmmod csd; fail "snia-flow on /dev/csd0 as csduser"; }
    echo "/dev/csd0 (csduser): $(tail -n 1 /tmp/flow)"
    # csd.ko's program quota (docs/kmod.md: a Program Load past it is EDQUOT) through the SNIA
    # API and the fio engine: an image past the tenant's upload bytes is refused, by name
    # (csDownload: CS_OUT_OF_RESOURCES, as the drive's own limits are; fio: the job does not
    # start, the engine saying why), and loads again once the quota allows it
    q=/sys/module/csd/parameters/program_loading_bytes_per_user
    echo 1 > $q
    dl="csd-matrix --way snia --format quota --rows chase --device '/dev/csd0?slm=16M' --api snia --bpf-dir /csd/bpf"
    out=$(su -s /bin/sh csduser -c "$dl" 2>&1)
    case "$out" in *'"status": "CS_OUT_OF_RESOURCES"'*) ;; *) rmmod csd; fail "csDownload past the quota: $out";; esac
    fioq="fio --name=quota --ioengine=external:/csd/lib/csd-fio.so --filename=csd --csd_device=/dev/csd0?slm=16M \
          --csd_bpf=/csd/bpf/threshold.o --csd_record_size=16 --rw=read --bs=4k --size=64k --thread"
    if su -s /bin/sh csduser -c "$fioq" > /tmp/fioq 2>&1 || ! grep -q "Disk quota exceeded" /tmp/fioq; then
        cat /tmp/fioq; rmmod csd; fail "fio's program load past the quota"
    fi
    echo 4194304 > $q
    out=$(su -s /bin/sh csduser -c "$dl" 2>&1)
    case "$out" in *'"outcome": "ok"'*) ;; *) rmmod csd; fail "csDownload within the quota: $out";; esac
    echo "/dev/csd0 (csduser): csDownload and fio's program load past the program quota refused, by name"
    rmmod csd || fail "rmmod csd"
else
    echo "no csd.ko staged (make kmod): /dev/csd0 run skipped"
fi

export CSD_ENGINE=/csd/lib/csd-fio.so CSD_DEVICE="$ng" CSD_NVME=/dev/nvme0n1 CSD_BPF=/csd/bpf/threshold.o
[ -f "$CSD_ENGINE" ] || fail "$CSD_ENGINE missing (make fio-engine, then make guest)"
for f in slm media exec exec-bpf mixed; do
    extra=
    [ $f = mixed ] && extra=--runtime=5
    fio --output-format=terse --terse-version=3 $extra /csd/fio/$f.fio > /tmp/fio-$f 2>&1 || {
        cat /tmp/fio-$f; fail "fio $f.fio"; }
    # terse v3: field 3 the job's name, field 5 its error
    bad=$(awk -F';' '/^3;/ && $5 != 0 {print $3 " error " $5}' /tmp/fio-$f)
    [ -z "$bad" ] || { cat /tmp/fio-$f; fail "fio $f.fio: $bad"; }
    jobs=$(grep -c '^3;' /tmp/fio-$f)
    [ "$jobs" -gt 0 ] || { cat /tmp/fio-$f; fail "fio $f.fio: no job ran"; }
    echo "fio $f.fio: $jobs job(s), no error"
done
