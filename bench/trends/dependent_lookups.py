# SPDX-License-Identifier: MIT
"""Dependent lookups (an index walk where each read names the next) in the drive against
the host issuing each read: modelled time per lookup against the tree's depth (XRP,
OSDI'22), and across NVMe/TCP against the round-trip time (BPF-oF, 2023).

A B+-tree of the chase example (spec/csd_btree.h: one node per block, fanout F, the
keys' count F^d so that its depth is exactly d) written on the namespace by libcsd
(csd::btree_write), with random keys and values.
- host: the host reads each node with an NVM Read (02h) and picks the child itself (the
  node format parsed by numpy); every level pays a whole command: the host's submission
  and completion path (host-latency-ns: the kernel's storage stack, or the fabric's round
  trip), the link's per-command latency, the media read and the block's transfer.
- in drive: one Execute of examples/bpf/btree_lookup.o in chase mode (mode 3): the drive
  reads the root, runs the program on it, follows the LBA it answers, d blocks in all;
  the answer comes back in the completion. The command pays the host's and the link's
  latency once, each hop a media read of one block and a program record (docs/timing-model.md).
- libcsd's lookup (nvme_csd.btree.BTree.lookup, csd::btree_lookup): the same one Execute,
  its value from the completion (the hop count is read back only when asked for).
Times are the model's clock (exact=on, see modelled.py): the advance of the drive's virtual
clock over each lookup, the sum of its commands' modelled times (the host's numpy choosing
a child between two reads is not on it: the host's path is host-latency-ns).
Every lookup's answer is checked three ways: the drive's, the host walk's, the key's value
(and the drive's hop count against d); a key that is absent, untimed, likewise.

Usage: python3 bench/trends/dependent_lookups.py [--fabric] [--lookups N] [--depths 1,2,3]
"""
import argparse
import os
import pathlib
import sys

import numpy as np

import nvme_csd
from nvme_csd import _core
from nvme_csd.btree import RECORD_SIZE, BTree
from nvme_csd.wire import PROGRAM_MODES

import modelled as M

TOP = pathlib.Path(__file__).resolve().parents[2]
BPF = pathlib.Path(os.environ.get("CSD_BPF_DIR") or TOP / "build/meson/examples/bpf")
FANOUT_MAX = 31  # entries a node holds (btree.h BT_FANOUT): keys, then values, after kind and count
FOUND, VALUE_MASK = 1 << 62, (1 << 61) - 1


def tree_pairs(fanout, depth):
    """(keys ascending, values) of a full tree of that depth: fanout^depth random pairs."""
    rng = np.random.default_rng(depth)
    n = fanout ** depth
    keys = np.sort(rng.choice(1 << 40, size=n, replace=False)).astype(np.uint64)
    values = rng.integers(1, 1 << 61, size=n, dtype=np.uint64)
    return keys, values


def host_walk(dev, root, key, buf):
    """The value of key or None, the host reading each node (NVM Read) and choosing the
    child as btree_lookup.c does; (value, blocks read)."""
    lba, hops = root, 0
    while True:
        _core.programs.read_blocks_into(dev._dev, lba, buf)
        hops += 1
        kind, count = (int(x) for x in buf[:8].view("<u4"))
        words = buf[8:8 + 16 * FANOUT_MAX].view("<u8")
        keys, vals = words[:count], words[FANOUT_MAX:FANOUT_MAX + count]
        i = int(np.searchsorted(keys, np.uint64(key), side="right")) - 1
        if kind == 2:  # leaf
            return (int(vals[i]) if i >= 0 and int(keys[i]) == key else None), hops
        if kind != 1 or i < 0:
            return None, hops
        lba = int(vals[i])


def drive_walk(dev, prog, tree, key, out):
    """The value of key or None: one Execute of the lookup in chase mode; (value, blocks
    read), the hops read from the in-process device's memory (no command)."""
    dw0, dw1 = _core.programs.downloaded(dev._dev, prog.id, PROGRAM_MODES["chase"], out.range(), (0, 0),
                                         max(tree.depth, 1), [tree.root_lba, key])
    v = dw0 | dw1 << 32
    return (v & VALUE_MASK if v & FOUND else None), int(out.numpy(copy=False)[8:12].view("<u4")[0])


def build(work, fanout, depth, lba):
    """(namespace path, BTree layout, keys, values) of a tree of depth written with the model off."""
    keys, values = tree_pairs(fanout, depth)
    blocks = sum(fanout ** i for i in range(depth))  # the leaves up to the root
    path = M.namespace(work, f"tree{fanout}-{depth}-{lba}", max(blocks * lba, 1 << 20))
    with nvme_csd.open(f"emu:{path}?slm=4M&lba={lba}") as dev:
        root, nblocks, got = _core.programs.btree_write(dev._dev, keys.tolist(), values.tolist(), 0, fanout)
    assert got == depth and nblocks == blocks, (fanout, depth, got, nblocks)
    return path, BTree(None, root, got), keys, values


