#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Bytes into GPU memory: what a user writes without this project against the drive's own
paths, side by side in one run, per size (issue 15, docs/perf.md).

  (a) torch      the bytes in a file (page cache warm): np.fromfile, torch.from_numpy(x).cuda()
  (b) pinned     the same, through x.pin_memory() first (what a careful user adds)
  (c) ceiling    cudaMemcpy from a pinned buffer already holding the bytes (no read at all)
  (d) object     dev.store object -> GPU: object_to_cuda (namespace reads through pinned buffers)
  (e) pipeline   SLM -> GPU through the staged pinned pipeline (slm_to_cuda(direct=False)):
                 the path a drive's SLM Read takes
  (f) registered SLM registered with CUDA (slm_to_cuda(direct=True)): IN-PROCESS DEVICE ONLY,
                 its SLM is host memory; no drive can take this path

Each cell is the median GB/s (10^9 bytes/s) of several runs, every result checked against
the source bytes on the GPU. Usage: landing_vs_torch.py [MAX_MIB] [WORKDIR] [CHUNK_MIB,BUFFERS,READERS|default ...]:
(d) and (e) are measured once per pipeline configuration given (default: the library's).
Beside the table it draws the curves against the ceiling (python/demo/plots.py) into
$CSD_PLOT (default build/plots/gpu-landing.png; "" for none; skipped without matplotlib).
"""
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

import nvme_csd
from nvme_csd import gpu

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "python", "demo"))
import plots  # noqa: E402

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]


def timed(fn, runs):
    """Median seconds of fn() over runs (each synchronised), and its last result."""
    times, out = [], None
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main():
    max_bytes = (int(sys.argv[1]) if len(sys.argv) > 1 else 1024) << 20
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="csd-gpu-bench-")
    configs = [None if c == "default" else tuple(int(v) for v in c.split(",")) for c in sys.argv[3:]] or [None]
    sizes = [s for s in SIZES if s <= max_bytes]
    top = max(sizes)
    img = os.path.join(work, "ns.img")
    if os.path.exists(img):
        os.unlink(img)
    dev = nvme_csd.open(f"emu:{img}?size={3 * top // (1 << 20) + 64}M&slm={top // (1 << 20) + 64}M&cu=2")
    dev.store.format()
    print(f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}; median GB/s of 5-30 runs; "
          "every result compared with the source bytes on the GPU")
    cols = ["in memory .cuda()", "torch (a)", "pinned (b)", "ceiling (c)"]
    for c in configs:
        tag = f" {c[0]} MiB×{c[1]}, {c[2]} readers" if c else " (library defaults)"
        cols += [f"object (d){tag}", f"pipeline (e){tag}"]
    cols.append("registered (f, in-process only)")
    header = ["size", *cols, "best (d)/(a)", "best (e)/(a)", "best (d)/(c)", "best (e)/(c)"]
    table = []
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * (len(cols) + 5))
    for size in sizes:
        runs = 30 if size <= (1 << 20) else 10 if size <= (64 << 20) else 5
        src = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
        path = os.path.join(work, f"obj-{size}.bin")
        src.tofile(path)
        np.fromfile(path, dtype=np.uint8)  # page cache warm for (a) and (b)
        want = torch.from_numpy(src).cuda()
        name = f"obj-{size}"
        dev.store[name] = src
        slm = dev.to_slm(src)

        def torch_path():
            return torch.from_numpy(np.fromfile(path, dtype=np.uint8)).cuda()

        def pinned_path():
            return torch.from_numpy(np.fromfile(path, dtype=np.uint8)).pin_memory().cuda()

        host = torch.from_numpy(src).pin_memory()
        out = torch.empty(size, dtype=torch.uint8, device="cuda")

        def ceiling_path():
            out.copy_(host, non_blocking=True)
            return out

        def configured(c, fn):
            def run():
                return fn()
            run.config = c
            return run

        paths = [lambda: torch.from_numpy(src).cuda(), torch_path, pinned_path, ceiling_path]
        for c in configs:
            paths += [configured(c, lambda: gpu.object_to_cuda(dev, name)),
                      configured(c, lambda: gpu.slm_to_cuda(dev, slm, direct=False))]
        paths.append(lambda: gpu.slm_to_cuda(dev, slm, direct=True))
        results = {}
        for col, fn in zip(cols, paths):
            c = getattr(fn, "config", None)
            if c:
                gpu.configure(dev, chunk_mib=c[0], buffers=c[1], readers=c[2])
            elif hasattr(fn, "config"):
                gpu.configure(dev)
            fn()  # warm-up: allocations, registration, page cache
            secs, got = timed(fn, runs)
            if not torch.equal(got.view(torch.uint8).flatten(), want):
                raise SystemExit(f"{col} at {size} bytes delivered other bytes")
            results[col] = size / secs / 1e9
        slm.free()
        del dev.store[name]
        os.unlink(path)
        a, c = results[cols[1]], results[cols[3]]
        d, e = max(results[k] for k in cols if "(d)" in k), max(results[k] for k in cols if "(e)" in k)
        label = f"{size >> 30} GiB" if size >= 1 << 30 else f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        table.append([label, *(f"{results[k]:.2f}" for k in cols),
                      f"{d / a:.1f}×", f"{e / a:.1f}×", f"{100 * d / c:.0f} %", f"{100 * e / c:.0f} %"])
        print("| " + " | ".join(table[-1]) + " |", flush=True)
    dev.close()
    plot = os.environ.get("CSD_PLOT", os.path.join(TOP, "build", "plots", "gpu-landing.png"))
    if plot:
        plots.landing((header, table), plot)


if __name__ == "__main__":
    main()
