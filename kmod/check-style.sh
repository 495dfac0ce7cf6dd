#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel's checkpatch.pl (from Debian's linux-source of the guest kernel) over csd.ko's
# sources, and a check that a broken source fails the build loudly. Prints
# 'kmod-style: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cp="$top/build/images/checkpatch/checkpatch.pl"
[ -f "$cp" ] || { echo "kmod-style: checkpatch.pl missing (make image)"; echo "kmod-style: 0 passed, 1 failed"; exit 1; }
pass=0 fail=0
for f in "$top"/kmod/*.c "$top"/kmod/*.h "$top"/kmod/uapi/csd_ioctl.h; do
    if out=$(perl "$cp" --no-tree --strict -f "$f" 2>&1) && grep -q "total: 0 errors, 0 warnings" <<<"$out"; then
        pass=$((pass + 1)); echo "ok   checkpatch $(basename "$f")"
    else
        fail=$((fail + 1)); echo "$out" | tail -n 30; echo "FAIL checkpatch $(basename "$f")"
    fi
done

# A failed module build must fail loudly and leave no csd.ko behind (an old one would be
# tested instead of the broken source).
tmp=$(mktemp -d)
cp -r "$top/kmod" "$tmp/src"
echo "this is not C;" >> "$tmp/src/csdk_core.c"
mkdir -p "$tmp/out" && echo stale > "$tmp/out/csd.ko"
if KMOD_SRC="$tmp/src" KMOD_OUT="$tmp/out" bash "$top/kmod/build.sh" > "$tmp/log" 2>&1; then
    fail=$((fail + 1)); echo "FAIL a broken module source built"
elif [ -e "$tmp/out/csd.ko" ] || ! grep -q "kmod: build failed" "$tmp/log"; then
    fail=$((fail + 1)); tail -n 5 "$tmp/log"; echo "FAIL a failed build left csd.ko or said nothing"
else
    pass=$((pass + 1)); echo "ok   a failed module build fails loudly and leaves no csd.ko"
fi
rm -rf "$tmp"
echo "kmod-style: $pass passed, $fail failed"
[ $fail = 0 ]
