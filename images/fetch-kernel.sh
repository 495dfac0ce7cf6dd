#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches Debian's 6.12 cloud kernel (bookworm-backports) and its matching headers with
# apt, unpacks them under the cache, and puts the kernel at build/images/vmlinuz.
# Environment: CSD_CACHE (default ~/.cache/nvme-csd), CSD_KERNEL_SERIES (default 6.12).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${CSD_CACHE:-$HOME/.cache/nvme-csd}
series=${CSD_KERNEL_SERIES:-6.12}
out="$top/build/images"
mkdir -p "$out"

die() { echo "fetch-kernel: error: $*" >&2; exit 1; }

# Newest version of the cloud metapackage in the wanted series, and the image it pulls in.
meta_ver=$(apt-cache show linux-image-cloud-amd64 2>/dev/null | awk '/^Version:/ {print $2}' |
           grep -E "^${series//./\\.}\." | sort -V | tail -n 1 || true)
[ -n "$meta_ver" ] || die "apt offers no linux-image-cloud-amd64 $series.x; run 'make deps' (adds bookworm-backports)"
image_pkg=$(apt-cache show "linux-image-cloud-amd64=$meta_ver" | awk -F': ' '/^Depends:/ {print $2; exit}' |
            grep -oE 'linux-image-[^ ,]+-cloud-amd64' | head -n 1)
krel=${image_pkg#linux-image-}                       # 6.12.95+deb12-cloud-amd64
kver=${krel%-cloud-amd64}                             # 6.12.95+deb12

dest="$cache/kernel/$krel"
if [ ! -f "$dest/.complete" ]; then
    echo "fetch-kernel: fetching $image_pkg and headers"
    rm -rf "$dest" && mkdir -p "$dest/debs" "$dest/root"
    (cd "$dest/debs" && apt-get download -qq "$image_pkg" "linux-headers-$krel" \
        "linux-headers-$kver-common" "linux-kbuild-$kver") || die "apt-get download failed for $krel"
    for d in "$dest"/debs/*.deb; do dpkg-deb -x "$d" "$dest/root"; done
    rm -rf "$dest/debs"
    touch "$dest/.complete"
fi
# The headers' Makefile includes the common tree by its installed path: point it here.
sed -i "s|^include /usr/src/|include $dest/root/usr/src/|" "$dest/root/usr/src/linux-headers-$krel/Makefile"

# nvme-core's private header (struct nvme_ctrl, nvme_ns, __nvme_submit_sync_cmd), which
# the headers package lacks and csd.ko needs, and checkpatch.pl for its style check: from
# Debian's linux-source of this version.
if [ ! -f "$dest/nvme-private/nvme.h" ] || [ ! -f "$dest/checkpatch/checkpatch.pl" ]; then
    src_ver=$(apt-cache show "$image_pkg" | awk '/^Version:/ {print $2; exit}')
    series_pkg="linux-source-${series}"
    echo "fetch-kernel: fetching $series_pkg $src_ver for drivers/nvme/host/nvme.h"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq "$series_pkg=$src_ver") ||
        die "apt-get download $series_pkg=$src_ver failed (csd.ko needs nvme-core's private header)"
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -xO "./usr/src/$series_pkg.tar.xz" |
        tar -xJ -C "$tmp" "$series_pkg/drivers/nvme/host/nvme.h" "$series_pkg/scripts/checkpatch.pl" \
            "$series_pkg/scripts/spelling.txt" "$series_pkg/scripts/const_structs.checkpatch"
    mkdir -p "$dest/nvme-private" "$dest/checkpatch"
    mv "$tmp/$series_pkg/drivers/nvme/host/nvme.h" "$dest/nvme-private/nvme.h"
    mv "$tmp/$series_pkg/scripts/"* "$dest/checkpatch/"
    rm -rf "$tmp"
fi

cp -f "$dest/root/boot/vmlinuz-$krel" "$out/vmlinuz"
echo "$krel" > "$out/kernel-release"
ln -sfn "$dest/root" "$out/kernel-root"
ln -sfn "$dest/nvme-private" "$out/nvme-private"
ln -sfn "$dest/checkpatch" "$out/checkpatch"
echo "fetch-kernel: $krel ready (headers in $dest/root/usr/src/linux-headers-$krel)"
