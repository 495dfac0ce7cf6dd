# SPDX-License-Identifier: MIT
"""What the full-stack runs share (full_stack_p2p.py, full_stack_agent.py): QEMU's command line
and environment for the carried stack (make-carry.sh's build/gpu-stack)."""
import os


def qemu_argv(stack, append, ns, nvme_props, peer, bar, devices=()):
    """The carried QEMU (TCG, q35, qboot) booting the guest kernel and initramfs with kernel
    command line words `append`: a CSD drive on namespace file `ns` (nvme properties
    `nvme_props` added), an ivshmem-plain peer whose BAR 2 (`bar` bytes) is the file `peer`,
    the extra `devices` arguments; serial console on stdio."""
    devices = ["-drive", f"if=none,id=nvm0,file={ns},format=raw,cache=writeback",
               "-device", f"nvme,serial=csd0001,drive=nvm0,csd=on,{nvme_props}",
               "-object", f"memory-backend-file,id=peer,size={bar},mem-path={peer},share=on",
               "-device", "ivshmem-plain,memdev=peer", *devices]
    return [f"{stack}/qemu-system-x86_64", "-L", f"{stack}/share", "-machine", "q35,accel=tcg", "-cpu", "max",
            "-m", "1G", "-smp", "2", "-nodefaults", "-no-user-config", "-vga", "none", "-display", "none",
            "-bios", f"{stack}/share/qboot.rom", "-kernel", f"{stack}/vmlinuz", "-initrd", f"{stack}/initramfs.cpio.gz",
            "-append", f"console=ttyS0 quiet loglevel=3 panic=-1 {append}", "-no-reboot", *devices,
            "-serial", "stdio", "-monitor", "none"]


def qemu_env(stack):
    """The environment the carried QEMU runs in (its libraries beside it)."""
    return dict(os.environ, LD_LIBRARY_PATH=f"{stack}/lib")


def stack_lines(stream):
    """The guest's "@@STACK ..." lines from QEMU's output, as lists of words, each printed;
    every other line printed as the guest's."""
    for line in stream:
        line = line.rstrip()
        if not line.startswith("@@STACK"):
            print(f"    guest| {line}", flush=True)
            continue
        print(line, flush=True)
        yield line.split()
