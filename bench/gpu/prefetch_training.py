# SPDX-License-Identifier: MIT
"""GPU idle time per training step, with and without prefetching the batches from the drive
(nvme_csd.data.Prefetcher against loading each batch when the step needs it), in one run.
A small MLP trains on 64 MiB float32 batches stored as objects on the in-process device; GPU
busy time is measured with CUDA events around each step's compute, idle = wall - busy.
Usage: python3 bench/gpu/prefetch_training.py [STEPS] [DEPTH] [HIDDEN] (HIDDEN: the MLP's
width, 4096 by default; smaller makes the step shorter than loading its batch)"""
import os
import sys
import tempfile
import time

import numpy as np
import torch

import nvme_csd
from nvme_csd.data import Prefetcher, StoreDataset


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    if not torch.cuda.is_available() or not nvme_csd.gpu.available():
        print("prefetch_training: no GPU here; nothing to measure")
        return 0
    rows, cols = 8192, 2048  # 64 MiB of float32 per batch
    path = os.path.join(tempfile.mkdtemp(), "ns.img")
    dev = nvme_csd.open(f"emu:{path}?size={steps * 64 + 256}M&slm=64M")
    dev.store.format()
    rng = np.random.default_rng(0)
    names = []
    for i in range(steps):
        dev.store[f"batch{i}"] = rng.standard_normal((rows, cols), dtype=np.float32)
        names.append(f"batch{i}")
    ds = StoreDataset(dev, names)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(cols, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, cols)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def train(batches):
        events = []
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for x in batches:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = (model(x) - x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            end.record()
            events.append((start, end))
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        busy = sum(s.elapsed_time(e) for s, e in events) / 1e3
        return wall, busy, len(events)

    train(ds.load(i, "cuda") for i in range(2))  # warm-up: kernels, allocator, pipeline
    print(f"GPU: {torch.cuda.get_device_name()}; {steps} steps, batches of {rows}x{cols} float32 "
          f"({rows * cols * 4 >> 20} MiB) stored on the in-process device; MLP {cols}-{hidden}-{cols}\n")
    print("| loading | step wall (ms) | GPU busy (ms) | GPU idle per step (ms) | GPU busy share |")
    print("|---|---|---|---|---|")
    for label, batches in (("when the step needs it (store.get(device='cuda'))", lambda: (ds.load(i, "cuda") for i in range(steps))),
                           (f"Prefetcher(depth={depth})", lambda: Prefetcher(ds, depth=depth, device="cuda"))):
        wall, busy, n = train(batches())
        print(f"| {label} | {wall / n * 1e3:.1f} | {busy / n * 1e3:.1f} | {(wall - busy) / n * 1e3:.1f} |"
              f" {busy / wall * 100:.0f}% |", flush=True)
    os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
