#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets over the device core with clang (ASan + UBSan) and runs
# each for SECONDS (default 60) from its seed corpus: fuzz_execute (descriptors and
# programs over SLM), fuzz_program (downloadable program images and their runs),
# fuzz_elf (program images built by a structure-aware mutator: sections, symbols,
# relocations, string tables; accepted ones run JIT-compiled and interpreted),
# fuzz_catalog (the object store's catalog decoder and journal), fuzz_nvme_cs (the
# standard front end's decoders: range sets, activation, Execute Program, memory commands)
# and fuzz_npy (numpy dtype text and .npy files, host/lib/npy.cc).
# Prints 'fuzz: N passed, N failed'.
# Usage: tests/fuzz/run-fuzz.sh [SECONDS] [TARGET ...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_execute fuzz_program fuzz_elf fuzz_catalog fuzz_nvme_cs fuzz_npy)
out="$top/build/fuzz"
core="$top/qemu-device/core"
lib_srcs=("$core"/src/*.cc "$core"/src/programs/*.cc "$top"/spec/crc32c.cc)
bpf_flags=() bpf_libs=()
if pkg-config --exists libdpdk; then
    inc=$(pkg-config --variable=includedir libdpdk)
    bpf_flags=(-DCSD_HAVE_BPF -I"$inc" -I"$inc/../x86_64-linux-gnu/dpdk")
    bpf_libs=(-lrte_bpf -lrte_eal)
fi
pass=0 fail=0
for t in "${targets[@]}"; do
    dir="$out/$t"
    [ -d "$dir" ] || rm -f "$dir"  # a binary of the one-target layout this replaced
    mkdir -p "$dir/corpus" "$dir/findings"
    bin="$dir/$t"
    if [ "$t" = fuzz_catalog ]; then   # the host library's store codec, not the core
        srcs=("$top/host/lib/store_catalog.cc" "$top/host/lib/error.cc")
        flags=(-I"$top/host/include" -I"$top/host/lib" -I"$top/spec")
        libs=()
    elif [ "$t" = fuzz_npy ]; then      # the host library's dtype and .npy parser
        srcs=("$top/host/lib/npy.cc" "$top/host/lib/error.cc")
        flags=(-I"$top/host/include" -I"$top/spec")
        libs=()
    else
        srcs=("${lib_srcs[@]}")
        flags=(-DCSD_HAVE_XXHASH -DCSD_HAVE_ISAL "${bpf_flags[@]}" -I"$core/include" -I"$core/src" -I"$top/spec"
               -I"$top/tests/unit"
               $(pkg-config --cflags openblas))
        libs=($(pkg-config --libs openblas libzstd liblz4 libxxhash libisal) "${bpf_libs[@]}")
    fi
    if [ ! -x "$bin" ] || [ -n "$(find "$here/$t.cc" "${srcs[@]}" "$core/include" "$core/src" "$top/spec" "$top/host/lib" "$top/tests/unit/elf_writer.h" -newer "$bin" 2>/dev/null)" ]; then
        echo "fuzz: building $t with clang++ (address, undefined, fuzzer)"
        clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
            "${flags[@]}" "$here/$t.cc" "${srcs[@]}" -o "$bin" "${libs[@]}" || {
            echo "fuzz: $t did not build"; fail=$((fail + 1)); continue; }
    fi
    python3 "$here/make_seeds.py" "$t" "$dir/corpus"
    regressions=()
    [ -d "$here/regressions/$t" ] && regressions=("$here/regressions/$t")
    log="$dir/last-run.log"
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$dir/findings/" "$dir/corpus" "${regressions[@]}" > "$log" 2>&1
    rc=$?
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|Done [0-9]+ runs" "$log" | sed "s/^/$t: /"
    if [ $rc = 0 ]; then
        pass=$((pass + 1)); echo "ok   $t: ${secs} s, no findings"
    else
        tail -n 40 "$log"
        fail=$((fail + 1)); echo "FAIL $t: finding in $dir/findings"
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail = 0 ]
