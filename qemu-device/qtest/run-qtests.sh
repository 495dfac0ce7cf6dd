#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the qtests against build/qemu/qemu-system-x86_64: QEMU's own nvme qos-tests with
# csd off and again with csd on (-global nvme.csd=on through a wrapper named like the
# binary, since libqtest reads the target from the name), the csd qtests, and the
# realize-time checks of the csd properties. Prints TAP and 'qtest: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
qemu="$top/build/qemu/qemu-system-x86_64"
qos="$top/build/qemu/qos-test"
csd="$top/build/qemu/csd-test"
for b in "$qemu" "$qos" "$csd"; do
    [ -x "$b" ] || { echo "qtest: $b missing (make qemu)" >&2; exit 1; }
done
wrapdir=$(mktemp -d)
trap 'rm -rf "$wrapdir"' EXIT
printf '#!/bin/sh\nexec "%s" -global nvme.csd=on "$@"\n' "$qemu" > "$wrapdir/qemu-system-x86_64"
chmod +x "$wrapdir/qemu-system-x86_64"
# and with agent queues polled (agent-poll-us, patch 0016): QEMU's own tests pass alike
mkdir -p "$wrapdir/agent"
printf '#!/bin/sh\nexec "%s" -global nvme.csd=on -global nvme.agent-poll-us=50 "$@"\n' "$qemu" > "$wrapdir/agent/qemu-system-x86_64"
chmod +x "$wrapdir/agent/qemu-system-x86_64"

n=0 pass=0 fail=0
result() {  # result RC NAME OUTPUT
    n=$((n + 1))
    if [ "$1" = 0 ]; then
        pass=$((pass + 1)); echo "ok $n $2"
    else
        fail=$((fail + 1)); echo "not ok $n $2"; sed 's/^/#   /' <<<"$3" | tail -n 30
    fi
}

mapfile -t paths < <(QTEST_QEMU_BINARY="$qemu" "$qos" -l 2>/dev/null | grep '/nvme/')
[ ${#paths[@]} -gt 0 ] || result 1 "qos-test lists nvme tests" ""
for bin in "$qemu" "$wrapdir/qemu-system-x86_64" "$wrapdir/agent/qemu-system-x86_64"; do
    label=$([ "$bin" = "$qemu" ] && echo "csd=off" || echo "csd=on")
    [ "$bin" = "$wrapdir/agent/qemu-system-x86_64" ] && label="csd=on agent-poll-us=50"
    for p in "${paths[@]}"; do
        out=$(QTEST_QEMU_BINARY="$bin" timeout 120 "$qos" --tap -m quick -p "$p" 2>&1)
        rc=$?
        grep -q '^ok ' <<<"$out" && ! grep -q '^not ok' <<<"$out" || rc=1
        result $rc "$p [$label]" "$out"
    done
done

out=$(CSD_EQUIV_TRACE="$wrapdir/equivalence.trace" CSD_BPF_DIR="$top/build/meson/examples/bpf" \
      QTEST_QEMU_BINARY="$qemu" timeout 300 "$csd" --tap 2>&1)
rc=$?
while read -r line; do
    case "$line" in
        "ok "*) result 0 "${line#ok * }" "" ;;
        "not ok "*) result 1 "${line#not ok * }" "$out" ;;
    esac
done < <(grep -E '^(not )?ok ' <<<"$out")
[ $rc = 0 ] || grep -q '^not ok' <<<"$out" || result 1 "csd-test exited $rc" "$out"

# One command sequence through both embeddings: /csd/equivalence-trace's commands and
# QEMU's completions, replayed on the in-process device and compared byte for byte.
replay="$top/build/meson/tests/host/csd-equivalence-replay"
if [ -x "$replay" ]; then
    out=$("$replay" "$wrapdir/equivalence.trace" 2>&1)
    result $? "equivalence: QEMU and the in-process device complete the same sequence alike" "$out"
else
    result 1 "equivalence: $replay missing (meson build)" ""
fi

