#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs what the full-stack peer-to-peer run needs on the GPU machine (which has no QEMU and
# cannot install packages) into build/gpu-stack.tar.xz, small enough to travel with the
# checkout: the project's QEMU (stripped) with the shared libraries it needs beyond glibc
# and libstdc++, its firmware, the guest kernel, and a minimal initramfs holding static
# busybox, csd.ko, virtio_blk.ko and the static guest programs (p2p_guest.c; agent_guest.c,
# with STACK_AGENT=PAIRS on the kernel command line), and the host's agents: the CPU agent
# (csd-agent-check) and the CUDA agent (agent_gpu.cu, built with nvcc where it is found).
# 'make-carry.sh exact' packs build/exact-stack.tar.xz instead: the same QEMU and kernel with an
# initramfs holding busybox and bench/exact-determinism/exact_guest.c (exact mode's determinism
# run, bench/exact-determinism/run.sh). Needs 'make qemu image kmod' first.
# 'make-carry.sh --gpu-queues [p2p|exact]' also packs build/gpu-queues.tar.xz: the meson
# build's gpu_io (GpuQueues on the in-process device) with the libraries it loads, for
# 'run.sh agent's comparison (needs 'make build' where CUDA is found).
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "${1:-}" = --gpu-queues ]; then
    shift
    mb="$top/build/meson"
    q="$top/build/gpu-queues"
    rm -rf "$q" && mkdir -p "$q/lib"
    [ -x "$mb/bench/gpu/gpu_io" ] || { echo "make-carry: $mb/bench/gpu/gpu_io is missing (make build with CUDA)"; exit 1; }
    cp "$mb/bench/gpu/gpu_io" "$q/"
    cp -L "$mb/host/libcsd.so.0" "$mb/host/libcsd_gpu.so" "$mb/host/libcsd-emu.so" "$q/lib/"
    bash "$top/ci/carry-libs.sh" "$mb/host/libcsd-emu.so" "$q/lib"
    bash "$top/ci/carry-libs.sh" "$mb/bench/gpu/gpu_io" "$q/lib"
    rm -f "$q"/lib/libcudart*   # the GPU machine's own CUDA runtime
    tar -C "$top/build" -cJf "$top/build/gpu-queues.tar.xz" gpu-queues
    echo "make-carry: build/gpu-queues.tar.xz $(du -h "$top/build/gpu-queues.tar.xz" | cut -f1)"
fi
kind=${1:-p2p}
case "$kind" in p2p) stack=gpu-stack ;; exact) stack=exact-stack ;; *) echo "make-carry: p2p or exact, not $kind"; exit 2 ;; esac
out="$top/build/$stack"
rm -rf "$out" && mkdir -p "$out/lib" "$out/share" "$out/initramfs"
for need in "$top/build/qemu/qemu-system-x86_64" "$top/build/images/vmlinuz" "$top/build/kmod/csd.ko"; do
    [ -f "$need" ] || { echo "make-carry: $need is missing (make qemu image kmod)"; exit 1; }
done
strip --strip-unneeded -o "$out/qemu-system-x86_64" "$top/build/qemu/qemu-system-x86_64"
bash "$top/ci/carry-libs.sh" "$top/build/qemu/qemu-system-x86_64" "$out/lib"
cp "$top/build/share/qemu/"{qboot.rom,linuxboot_dma.bin,kvmvapic.bin} "$out/share/"
cp "$top/build/images/vmlinuz" "$out/"
# The same kernel uncompressed, booted through its PVH entry (pvh.bin from Debian's
# qemu-system-data): kvm-probe.sh tries it because the compressed kernel's decompressor
# is where a nested KVM without hardware paging failed to emulate an instruction.
if [ "$kind" = p2p ] && [ -f /usr/share/qemu/pvh.bin ]; then
    cp /usr/share/qemu/pvh.bin "$out/share/"
    python3 - "$top/build/images/vmlinuz" "$out/vmlinux" <<'PY'
