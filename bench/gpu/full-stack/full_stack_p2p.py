# SPDX-License-Identifier: MIT
"""The whole stack on the GPU machine: the project's QEMU (TCG) boots the guest kernel with a
CSD drive and an ivshmem-plain peer whose BAR 2 is backed by a host file; this process maps
that file and registers the mapping with CUDA (cudaHostRegister) before the guest starts.
In the guest, csd.ko delivers SLM Reads straight into the peer's BAR (peer-to-peer; the guest
program is p2p_guest.c); this process then copies the bytes from the registered mapping into
GPU memory and checks them there. The path without peer-to-peer, side by side: the guest reads
SLM into its own memory and writes it to a virtio-blk disk, this process reads that disk's
host file and copies it to the GPU. Without a GPU the bytes are checked in host memory.
Usage: full_stack_p2p.py STACK_DIR [LEN_MIB] [ROUNDS]   (STACK_DIR: build/gpu-stack)"""
import mmap
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from stack import qemu_argv, qemu_env, stack_lines

try:
    import torch
    cuda = torch.cuda.is_available()
except ImportError:
    torch, cuda = None, False


def best(fn, reps=5):
    """Smallest seconds of reps calls of fn, and its last result."""
    t, out = 1e30, None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        if cuda:
            torch.cuda.synchronize()
        t = min(t, time.perf_counter() - t0)
    return t, out


def pattern_ok(host_or_gpu, n):
    """Whether the first n bytes are the guest's pattern (i * 31 + 7) & 0xff."""
    if cuda:
        want = ((torch.arange(n, device="cuda", dtype=torch.int64) * 31 + 7) & 0xFF).to(torch.uint8)
        return bool(torch.equal(host_or_gpu[:n], want))
    return bool(np.array_equal(host_or_gpu[:n], ((np.arange(n, dtype=np.int64) * 31 + 7) & 0xFF).astype(np.uint8)))


def main():
    stack = os.path.abspath(sys.argv[1])
    n = (int(sys.argv[2]) if len(sys.argv) > 2 else 16) << 20
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    bar = 1 << max(n - 1, 1).bit_length()  # a power of two, as a BAR is
    work = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    peer, out, ns = (os.path.join(work, f) for f in ("peer.mem", "out.img", "ns.img"))
    for path, size in ((peer, bar), (out, n), (ns, 64 << 20)):
        with open(path, "wb") as f:
            f.truncate(size)
    f = open(peer, "r+b")
    mapping = mmap.mmap(f.fileno(), bar)
    view = np.frombuffer(mapping, dtype=np.uint8)
    if cuda:  # the host process registers the peer's memory before the guest writes it
        rc = torch.cuda.cudart().cudaHostRegister(view.ctypes.data, bar, 0)
        if int(rc) != 0:
            sys.exit(f"cudaHostRegister of the peer mapping failed: {rc}")
    argv = qemu_argv(stack, f"STACK_LEN={n} STACK_ROUNDS={rounds}", ns, f"csd.slm-size={max(64 << 20, 2 * n)}",
                     peer, bar, ["-drive", f"if=none,id=out,file={out},format=raw,cache=writeback",
                                 "-device", "virtio-blk-pci,drive=out,romfile="])
    env = qemu_env(stack)
    t_boot = time.perf_counter()
    q = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    rows, failed = [], False
    dst = torch.empty(n, dtype=torch.uint8, device="cuda") if cuda else None
    pinned = torch.empty(n, dtype=torch.uint8).pin_memory() if cuda else None
    for w in stack_lines(q.stdout):
        if w[1] == "FAIL":
            failed = True
        elif w[1] == "p2p":
            guest = float(w[4]) / rounds
            if cuda:  # registered mapping -> GPU memory, checked on the GPU
                src = torch.from_numpy(view[:n])
                host, _ = best(lambda: dst.copy_(src, non_blocking=True))
                ok = pattern_ok(dst, n)
            else:
                host, ok = 0.0, pattern_ok(view, n)
            rows.append(("peer-to-peer: csd.ko SLM Read into the peer BAR; host: registered mapping -> GPU",
                         guest, host, ok))
        elif w[1] == "copy":
            guest = float(w[4]) / rounds
            if cuda:  # the disk's host file -> pinned buffer -> GPU memory, checked on the GPU
                def through_file():
                    pinned.numpy()[:] = np.fromfile(out, dtype=np.uint8, count=n)
                    return dst.copy_(pinned, non_blocking=True)
                host, _ = best(through_file)
                ok = pattern_ok(dst, n)
            else:
                host, ok = 0.0, pattern_ok(np.fromfile(out, dtype=np.uint8, count=n), n)
            rows.append(("without: SLM Read into guest memory, write to a virtio-blk disk; host: file -> pinned -> GPU",
                         guest, host, ok))
        elif w[1] == "END":
            break
    q.wait(timeout=60)
    print(f"\nguest run {time.perf_counter() - t_boot:.1f} s (TCG); {n >> 20} MiB per transfer, {rounds} rounds; "
          f"{'GPU: ' + torch.cuda.get_device_name() if cuda else 'no GPU: bytes checked in host memory'}\n")
    print("| path | guest, per transfer | host -> GPU | total | MB/s end to end | bytes checked |")
    print("|---|---|---|---|---|---|")
    for name, guest, host, ok in rows:
        total = guest + host
        print(f"| {name} | {guest * 1e3:.1f} ms | {host * 1e3:.2f} ms | {total * 1e3:.1f} ms | {n / total / 1e6:.0f} |"
              f" {'equal' if ok else 'DIFFERENT'} |")
    if cuda:
        torch.cuda.cudart().cudaHostUnregister(view.ctypes.data)
    for p in (peer, out, ns):
        os.unlink(p)
    os.rmdir(work)
    bad = failed or len(rows) != 2 or not all(r[3] for r in rows)
    print("full-stack: FAILED" if bad else "full-stack: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