# Realize-time validation: bad csd properties stop QEMU with a message naming them.
check_refused() {  # check_refused 'DEVICE OPTIONS' 'MESSAGE'
    out=$(timeout 20 "$qemu" -M pc -nodefaults -display none -S \
        -drive if=none,id=d,file=null-co://,format=raw -device "nvme,drive=d,serial=x,$1" 2>&1)
    rc=$?
    [ $rc != 0 ] && grep -q -- "$2" <<<"$out"
    result $? "refused: $1" "$out"
}
check_refused "csd=on,csd.slm-size=1000" "csd.slm-size: a multiple of 4 KiB, 4K .. 256G, not '1000'"
check_refused "csd=on,csd.slm-size=512G" "csd.slm-size: a multiple of 4 KiB, 4K .. 256G, not '512G'"
check_refused "csd=on,csd.compute-units=300" "csd.compute-units: 0 .. 256, not '300'"
# The timing model: the core's checks, at realize, naming the property.
check_refused "csd.model=gen4x4-8core" "csd.model needs csd=on"
check_refused "csd=on,csd.model=gen9" "csd.model: unknown preset 'gen9' (gen3x4-4core"
check_refused "csd=on,csd.model.link-gbps=fast" "csd.model.link-gbps: a number >= 0, not 'fast'"
check_refused "csd=on,csd.model.unit-gflops=4" "unit-gflops and unit-gbps go together"
check_refused "csd=on,csd.model.media-read-latency-ns=2000000000" "0 .. 1000000000 (1 s), not '2000000000'"
check_refused "csd=on,csd.model=gen3x4-4core,csd.compute-units=2" \
    "csd.compute-units=2 but the timing model has 4 compute units"
check_refused "csd=on,ocp=on" "csd and ocp cannot both be on"
# The standard front end (csd.nvme-cs): needs csd, and two free NSIDs.
check_refused "csd.nvme-cs=on" "csd.nvme-cs needs csd=on"
check_refused "csd=on,csd.nvme-cs.mem-nsid=5" "csd.nvme-cs.mem-nsid needs csd.nvme-cs=on"
check_refused "csd=on,csd.vendor=off" "csd.vendor=off needs csd.nvme-cs=on"
check_refused "csd=on,csd.nvme-cs=on,csd.nvme-cs.mem-nsid=1" "NSIDs 1 and 2 must be free"
check_refused "csd=on,csd.nvme-cs=on,csd.nvme-cs.mem-nsid=256" "csd.nvme-cs.mem-nsid: 0 .. 255, not '256'"
check_refused "csd.slm-size=1M" "csd.slm-size needs csd=on"
check_refused "csd=on,csd.nvme-cs=maybe" "csd.nvme-cs: on, off, not 'maybe'"
# agent queues (patch 0016): the poll period is bounded
check_refused "agent-poll-us=100001" "agent-poll-us must be at most 100000"

# An nvme-ns may not take a csd.nvme-cs namespace's NSID (patch 0015): nvme-ns devices are
# realized after their controller, and one with nsid=1 was shadowed by the memory namespace
# the controller had put there (QEMU started; the guest saw no NVM namespace).
cs_subsys() {  # cs_subsys CTRL-OPTIONS NS-OPTIONS: QEMU with an nvme-subsys, one controller, one nvme-ns
    echo quit | timeout 20 "$qemu" -M pc -nodefaults -display none -S -monitor stdio \
        -drive if=none,id=d,file=null-co://,format=raw -device nvme-subsys,id=s0 \
        -device "nvme,id=c0,serial=x,subsys=s0,csd=on,csd.nvme-cs=on$1" -device "nvme-ns,drive=d,bus=c0$2" 2>&1
}
out=$(cs_subsys "" ",nsid=1"); rc=$?
[ $rc != 0 ] && grep -q "namespace id '1' is a controller's csd.nvme-cs memory or compute namespace" <<<"$out"
result $? "refused: an nvme-ns on a csd.nvme-cs NSID" "$out"
out=$(cs_subsys ",csd.nvme-cs.mem-nsid=2" ",nsid=1")
result $? "an nvme-ns beside the csd.nvme-cs namespaces moved past it starts" "$out"
out=$(cs_subsys "" "")
result $? "an nvme-ns without nsid skips the csd.nvme-cs NSIDs" "$out"

# The csd.<name> properties through QOM: the text given, the table's default where none was
# given, and no change once the device is realized.
out=$(printf '%s\n' 'qom-get /machine/peripheral/c0 csd.slm-size' 'qom-get /machine/peripheral/c0 csd.vendor' \
        'qom-set /machine/peripheral/c0 csd.slm-size 32M' quit |
      timeout 20 "$qemu" -M pc -nodefaults -display none -S -monitor stdio \
        -drive if=none,id=d,file=null-co://,format=raw -device nvme,id=c0,serial=x,drive=d,csd=on,csd.slm-size=16M 2>&1 |
      tr -d '\r' | grep -v '^(qemu)')
grep -qx '"16M"' <<<"$out" && grep -qx '"on"' <<<"$out" &&
    grep -q "Attempt to set property 'csd.slm-size' on device 'c0' (type 'nvme') after it was realized" <<<"$out"
result $? "options: qom-get reads a csd.<name> given or its default, qom-set after realize is refused" "$out"

# One option table (core/src/config.cc): QEMU's csd.<name> properties and the
# in-process device's emu: options are the core's rows, name for name, and a bad value is
# refused by both with the core's one message (QEMU's after "csd.", the emu: one's after
# "emu: ").
mb="$top/build/meson"
opts="$mb/core/csd-options" csdctl="$mb/host/csdctl"
if [ -x "$opts" ] && [ -x "$csdctl" ]; then
    help=$(timeout 20 "$qemu" -device nvme,help 2>&1)
    got=$(grep -oE '^ +csd\.[a-z0-9.-]+=' <<<"$help" | tr -d ' =' | sort)
    diff <(echo "$got") <("$opts" qemu | sort) >/dev/null
    result $? "options: -device nvme,help lists the core table's QEMU rows, name for name" \
        "$(diff <(echo "$got") <("$opts" qemu | sort))"
    help=$("$csdctl" -d "emu:$wrapdir/opts.img?help" info 2>&1)
    got=$(grep -oE '^ +[a-z0-9.-]+=<' <<<"$help" | tr -d ' =<' | sort)
    diff <(echo "$got") <("$opts" emu | sort) >/dev/null
    result $? "options: emu:?help lists the core table's emu: rows, name for name" \
        "$(diff <(echo "$got") <("$opts" emu | sort))"
    for bad in slm-size=5000 compute-units=300 vendor=maybe nvme-cs=2 model=gen9 model.link-gbps=fast \
               model.media-read-latency-ns=2000000000 model.compute-units=-1; do
        q=$(timeout 20 "$qemu" -M pc -nodefaults -display none -S -drive if=none,id=d,file=null-co://,format=raw \
            -device "nvme,drive=d,serial=x,csd=on,csd.$bad" 2>&1 | sed -n 's/.*: csd\.\(.*\)$/\1/p' | head -n 1)
        e=$("$csdctl" -d "emu:$wrapdir/opts.img?$bad" info 2>&1 | sed -n 's/^csdctl: emu: \(.*\): Invalid argument$/\1/p')
        [ -n "$q" ] && [ "$q" = "$e" ]
        result $? "options: $bad refused alike by QEMU and the in-process device" "QEMU: csd.$q"$'\n'"emu:  $e"
    done
    [ ! -e "$wrapdir/opts.img" ]
    result $? "options: a refused emu: device makes no backing file" ""
else
    result 1 "options: $opts or $csdctl missing (meson build)" ""
fi

# Operator plug-ins (csd.plugin-dir): each unusable plug-in stops QEMU naming its file;
# the example plug-in starts.
plugdir() {  # plugdir FILE...: a directory holding copies of the files
    local d; d=$(mktemp -d "$wrapdir/plugins.XXXX"); cp "$@" "$d/"; echo "$d"
}
check_refused "csd=on,csd.plugin-dir=/nonexistent" "csd.plugin-dir: plug-in directory /nonexistent"
check_refused "csd=on,csd.plugin-dir=$(plugdir "$mb/tests/unit/plugin_bad_abi.so")" \
    "plugin_bad_abi.so is for plug-in interface version 2"
check_refused "csd=on,csd.plugin-dir=$(plugdir "$mb/tests/unit/plugin_no_entry.so")" \
    "plugin_no_entry.so has no csd_plugin_entry"
check_refused "csd=on,csd.plugin-dir=$(plugdir "$mb/tests/unit/plugin_taken_id.so")" \
    "plugin_taken_id.so declares id 5, outside 0040h..00FFh"
good=$(plugdir "$mb/examples/plugins/substring_search.so")
out=$(echo quit | timeout 20 "$qemu" -M pc -nodefaults -display none -S -monitor stdio \
    -drive if=none,id=d,file=null-co://,format=raw \
    -device "nvme,drive=d,serial=x,csd=on,csd.plugin-dir=$good" 2>&1)
result $? "the example plug-in loads at realize" "$out"

echo "qtest: $pass passed, $fail failed"
[ $fail = 0 ]
