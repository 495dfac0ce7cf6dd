#!/usr/bin/env bash
# Builds csd.ko against the guest kernel's headers (images/fetch-kernel.sh) into
# build/kmod/csd.ko, from a copy of kmod/ with nvme-core's private nvme.h beside it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
krel=$(cat "$top/build/images/kernel-release")
kdir="$top/build/images/kernel-root/usr/src/linux-headers-$krel"
out="$top/build/kmod"
[ -d "$kdir" ] || { echo "kmod: kernel headers missing (make image)" >&2; exit 1; }
mkdir -p "$out/uapi"
for f in csd.c Kbuild uapi/csd_ioctl.h; do
    cmp -s "$top/kmod/$f" "$out/$f" || cp "$top/kmod/$f" "$out/$f"
done
cmp -s "$top/build/images/nvme-private/nvme.h" "$out/nvme.h" || cp "$top/build/images/nvme-private/nvme.h" "$out/nvme.h"
make -s -C "$kdir" M="$out" modules 2>&1 | grep -v "^\s*$" || true
[ -f "$out/csd.ko" ] || { echo "kmod: build failed" >&2; exit 1; }
echo "kmod: $out/csd.ko"