import subprocess, sys
data = open(sys.argv[1], "rb").read()
for magic, tool in ((b"\x28\xb5\x2f\xfd", ["zstd", "-dcq"]), (b"\xfd7zXZ\x00", ["xz", "-dcq"]), (b"\x1f\x8b\x08", ["gzip", "-dcq"])):
    at = data.find(magic)
    if at >= 0:
        out = subprocess.run(tool, input=data[at:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        if out[:4] == b"\x7fELF":
            open(sys.argv[2], "wb").write(out)
            break
PY
fi

# the guest: static busybox, the modules, the program, and an /init that runs it
root="$out/initramfs"
mkdir -p "$root"/{bin,dev,proc,sys,tmp}
cp /usr/bin/busybox "$root/bin/busybox"   # Debian's busybox is statically linked
for a in sh mount insmod cat basename sleep poweroff echo ls usleep; do ln -s busybox "$root/bin/$a"; done
if [ "$kind" = exact ]; then
    gcc -static -O2 -Wall "$top/bench/exact-determinism/exact_guest.c" -o "$root/exact_guest"
    cat > "$root/init" <<'INIT'
#!/bin/sh
# EXACT_REPEAT comes from the kernel command line.
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
i=0
while [ ! -e /dev/ng0n1 ] && [ $i -lt 200 ]; do usleep 50000; i=$((i + 1)); done
/exact_guest /dev/ng0n1 /dev/nvme0 "${EXACT_REPEAT:-5}"
echo "@@EXACT END"
poweroff -f
INIT
else
krel=$(cat "$top/build/images/kernel-release")
xz -dc "$top/build/images/kernel-root/lib/modules/$krel/kernel/drivers/block/virtio_blk.ko.xz" > "$root/virtio_blk.ko"
cp "$top/build/kmod/csd.ko" "$root/csd.ko"
gcc -static -O2 -Wall -I"$top/kmod/uapi" "$top/bench/gpu/full-stack/p2p_guest.c" -o "$root/p2p_guest"
gcc -static -O2 -Wall -I"$top/kmod/uapi" "$top/bench/gpu/full-stack/agent_guest.c" -o "$root/agent_guest"
# the host's agents (built here: the GPU machine has no meson build of the project)
if [ -x "$top/build/meson/tests/agent/csd-agent-check" ]; then
    cp "$top/build/meson/tests/agent/csd-agent-check" "$out/"
    bash "$top/ci/carry-libs.sh" "$out/csd-agent-check" "$out/lib"   # ISA-L
fi
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ -x "$nvcc" ]; then
    "$nvcc" -O2 -std=c++17 -arch=sm_90 -I"$top/spec" -I"$top/host/cuda" \
        "$top/bench/gpu/full-stack/agent_gpu.cu" -o "$out/agent_gpu"
fi
cat > "$root/init" <<'INIT'
#!/bin/sh
# STACK_LEN and STACK_ROUNDS come from the kernel command line.
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
# kvm-probe.sh boots with STACK_PROBE=1: it needs only to know the guest reached user space.
if [ -n "$STACK_PROBE" ]; then echo "@@STACK BOOTED $(cat /proc/uptime)"; poweroff -f; fi
# STACK_AGENT=PAIRS: agent queue pairs in the peer's BAR for the host's agents (agent_guest.c)
if [ -n "$STACK_AGENT" ]; then
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1110" ] && peer=$(basename $d)
    done
    insmod /csd.ko p2p_peer=$peer p2p_bar=2 || echo "@@STACK FAIL insmod csd.ko"
    i=0
    while [ ! -e /dev/csd0 ] && [ $i -lt 200 ]; do usleep 50000; i=$((i + 1)); done
    /agent_guest /dev/csd0 "$STACK_AGENT" 64 1048576
    echo "@@STACK END"
    poweroff -f
fi
insmod /virtio_blk.ko
peer=""
for d in /sys/bus/pci/devices/*; do
    [ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1110" ] && peer=$(basename $d)
done
echo "@@STACK peer $peer"
insmod /csd.ko p2p_peer=$peer p2p_bar=2 || echo "@@STACK FAIL insmod csd.ko"
i=0
while { [ ! -e /dev/csd0 ] || [ ! -b /dev/vda ]; } && [ $i -lt 200 ]; do usleep 50000; i=$((i + 1)); done
/p2p_guest /dev/csd0 "$STACK_LEN" "$STACK_ROUNDS" /dev/vda
echo "@@STACK END"
poweroff -f
INIT
fi
chmod +x "$root/init"
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet --owner 0:0) | gzip -9 > "$out/initramfs.cpio.gz"
rm -rf "$root"
tar -C "$top/build" -cJf "$top/build/$stack.tar.xz" "$stack"
echo "make-carry: build/$stack.tar.xz $(du -h "$top/build/$stack.tar.xz" | cut -f1)"
