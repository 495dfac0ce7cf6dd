# SPDX-License-Identifier: MIT
# The generic-fuzz setup (sourced; FIRMWARE: QEMU's firmware folder): one controller with
# csd=on, a small namespace and a small SLM so that the fuzzer's DMA reaches both; nvme* and
# pci objects are the fuzzed regions. A timing model with microsecond latencies holds every
# I/O completion until the fuzzer's clock steps reach it, so that queue deletions and resets
# meet held completions too; the standard front end (csd.nvme-cs) adds its namespaces, admin
# commands and Identify. The namespace is 64 KiB (128 LBAs, enough for every seed): null-co
# has no cheap Write Zeroes, so the block layer zeroes a bounce buffer as large as each
# request (perf: qemu_try_blockalign0 in bdrv_aligned_pwritev). At 64 MiB inputs full of
# Write Zeroes took 8-17 s, at 2 MiB 1-2.7 s (a fresh mmap under ASan each time), at 64 KiB
# (ASan's pooled sizes) 40-110 ms.
# The machine has no HPET (hpet=off): the controller's DMA can reach any MMIO, and DMA
# into the HPET's registers makes it a periodic timer whose catch-up loop (hpet_timer)
# runs for hours once the fuzzer's clock steps have taken the virtual clock (never reset
# between inputs) near 2^63 ns: QEMU's HPET, not the nvme device, and it hung CI's run.
# No ACPI PCI hotplug (the controller sits on pcie.0, which hotplug never serves): its
# reset walks every bus through QOM property lookups, 8 % of each input's time in perf.
export QEMU_FUZZ_ARGS="-machine q35,hpet=off -nodefaults -L $FIRMWARE \
 -global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off \
 -drive file=null-co://,if=none,format=raw,id=disk0,file.size=64K \
 -device nvme,serial=fuzz,drive=disk0,csd=on,csd.slm-size=4M,csd.compute-units=2,\
csd.model.link-gbps=4,csd.model.link-latency-ns=2000,csd.model.media-read-latency-ns=20000,\
csd.model.media-write-latency-ns=5000,csd.model.unit-gflops=20,csd.model.unit-gbps=4,\
csd.nvme-cs=on"
export QEMU_FUZZ_OBJECTS="nvme*"
# libFuzzer options every run uses. Inputs are capped at 4 KiB (-max_len): hundreds of
# generic-fuzz operations. -timeout (s per input) works only with patch 0005 (QEMU blocks
# SIGALRM in the fuzzing thread); QEMU 10's generic-fuzz has no timeout of its own.
# QEMU_FUZZ_INPUT_TIMEOUT (default 60) sets it lower to get the stack of an input that
# was only reported slow (libFuzzer writes a slow-unit-* file but prints no stack).
# -entropic=0: the entropic schedule's bookkeeping (UpdateFeatureFrequency over QEMU's
# ~45,000 features) took 17 % of a worker's time in perf; without it a worker ran 119
# inputs/s against 101 from the same 800 inputs, and kept more new ones (1,313 vs 1,229).
# -detect_leaks=0: LSan is off (ASAN_OPTIONS; QEMU keeps what it allocates at start), yet
# libFuzzer would still run every input twice to look for a leak (its first 1,000 inputs).
# -reload=60: with several workers, each re-lists the shared corpus (a stat of every file)
# to pick up the others' finds, every second by default: 8 % of a worker's time in perf
# with 14,000 inputs there. Once a minute is soon enough to share a find.
QEMU_FUZZ_OPTS=(-timeout="${QEMU_FUZZ_INPUT_TIMEOUT:-60}" -rss_limit_mb=4096 -max_len=4096 -entropic=0 -detect_leaks=0 -reload=60 -print_final_stats=1)
# What a finding looks like in a run's log (a sanitizer report, or a signal libFuzzer caught).
QEMU_FUZZ_REPORTS='ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|deadly signal|ERROR: libFuzzer'
# Executions done by the libFuzzer processes whose logs are given: each one's final count,
# else the last "#N" progress line it printed (one stopped by a signal prints no final
# statistics). For -jobs runs pass the workers' fuzz-N.log only: the parent copies each
# finished worker's log into its own, and counting both counted every execution twice.
qemu_fuzz_execs() {
    local execs=0 n l
    for l in "$@"; do
        n=$(awk '/^stat::number_of_executed_units/ {s = $2} END {print s + 0}' "$l")
        [ "$n" -gt 0 ] || n=$(grep -o '^#[0-9]*' "$l" | tail -1 | tr -d '#')
        execs=$((execs + ${n:-0}))
    done
    echo "$execs"
}
