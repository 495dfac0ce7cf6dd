# The generic-fuzz setup (sourced; FIRMWARE: QEMU's firmware folder): one controller with
# csd=on, a small namespace and a small SLM so that the fuzzer's DMA reaches both; nvme* and
# pci objects are the fuzzed regions. A timing model with microsecond latencies holds every
# I/O completion until the fuzzer's clock steps reach it, so that queue deletions and resets
# meet held completions too; the standard front end (csd.nvme-cs) adds its namespaces, admin
# commands and Identify. The namespace is 2 MiB: null-co has no cheap Write Zeroes, so the
# block layer zeroes a bounce buffer as large as the request, and with 64 MiB inputs full of
# large Write Zeroes took 8-17 s each (perf: qemu_try_blockalign0 in bdrv_aligned_pwritev);
# at 2 MiB the grown corpus runs at ~130 executions/s per core instead of ~28.
export QEMU_FUZZ_ARGS="-machine q35 -nodefaults -L $FIRMWARE \
 -drive file=null-co://,if=none,format=raw,id=disk0,file.size=2M \
 -device nvme,serial=fuzz,drive=disk0,csd=on,csd.slm-size=4M,csd.compute-units=2,\
csd.model.link-gbps=4,csd.model.link-latency-ns=2000,csd.model.media-read-latency-ns=20000,\
csd.model.media-write-latency-ns=5000,csd.model.unit-gflops=20,csd.model.unit-gbps=4,\
csd.nvme-cs=on"
export QEMU_FUZZ_OBJECTS="nvme*"
export QEMU_FUZZ_TIMEOUT=5
# libFuzzer options every run uses. Inputs are capped at 4 KiB (-max_len): hundreds of
# generic-fuzz operations.
QEMU_FUZZ_OPTS=(-timeout=60 -rss_limit_mb=4096 -max_len=4096 -print_final_stats=1)
# What a finding looks like in a run's log (a sanitizer report, or a signal libFuzzer caught).
QEMU_FUZZ_REPORTS='ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|deadly signal|ERROR: libFuzzer'
