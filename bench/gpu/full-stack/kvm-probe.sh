#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On the GPU machine (which has /dev/kvm under nested virtualisation): boots the carried
# guest (build/gpu-stack.tar.xz, see make-carry.sh) under KVM with one CPU model after
# another and says which reach user space, and how fast, beside TCG. Usage: kvm-probe.sh
# [SECONDS_PER_TRY]. Prints one line per try: "probe KERNEL ACCEL CPU: booted in N ms" or its last
# console lines.
set -uo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
limit=${1:-40}
[ -f "$top/build/gpu-stack.tar.xz" ] || { echo "kvm-probe: build/gpu-stack.tar.xz missing (bench/gpu/full-stack/make-carry.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$top/build/gpu-stack.tar.xz"
s="$tmp/gpu-stack"
export LD_LIBRARY_PATH="$s/lib"
echo "== host: $(uname -r), $(grep -m1 'model name' /proc/cpuinfo)"
ls -la /dev/kvm
for f in /sys/module/kvm_intel/parameters/{nested,ept,unrestricted_guest} /sys/module/kvm_amd/parameters/nested /sys/module/kvm/parameters/ignore_msrs; do
    [ -r "$f" ] && echo "$f=$(cat "$f")"
done
grep -m1 -o -w -E 'cx16|hypervisor|vmx|svm' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
kernel="$s/vmlinuz"
try() { # ACCEL CPU [EXTRA...]
    local accel=$1 cpu=$2; shift 2
    local log="$tmp/console.log" t0 t1
    t0=$(date +%s%N)
    timeout "$limit" "$s/qemu-system-x86_64" -machine "q35,accel=$accel" -cpu "$cpu" -m 512 -smp 2 \
        -nodefaults -no-user-config -vga none -display none -L "$s/share" -bios "$s/share/qboot.rom" \
        -kernel "$kernel" -initrd "$s/initramfs.cpio.gz" -no-reboot -serial "file:$log" \
        -append "console=ttyS0 earlyprintk=serial,ttyS0 loglevel=7 panic=-1 8250.nr_uarts=1 STACK_PROBE=1" "$@" \
        >"$tmp/qemu.out" 2>&1
    local rc=$?
    t1=$(date +%s%N)
    if grep -q "@@STACK BOOTED" "$log" 2>/dev/null; then
        printf 'probe %s %s %s %s: booted in %d ms (%s)\n' "$(basename "$kernel")" "$accel" "$cpu" "$*" "$(( (t1 - t0) / 1000000 ))" "$(grep -m1 '@@STACK BOOTED' "$log")"
    else
        printf 'probe %s %s %s %s: NOT booted (rc %d); qemu said: %s\n' "$(basename "$kernel")" "$accel" "$cpu" "$*" "$rc" "$(tail -c 300 "$tmp/qemu.out" | tr '\n' '|')"
        tail -n 8 "$log" 2>/dev/null | sed 's/^/    console| /'
    fi
}
try tcg max
for cpu in host "host,-arch-capabilities" max qemu64 "qemu64,-cx16"; do
    try kvm "$cpu"
done
if [ -f "$s/vmlinux" ]; then   # the uncompressed kernel through its PVH entry
    kernel="$s/vmlinux"
    try tcg max
    for cpu in "host,-arch-capabilities" qemu64; do try kvm "$cpu"; done
fi
