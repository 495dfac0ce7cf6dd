#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts the project's guest-side binaries (csdctl, libcsd, the library tests, the SNIA API's
# usage flow, nvme-cli with the csd plugin, the fio engine and its example jobs) into
# build/guest/{bin,lib,fio}; tests/vm/csdvm.py ships that folder to /csd at every boot.
# Libraries the /usr image already has are not copied (build/images/usr.list).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mb="$top/build/meson"
out="$top/build/guest"
list="$top/build/images/usr.list"
[ -f "$list" ] || { echo "stage-guest: build the image first (make image)" >&2; exit 1; }
bins=("$mb/host/csdctl" "$mb/tests/host/csd-library-tests" "$mb/tests/host/csd-drive-set-tests" "$mb/tests/host/csd-c-api-test"
      "$mb/tests/kmod/kmod_check" "$mb/examples/snia/snia-flow" "$mb/tests/matrix/csd-matrix"
      "$mb/bench/slm_load_bench")
# libcsd loads the in-process device (emu: paths) from its own folder: libcsd-emu.so goes
# beside it with what it links (the device core's BLAS, compression and eBPF runtimes).
emu="$mb/host/libcsd-emu.so"
# One staging at a time in a tree (make vm in one terminal and make check in another both
# stage): the second waits for the first, then stages anew; csdvm.py reads build/guest
# under the same lock, shared, so it never packs a half-replaced folder.
exec 9> "$top/build/guest.lock"
flock 9
rm -rf "$out.tmp" && mkdir -p "$out.tmp/bin" "$out.tmp/lib"
[ -f "$emu" ] || { echo "stage-guest: $emu missing (make build)" >&2; exit 1; }
cp "$emu" "$out.tmp/lib/"
for b in "${bins[@]}" "$emu"; do
    [ -x "$b" ] || { echo "stage-guest: $b missing (make build)" >&2; exit 1; }
    [ "$b" = "$emu" ] || cp "$b" "$out.tmp/bin/"
    for lib in $(ldd "$b" | awk '/=> \// {print $3}'); do
        # the guest's loader searches /usr/lib/x86_64-linux-gnu (it has no ld.so.cache)
        if ! grep -qxF "/usr/lib/x86_64-linux-gnu/$(basename "$lib")" "$list"; then
            cp -L "$lib" "$out.tmp/lib/$(basename "$lib")"
        fi
    done
done
# The Python package for the guest's Debian python3 (/usr/bin/python3), without the CUDA
# part (the guest has no GPU or CUDA libraries), linked against the libcsd staged above
# (found through LD_LIBRARY_PATH=/csd/lib); kept in build/guest-python so that unchanged
# sources are not rebuilt.
pyout="$top/build/guest-python-nocuda"
(cd "$top/python" && NVME_CSD_NO_CUDA=1 CSD_LIBDIR="$mb/host" /usr/bin/python3 setup.py -q build_ext --build-lib "$pyout" \
    --build-temp "$top/build/guest-python-nocuda-tmp" > "$top/build/guest-python.log" 2>&1) || {
    tail -n 30 "$top/build/guest-python.log" >&2
    echo "stage-guest: building the Python extension for /usr/bin/python3 failed" >&2
    exit 1
}
mkdir -p "$out.tmp/python/nvme_csd"
cp "$pyout"/nvme_csd/_core*.so "$top"/python/nvme_csd/*.py "$out.tmp/python/nvme_csd/"
cp -r "$top/python/tests" "$out.tmp/python/tests"
# Its bytecode, as the guest's python3 would write it on first import in every boot (the
# guest's /csd is new each boot); checked-hash: a source that differs is compiled anew.
/usr/bin/python3 -m compileall -q --invalidation-mode checked-hash -s "$out.tmp" -p /csd "$out.tmp/python/nvme_csd" > /dev/null || {
    echo "stage-guest: compiling the guest's nvme_csd package failed" >&2
    exit 1
}
# The example eBPF programs and the ones the device must refuse (compiled by clang at
# build time; the guest has no clang), and the examples' sources for the recipes.
mkdir -p "$out.tmp/bpf"
cp "$mb"/examples/bpf/*.o "$mb"/tests/unit/*.o "$top"/examples/bpf/*.c "$top"/examples/bpf/*.h "$top"/spec/csd_btree.h "$out.tmp/bpf/"
# nvme-cli with the `nvme csd` plugin, when built (host/nvme-cli-plugin/build.sh): the guest's
# PATH has /csd/bin before /usr/sbin, so it is the guest's `nvme`.
if [ -x "$top/build/nvme-cli/nvme" ]; then
    cp "$top/build/nvme-cli/nvme" "$out.tmp/bin/nvme"
    for lib in $(ldd "$top/build/nvme-cli/nvme" | awk '/=> \// {print $3}'); do
        grep -qxF "/usr/lib/x86_64-linux-gnu/$(basename "$lib")" "$list" ||
            cp -L "$lib" "$out.tmp/lib/$(basename "$lib")"
    done
fi
# The fio engine, when built (host/fio-engine/build.sh), beside libcsd: its example jobs
# name it /csd/lib/csd-fio.so (docs/fio.md).
if [ -f "$top/build/fio/csd-fio.so" ]; then
    cp "$top/build/fio/csd-fio.so" "$out.tmp/lib/"
fi
mkdir -p "$out.tmp/fio"
cp "$top"/examples/fio/*.fio "$out.tmp/fio/"
# The kernel module, when built (kmod/build.sh)
if [ -f "$top/build/kmod/csd.ko" ]; then
    mkdir -p "$out.tmp/kmod"
    cp "$top/build/kmod/csd.ko" "$out.tmp/kmod/"
fi
rm -rf "$out" && mv "$out.tmp" "$out"
echo "stage-guest: $(ls "$out/bin" | wc -l) programs, $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out" | cut -f1)"
