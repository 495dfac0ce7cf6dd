#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Data-parallel training with torch.distributed over the drives of a DriveSet: each rank
reads its own shard from its own drive, and PyTorch's DistributedDataParallel does the rest.

The training set is written once through a DriveSet as striped tensors (docs/drive-set.md):
chunk j's rows are split into one block per drive, block i stored on drive i as
"chunk<j>@i/N". Rank i then opens only drive i and reads only its blocks (a StoreDataset
over "chunk<j>@i/N", loaded by a Prefetcher that batches and collates them), so no rank
reads another's data and nothing crosses between drives; the gradients are averaged by
DistributedDataParallel (gloo on the CPU, NCCL on GPUs). Every rank visits the chunks in
the same shuffled order (a sampler seeded by the epoch), so step k of every rank works on
its part of the same rows.

    python3 examples/python/ddp_train.py --drives emu:/tmp/d0.img?size=64M emu:/tmp/d1.img?size=64M
    torchrun --nproc-per-node 2 examples/python/ddp_train.py --drives /dev/ng0n1 /dev/ng1n1 --device cuda

Without torchrun it starts one process per drive itself (spawned). It prints each rank's
loss per epoch, the bytes each rank read from its drive, and checks at the end that every
rank holds the same parameters.
"""

import argparse
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import nvme_csd
from nvme_csd.data import Prefetcher, StoreDataset

FEATURES = 16



def say(line: str) -> None:
    """Writes one line to stdout in a single write (the ranks share the stream: print's line and
    newline may go as two writes, and another rank's line then lands between them)."""
    os.write(sys.stdout.fileno(), (line + "\n").encode())

def prepare(drives, chunks, rows, seed=0):
    """Writes the training set through a DriveSet: `chunks` striped tensors of `rows` rows,
    each row FEATURES inputs and a target from a fixed linear model plus noise."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(FEATURES).astype(np.float32)
    with nvme_csd.open_many(drives) as ds:
        ds.format(force=True)  # the drives named in --drives are the training set's (--no-prepare keeps them)
        for j in range(chunks):
            x = rng.standard_normal((rows, FEATURES)).astype(np.float32)
            y = x @ w + 0.5 + 0.01 * rng.standard_normal(rows).astype(np.float32)
            ds.put(f"chunk{j}", np.concatenate([x, y[:, None]], axis=1), placement="striped")
        assert all(ds.striped(f"chunk{j}") for j in range(chunks))


class EpochShuffle(torch.utils.data.Sampler):
    """The same random order of n items on every rank, a new one each epoch (set_epoch)."""

    def __init__(self, n, seed=0):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch):
        """Chooses the order of the next pass."""
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=g).tolist())

    def __len__(self):
        return self.n


def train(rank, world, args):
    """One rank: its drive, its shard, DDP over the rest."""
    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo", init_method=args.init_method, rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank % torch.cuda.device_count()}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same initial model on every rank (DDP also broadcasts rank 0's)

    drive = args.drives[rank]  # this rank's own drive: blocks i of every striped chunk
    ds = StoreDataset(drive, [f"chunk{j}@{rank}/{world}" for j in range(args.chunks)])
    sampler = EpochShuffle(len(ds))
    land = "cuda" if cuda and nvme_csd.gpu.available() else "cpu"  # straight into GPU memory where built so
    loader = Prefetcher(ds, depth=2, device=land, sampler=sampler, batch_size=args.batch, collate_fn=torch.cat)

    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1).to(device),
                                    device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, n = 0.0, 0
        for batch in loader:
            batch = batch.to(device, non_blocking=True)
            x, y = batch[:, :FEATURES], batch[:, FEATURES:]
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()  # DDP averages the gradients over the ranks here
            opt.step()
            total, n = total + loss.item() * len(batch), n + len(batch)
        say(f"rank {rank} epoch {epoch}: loss {total / n:.6f} over {n} rows")

    cmds, _, read = ds.dev.bus()
    say(f"rank {rank}: read {read} bytes in {cmds} commands from its drive {drive}")
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(device)
    every = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    if rank == 0:
        same = all(torch.equal(every[0], e) for e in every)
        say(f"parameters {'equal' if same else 'DIFFER'} on every rank; final loss {total / n:.6f}")
    ds.close()
    dist.destroy_process_group()


def free_port():
    """A TCP port free on this host now, for the process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    """Parses the options; prepares the drives and starts a rank per drive, or runs one
    rank under torchrun."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drives", nargs="+", required=True, help="one drive per rank (paths as nvme_csd.open takes)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--chunks", type=int, default=8, help="striped tensors in the training set")
    ap.add_argument("--rows", type=int, default=256, help="rows per chunk (over every drive)")
    ap.add_argument("--batch", type=int, default=2, help="chunks' blocks per step")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--no-prepare", action="store_true", help="the drives already hold the training set")
    args = ap.parse_args(argv)
    if "RANK" in os.environ:  # under torchrun: this process is one rank; rank 0 prepared nothing
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if len(args.drives) != world:
            sys.exit(f"ddp_train: {world} ranks but {len(args.drives)} drives")
        args.init_method = "env://"
        train(rank, world, args)
        return
    world = len(args.drives)
    if not args.no_prepare:
        prepare(args.drives, args.chunks, args.rows)
    args.init_method = f"tcp://127.0.0.1:{free_port()}"
    mp.spawn(train, args=(world, args), nprocs=world, join=True)


if __name__ == "__main__":
    main()
