#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds csd.ko against the guest kernel's headers (images/fetch-kernel.sh) into
# build/kmod/csd.ko, from a copy of kmod/ with nvme-core's private nvme.h and the command
# set's spec/csd_spec.h beside it. A failed build fails loudly (no stale csd.ko is used).
# For another kernel (docs/real-drives.md): KDIR=/lib/modules/$(uname -r)/build and
# NVME_PRIVATE_H=<that kernel's source>/drivers/nvme/host/nvme.h.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${KDIR:-}" ]; then
    kdir=$KDIR
    nvme_h=${NVME_PRIVATE_H:?KDIR given: set NVME_PRIVATE_H to drivers/nvme/host/nvme.h of the same kernel version}
else
    krel=$(cat "$top/build/images/kernel-release")
    kdir="$top/build/images/kernel-root/usr/src/linux-headers-$krel"
    nvme_h=${NVME_PRIVATE_H:-$top/build/images/nvme-private/nvme.h}
fi
src=${KMOD_SRC:-$top/kmod}     # another source tree or output folder (the build's own test)
out=${KMOD_OUT:-$top/build/kmod}
[ -d "$kdir" ] || { echo "kmod: kernel headers missing in $kdir (make image, or KDIR=)" >&2; exit 1; }
[ -f "$nvme_h" ] || { echo "kmod: nvme-core's private header $nvme_h missing (NVME_PRIVATE_H=)" >&2; exit 1; }
mkdir -p "$out/uapi"
copy() { cmp -s "$1" "$2" || cp "$1" "$2"; }
for f in "$src"/*.c "$src"/*.h "$src"/Kbuild "$src"/uapi/csd_ioctl.h; do
    copy "$f" "$out/${f#"$src"/}"
done
rm -f "$out/csd.c"  # the module's single source before it was split
copy "$top/spec/csd_spec.h" "$out/csd_spec.h"
copy "$nvme_h" "$out/nvme.h"
if ! log=$(make -s -C "$kdir" M="$out" modules 2>&1); then
    echo "$log" >&2
    rm -f "$out/csd.ko"
    echo "kmod: build failed" >&2
    exit 1
fi
[ -z "$log" ] || echo "$log"
[ -f "$out/csd.ko" ] || { echo "kmod: build produced no csd.ko" >&2; exit 1; }
echo "kmod: $out/csd.ko"
