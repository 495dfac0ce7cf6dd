#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the guest from Debian packages installed on this machine (see ci/deps.sh):
#   build/images/initramfs.cpio  busybox, /init and the virtio-blk module (tiny, boots fast)
#   build/images/usr.img         read-only ext4 mounted at /usr: nvme-cli, fio, python3 +
#                                numpy and every shared library they load (read on demand,
#                                so Python costs nothing until a test uses it)
# Both are rebuilt only when their inputs change. Needs build/images/kernel-root
# (images/fetch-kernel.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out="$top/build/images"
krel=$(cat "$out/kernel-release" 2>/dev/null) || { echo "build-guest: run images/fetch-kernel.sh first" >&2; exit 1; }
kroot="$out/kernel-root"

die() { echo "build-guest: error: $*" >&2; exit 1; }

# Guest programs taken whole, with every library they link (ldd closure).
guest_programs=(/usr/sbin/nvme /usr/bin/fio /usr/bin/python3.11 /usr/bin/zstd /usr/bin/lz4)
# Libraries libcsd and csdctl load in the guest (so the per-run archive stays small).
guest_libs=(libopenblas.so.0 libisal.so.2 libxxhash.so.0 liburing.so.2 libnvme.so.1 libzstd.so.1 liblz4.so.1)
# Python trees taken whole; the .so files inside get their ldd closure too.
python_trees=(/usr/lib/python3.11 /usr/lib/python3/dist-packages/numpy
              /usr/lib/python3/dist-packages/pytest /usr/lib/python3/dist-packages/_pytest
              /usr/lib/python3/dist-packages/pluggy /usr/lib/python3/dist-packages/iniconfig
              /usr/lib/python3/dist-packages/packaging /usr/lib/python3/dist-packages/attr
              /usr/lib/python3/dist-packages/attrs)
python_skip=(test idlelib tkinter turtledemo ensurepip lib2to3 pydoc_data __pycache__ config-3.11-x86_64-linux-gnu)

for p in "${guest_programs[@]}" /usr/bin/busybox "${python_trees[@]}"; do
    [ -e "$p" ] || die "$p is missing: run 'make deps'"
done
command -v mke2fs >/dev/null || die "mke2fs missing: run 'make deps'"

inputs_hash() {
    {
        sha256sum "$0" "$here/guest-init.sh"
        echo "$krel"
        dpkg-query -W -f '${Package} ${Version}\n' busybox-static nvme-cli fio python3.11 python3-numpy zstd lz4 python3-pytest \
            libnvme1 libopenblas0-pthread libisal2 libxxhash0 liburing2 2>/dev/null
    } | sha256sum | cut -c1-16
}
hash=$(inputs_hash)
if [ "$(cat "$out/guest.stamp" 2>/dev/null)" = "$hash" ] && [ -f "$out/initramfs.cpio" ] && [ -f "$out/usr.img" ]; then
    echo "build-guest: up to date ($hash)"
    exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# ------------------------------------------------------------------ /usr image
usr="$stage/usr"
mkdir -p "$usr"

