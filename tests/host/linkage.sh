#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libcsd's users link none of the device core's runtimes (BLAS, zstd, lz4, xxHash, DPDK's
# eBPF): only libcsd-emu.so, the in-process device, does, and libcsd loads it for emu:
# paths alone. Checks what libcsd.so, libcsd-snia.so, csdctl and (if given) the Python extension load, that
# csdctl still opens an emu: device, and the error when libcsd-emu.so cannot be loaded.
# Usage: tests/host/linkage.sh MESON_BUILD [PYTHON_EXTENSION.so]
# Prints 'linkage: N passed, N failed'.
set -uo pipefail
mb=${1:?usage: linkage.sh MESON_BUILD [PYTHON_EXTENSION.so]}
ext=${2:-}
runtimes='lib(openblas|blas|cblas|zstd|lz4|xxhash|rte_[a-z]+)\.so'
pass=0 fail=0
ok() { echo "linkage: ok: $*"; pass=$((pass + 1)); }
bad() { echo "linkage: FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Everything a binary loads at start (ldd: also what its libraries need).
loads() { ldd "$1" | awk '{print $1}'; }

# The pattern finds the runtimes where they are: in libcsd-emu.so.
found=$(loads "$mb/host/libcsd-emu.so" | grep -cE "$runtimes")
[ "$found" -ge 3 ] && ok "libcsd-emu.so loads the core's runtimes ($found)" ||
    bad "libcsd-emu.so loads $found of the core's runtimes (expected BLAS, zstd, lz4...)"
for bin in "$mb/host/libcsd.so" "$mb/host/snia/libcsd-snia.so" "$mb/host/csdctl" ${ext:+"$ext"}; do
    hits=$(loads "$bin" | grep -E "$runtimes" | tr '\n' ' ')
    [ -z "$hits" ] && ok "$(basename "$bin") loads none of them" || bad "$(basename "$bin") loads $hits"
done

# csdctl opens an emu: device (libcsd loads libcsd-emu.so from its own folder).
if out=$("$mb/host/csdctl" -d "emu:$tmp/ns.img?size=16M&slm=8M" info 2>&1) && grep -q "inproc\|SLM\|slm" <<<"$out"; then
    ok "csdctl opens emu:"
else
    bad "csdctl -d emu: info: $out"
fi
# ... and says what is missing when libcsd-emu.so cannot be loaded, opening nothing else.
out=$(CSD_EMU_LIBRARY="$tmp/none/libcsd-emu.so" "$mb/host/csdctl" -d "emu:$tmp/ns2.img?size=16M" info 2>&1)
rc=$?
if [ $rc != 0 ] && grep -q "libcsd-emu.so could not be loaded" <<<"$out" && [ ! -e "$tmp/ns2.img" ]; then
    ok "a missing libcsd-emu.so is a clear error"
else
    bad "CSD_EMU_LIBRARY=missing: rc $rc: $out"
fi
echo "linkage: $pass passed, $fail failed"
[ $fail = 0 ]
