#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs QEMU's fuzzer (debug info stripped, symbols kept), the shared libraries it needs
# beyond glibc and libstdc++, its firmware and the grown corpus into
# build/qemu-fuzz-carry.tar.xz, for a machine with more cores that has no QEMU build (see
# run-qemu-fuzz-carried.sh). Needs a built fuzzer (tests/fuzz/run-qemu-fuzz.sh once).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin="$top/build/qemu-fuzz/qemu-fuzz-x86_64"
[ -x "$bin" ] || { echo "pack-qemu-fuzz: $bin missing (run tests/fuzz/run-qemu-fuzz.sh first)"; exit 1; }
out="$top/build/qemu-fuzz-carry"
rm -rf "$out" && mkdir -p "$out/lib" "$out/share"
strip --strip-debug -o "$out/qemu-fuzz-x86_64" "$bin"
bash "$top/ci/carry-libs.sh" "$bin" "$out/lib"
cp "$top/build/share/qemu/"* "$out/share/"
cp -r "$top/build/fuzz/qemu-generic/corpus" "$out/corpus"
tar -C "$top/build" -cJf "$top/build/qemu-fuzz-carry.tar.xz" qemu-fuzz-carry
rm -rf "$out"
echo "pack-qemu-fuzz: build/qemu-fuzz-carry.tar.xz $(du -h "$top/build/qemu-fuzz-carry.tar.xz" | cut -f1)"