# Copies one file (dereferenced) to the same path under the /usr image; merged-usr means
# /lib/... and /lib64/... live under /usr.
copy_into_usr() {
    local src=$1 rel
    rel=$(realpath -s "$src")
    case "$rel" in
        /usr/*) rel=${rel#/usr/} ;;
        /lib/* | /lib64/* | /bin/* | /sbin/*) rel=${rel#/} ;;
        *) die "cannot place $src under /usr" ;;
    esac
    [ -e "$usr/$rel" ] && return 0
    mkdir -p "$usr/$(dirname "$rel")"
    cp -L "$src" "$usr/$rel"
}

# Copies the ldd closure of a binary or shared object.
copy_libs_of() {
    local lib
    for lib in $(ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'); do
        copy_into_usr "$lib"
    done
}

for p in "${guest_programs[@]}"; do
    copy_into_usr "$p"
    copy_libs_of "$p"
done
for l in "${guest_libs[@]}"; do
    p=/lib/x86_64-linux-gnu/$l
    [ -e "$p" ] || die "$p is missing: run 'make deps'"
    copy_into_usr "$p"
    copy_libs_of "$p"
done
mkdir -p "$usr/lib/python3/dist-packages" && cp /usr/lib/python3/dist-packages/py.py "$usr/lib/python3/dist-packages/py.py"
ln -sf python3.11 "$usr/bin/python3"
# /bin/sh (and env) for scripts: busybox lives in the initramfs at /busybox.
ln -sf /busybox/sh "$usr/bin/sh"
ln -sf /busybox/env "$usr/bin/env"

excl=()
for s in "${python_skip[@]}"; do excl+=(--exclude "$s"); done
for t in "${python_trees[@]}"; do
    mkdir -p "$usr/${t#/usr/}"
    tar -C "$t" "${excl[@]}" -cf - . | tar -C "$usr/${t#/usr/}" -xf -
done
while IFS= read -r so; do copy_libs_of "$so"; done < <(find "${python_trees[@]}" -name '*.so*' -type f)
# Bytecode for every module, compiled here by the guest's own interpreter (this machine's
# python3.11) under the paths the guest sees: /usr is read-only there, so without it each
# Python process compiled the standard library, numpy and pytest anew (about 17 s of a TCG
# guest for 'import numpy, nvme_csd, pytest', every time). Unchecked-hash .pyc files do not
# depend on the sources' times; the sources change only with a new image, which makes them anew.
/usr/bin/python3.11 -m compileall -q -j "$(nproc)" --invalidation-mode unchecked-hash -s "$usr" -p /usr \
    "$usr/lib/python3.11" "$usr/lib/python3/dist-packages" > "$stage/compileall.log" 2>&1 ||
    { tail -n 20 "$stage/compileall.log"; die "compiling the guest's Python modules failed"; }
# numpy finds BLAS through Debian's alternatives links: take their targets too.
for l in /usr/lib/x86_64-linux-gnu/libblas.so.3 /usr/lib/x86_64-linux-gnu/liblapack.so.3; do
    [ -e "$l" ] && copy_into_usr "$l" && copy_libs_of "$l"
done
# The dynamic loader's own name under /lib64.
mkdir -p "$usr/lib64"
cp -L /lib64/ld-linux-x86-64.so.2 "$usr/lib64/ld-linux-x86-64.so.2"

# What the image holds, so that images/stage-guest.sh ships only the libraries it lacks.
(cd "$usr" && find . \( -type f -o -type l \) | sed 's|^\./|/usr/|') | sort > "$out/usr.list"
size_mb=$(( $(du -sm "$usr" | cut -f1) * 115 / 100 + 16 ))
rm -f "$out/usr.img.tmp"
mke2fs -q -t ext4 -L csd-usr -O ^has_journal -d "$usr" "$out/usr.img.tmp" "${size_mb}M"
mv "$out/usr.img.tmp" "$out/usr.img"

# ------------------------------------------------------------------ initramfs
root="$stage/initramfs"
mkdir -p "$root"/{busybox,dev,proc,sys,tmp,run,root,etc,mnt,usr,modules}
cp /usr/bin/busybox "$root/busybox/busybox"
for applet in $("$root/busybox/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/busybox/$applet"
done
# merged-usr links so that /lib64/ld-linux-x86-64.so.2 resolves once /usr is mounted
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
install -m 0755 "$here/guest-init.sh" "$root/init"
# virtio_blk at boot; the NVMe-over-TCP target (passthrough) and host, and virtio-net (for
# two guests linked by a QEMU stream netdev), loaded by the fabric tests
for m in drivers/block/virtio_blk fs/configfs/configfs drivers/nvme/target/nvmet drivers/nvme/target/nvmet-tcp \
         drivers/nvme/host/nvme-fabrics drivers/nvme/host/nvme-tcp \
         net/core/failover drivers/net/net_failover drivers/net/virtio_net; do
    xz -dc "$kroot/lib/modules/$krel/kernel/$m.ko.xz" > "$root/modules/$(basename "$m").ko"
done
printf 'root:x:0:0:root:/root:/bin/sh\ncsduser:x:1000:1000::/tmp:/bin/sh\ncsdother:x:1001:1001::/tmp:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/false\n' > "$root/etc/passwd"
printf 'root:x:0:\ncsd:x:990:csduser,csdother\ncsduser:x:1000:\ncsdother:x:1001:\nnogroup:x:65534:\n' > "$root/etc/group"
echo csd-guest > "$root/etc/hostname"
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet --owner 0:0) > "$out/initramfs.cpio"

echo "$hash" > "$out/guest.stamp"
echo "build-guest: initramfs $(du -h "$out/initramfs.cpio" | cut -f1), /usr image ${size_mb} MiB"
