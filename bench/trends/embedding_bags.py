# SPDX-License-Identifier: MIT
"""Embedding bags of a DLRM-like table inside the drive (embedding_bag, 0Ch) against the
host gathering the rows and pooling them: modelled time per batch (RecSSD, ASPLOS'21).

The table (rows of 64-256 f32) is stored on the namespace by nvme_csd.nn.EmbeddingBag;
each batch is B bags of L uniformly random lookups, pooled with mode sum.
- in drive: bag(indices, offsets) - the indices and offsets written to device memory,
  one embedding_bag Execute (the drive reads each distinct block once, in parallel, and
  pools), the pooled rows read back: B rows cross the link.
- host: bag.rows(indices) - the same rows gathered by the drive (gather, 0Bh) and read
  to the host, B x L rows across the link, then pooled on the host (numpy, one thread:
  the sum of each bag's rows; its CPU time (time.thread_time: the pooling thread's own,
  so other work on this shared machine does not count), the best of 5 runs). (The host's best case: one command reads every row;
  a host issuing a Read per row would pay a command each.)
Both read the same blocks from the media. The drive's time is the model's clock (exact=on,
see modelled.py: the advance of the drive's virtual clock over each call); the host's
pooling is this machine's CPU time, measured, and added.
The answers are checked equal (to 1e-4 relative: the drive and torch sum in other orders).

Usage: python3 bench/trends/embedding_bags.py [--drive gen4x4-8core] [--batch 64]
"""
import argparse
import sys
import time

import numpy as np
import torch

import nvme_csd
import nvme_csd.nn

import modelled as M


def measure(drive, rows, dim, bag, batch, batches, work):
    """(in drive, host gather + pool, host pooling alone), seconds per batch."""
    table = torch.randn(rows, dim)
    path = M.namespace(work, f"emb{dim}", rows * dim * 4 + (4 << 20))
    rng = np.random.default_rng(dim * 1000 + bag)
    batches_idx = [torch.from_numpy(rng.integers(0, rows, size=batch * bag)) for _ in range(batches)]
    offsets = torch.arange(0, batch * bag, bag)
    with nvme_csd.open(M.spec(path, M.params(drive), slm="64M", lba=4096)) as dev:
        emb = nvme_csd.nn.EmbeddingBag.from_pretrained(table, device=dev, mode="sum")
        emb(batches_idx[0], offsets)  # a batch of each kind first, untimed, as a running model would be
        emb.rows(batches_idx[0])
        td = th = tp = 0.0
        for idx in batches_idx:
            y, t = M.clock(lambda: emb(idx, offsets), (dev,))
            td += t
            r, t = M.clock(lambda: emb.rows(idx), (dev,))
            rows_np = r.numpy()
            pool = float("inf")
            for _ in range(5):  # CPU time of this thread, best of 5: this machine is shared
                t0 = time.thread_time()
                ref = rows_np.reshape(batch, bag, dim).sum(axis=1, dtype=np.float32)
                pool = min(pool, time.thread_time() - t0)
            th += t + pool
            tp += pool
            assert np.allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4), "the drive's bags differ from the host's"
    return td / batches, th / batches, tp / batches


def main(argv=None):
    """Prints the table (docs/perf.md); returns its rows (dim, bag, in drive, host, pooling)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drive", default="gen4x4-8core")
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--bags", default="20,50,100")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=3)
    args = ap.parse_args(argv)
    torch.manual_seed(31)
    work = M.workdir()
    rows = []
    print(f"modelled time per batch of {args.batch} bags, {args.drive} (timing model, exact=on: the drive's "
          "virtual clock; host pooling: its CPU time on this machine)")
    for dim in (int(x) for x in args.dims.split(",")):
        for bag in (int(x) for x in args.bags.split(",")):
            td, th, tp = measure(args.drive, args.rows, dim, bag, args.batch, args.batches, work)
            rows.append((dim, bag, td, th, tp))
            print(f"dim {dim:3d} bag {bag:3d}: in drive {M.us(td):>12s}  host {M.us(th):>12s} (pooling {M.us(tp)})"
                  f"  gain {th / td:4.2f}x", flush=True)
    print(f"\n| row (f32) | lookups per bag | rows across the link: in drive / host | in drive | host gather + pool "
          "(pooling) | gain |")
    print("|---|---|---|---|---|---|")
    for dim, bag, td, th, tp in rows:
        kib = dim * 4 * args.batch / 1024
        print(f"| {dim} | {bag} | {kib:g} / {kib * bag:g} KiB | {M.us(td)} | {M.us(th)} ({M.us(tp)}) | "
              f"**{th / td:.2f}×** |")
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