def measure(p, fanout, depth, lookups, work, lba, libcsd=True):
    """Modelled seconds per lookup: host, in drive, libcsd's lookup (None unless asked)."""
    path, tree, keys, values = build(work, fanout, depth, lba)
    pick = np.random.default_rng(depth + 100).integers(0, keys.size, size=lookups)
    absent = int(keys[0]) - 1 if int(keys[0]) else int(keys[-1]) + 1
    with nvme_csd.open(M.spec(path, p, slm="4M", lba=lba)) as dev, \
            dev.load_program(BPF / "btree_lookup.o", RECORD_SIZE) as prog:
        t = BTree(prog, tree.root_lba, tree.depth)
        buf = np.empty(lba, np.uint8)
        res = dev.alloc(16)
        # untimed: an absent key each way, and a walk of each kind (the drive's threads start)
        assert host_walk(dev, t.root_lba, absent, buf)[0] is None
        assert drive_walk(dev, prog, t, absent, res)[0] is None and t.lookup(absent) is None
        th = td = tl = 0.0
        for i in pick:
            key, want = int(keys[i]), int(values[i])
            (v, hops), dt = M.clock(lambda: host_walk(dev, t.root_lba, key, buf), (dev,))
            assert (v, hops) == (want, depth), ("the host's walk", key, v, hops)
            th += dt
            (v, hops), dt = M.clock(lambda: drive_walk(dev, prog, t, key, res), (dev,))
            assert (v, hops) == (want, depth), ("the drive's chase", key, v, hops)
            td += dt
            if libcsd:
                v, dt = M.clock(lambda: t.lookup(key), (dev,))
                assert v == want, ("BTree.lookup", key, v)
                tl += dt
        res.free()
    return th / lookups, td / lookups, tl / lookups if libcsd else None


def sweep_depth(drives, depths, fanout, lookups, host_ns, lba):
    """Rows (drive, depth, host, in drive, libcsd's lookup), seconds per lookup."""
    rows = []
    work = M.workdir()
    for drive in drives:
        p = M.params(drive, host_latency_ns=host_ns)
        for d in depths:
            th, td, tl = measure(p, fanout, d, lookups, work, lba)
            rows.append((drive, d, th, td, tl))
            print(f"{drive:14s} depth {d}: host {M.us(th):>12s}  in drive {M.us(td):>12s}  gain {th / td:4.2f}x"
                  f"  (libcsd lookup {M.us(tl)})", flush=True)
    return rows


def sweep_rtt(drive, depth, fanout, rtts_us, lookups, lba):
    """Rows (round trip in us, host, in drive), seconds per lookup."""
    rows = []
    work = M.workdir()
    for rtt in rtts_us:
        p = M.params(drive, host_latency_ns=int(rtt * 1000))
        th, td, _ = measure(p, fanout, depth, lookups, work, lba, libcsd=False)
        rows.append((rtt, th, td))
        print(f"{drive} RTT {rtt:7.1f} us depth {depth}: host {M.us(th):>12s}  in drive {M.us(td):>12s}"
              f"  gain {th / td:4.2f}x", flush=True)
    return rows


def main(argv=None):
    """Prints the depth table, or with --fabric the round-trip one (docs/perf.md); returns its rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", action="store_true", help="across NVMe/TCP: the gain against the round trip")
    ap.add_argument("--lookups", type=int, default=10)
    ap.add_argument("--depths", default="1,2,3,4,5,6", help="tree depths (--fabric: the last)")
    ap.add_argument("--fanout", type=int, default=8, help="entries per node (2-31); a tree of depth d holds fanout^d keys")
    ap.add_argument("--lba", type=int, default=512, help="block size: one node a block (BPF-KV's 512-byte nodes)")
    ap.add_argument("--host-ns", type=int, default=5000, help="host-latency-ns of the local drive")
    ap.add_argument("--rtts", default="0,10,25,50,100,250,500,1000,2500", help="round trips, us")
    args = ap.parse_args(argv)
    if not (BPF / "btree_lookup.o").exists():
        sys.exit(f"dependent_lookups: no {BPF}/btree_lookup.o (meson compile -C build/meson bpf-example-btree_lookup, "
                 "or CSD_BPF_DIR)")
    depths = [int(x) for x in args.depths.split(",")]
    print(f"modelled time per lookup (timing model, exact=on: the drive's virtual clock; docs/perf.md); "
          f"B+-tree fanout {args.fanout}, {args.lba}-byte nodes, {args.lookups} lookups per row")
    if args.fabric:
        rows = sweep_rtt("nvme-tcp-gen4", depths[-1], args.fanout, [float(x) for x in args.rtts.split(",")],
                         args.lookups, args.lba)
        print("\n| round trip (host-latency-ns) | host: a command per level | in drive: one chase | gain |")
        print("|---|---|---|---|")
        for rtt, th, td in rows:
            print(f"| {rtt:g} µs | {M.us(th)} | {M.us(td)} | **{th / td:.2f}×** |")
        return rows
    rows = sweep_depth(["ll-nand-gen5", "gen4x4-8core"], depths, args.fanout, args.lookups, args.host_ns,
                       args.lba)
    print("\n| drive | depth (keys) | host: a command per level | in drive: one chase | gain "
          "| libcsd's lookup (+ result read) |")
    print("|---|---|---|---|---|---|")
    for drive, d, th, td, tl in rows:
        print(f"| {drive} | {d} ({args.fanout ** d:,}) | {M.us(th)} | {M.us(td)} | **{th / td:.2f}×** | {M.us(tl)} |")
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
