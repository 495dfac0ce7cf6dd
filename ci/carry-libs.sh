#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copies the shared libraries BINARY needs beyond glibc, libstdc++ and libgcc into DIR, so that
# it runs on a machine that has none of them (LD_LIBRARY_PATH=DIR); used to carry QEMU and its
# fuzzer to the GPU machine. Usage: ci/carry-libs.sh BINARY DIR
set -euo pipefail
mkdir -p "$2"
ldd "$1" | awk '/=>/ {print $3}' | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' |
    while read -r lib; do cp -L "$lib" "$2/"; done
