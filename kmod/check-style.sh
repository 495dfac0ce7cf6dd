#!/usr/bin/env bash
# The kernel's checkpatch.pl (from Debian's linux-source of the guest kernel) over csd.ko's
# sources. Prints 'kmod-style: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cp="$top/build/images/checkpatch/checkpatch.pl"
[ -f "$cp" ] || { echo "kmod-style: checkpatch.pl missing (make image)"; echo "kmod-style: 0 passed, 1 failed"; exit 1; }
pass=0 fail=0
for f in "$top"/kmod/csd_main.c "$top"/kmod/csd_p2p.c "$top"/kmod/csd_programs.c "$top"/kmod/csd.h "$top"/kmod/uapi/csd_ioctl.h; do
    if out=$(perl "$cp" --no-tree --strict -f "$f" 2>&1) && grep -q "total: 0 errors, 0 warnings" <<<"$out"; then
        pass=$((pass + 1)); echo "ok   checkpatch $(basename "$f")"
    else
        fail=$((fail + 1)); echo "$out" | tail -n 30; echo "FAIL checkpatch $(basename "$f")"
    fi
done
echo "kmod-style: $pass passed, $fail failed"
[ $fail = 0 ]
