# SPDX-License-Identifier: MIT
"""Dependent lookups (an index walk where each read names the next) in the drive against
the host issuing each read: modelled time per lookup against the tree's depth (XRP,
OSDI'22), and across NVMe/TCP against the round-trip time (BPF-oF, 2023).

A tree of depth d is stored on the namespace (4 KiB nodes: u32 count, u32 leaf flag, then
(u64 key, u64 child LBA or value) pairs sorted by key; fanout 4). A lookup reads d nodes.

- host: the host reads each node with an NVM Read (02h) and picks the child itself; every
  level pays a whole command: the host's submission and completion path
  (host-latency-ns: the kernel's storage stack, or the fabric's round trip), the link's
  per-command latency, the media read and the transfer.
- in drive: the walk inside one command. The drive's pointer-chase mode (issue 31 item 3)
  is not on main yet, so the walk is modelled as d chained single-block gathers (0Bh)
  issued one after another, the first on the drive as the host sees it (it pays the host's
  and the link's per-command latency once), the other d-1 on the same drive with
  host-latency-ns and link-latency-ns 0: the hops that stay inside the drive, each a media
  read of one block into device memory plus the gather's compute-unit time. The host
  knows the path (it built the tree); each hop's block is checked to be the node the
  walk needs, and the leaf's value is checked against the key.

Usage: python3 bench/trends/dependent_lookups.py [--fabric] [--lookups N] [--scale S]
"""
import argparse
import sys

import numpy as np

import nvme_csd
from nvme_csd.nn import _core_programs

import modelled as M

BLOCK = 4096
FANOUT = 4


def build_tree(depth, seed=31):
    """(nodes as bytes in LBA order, root LBA, keys, values): a tree of depth levels."""
    rng = np.random.default_rng(seed)
    n = FANOUT ** depth
    keys = np.sort(rng.choice(1 << 40, size=n, replace=False)).astype(np.uint64)
    values = rng.integers(1, 1 << 62, size=n, dtype=np.uint64)
    nodes = []

    def node(pairs, leaf):
        b = np.zeros(BLOCK, np.uint8)
        b[:8] = np.array([len(pairs), leaf], "<u4").view(np.uint8)
        b[8:8 + 16 * len(pairs)] = np.asarray(pairs, "<u8").reshape(-1).view(np.uint8)
        nodes.append(b)
        return len(nodes) - 1

    level = [(keys[i], node(list(zip(keys[i:i + FANOUT], values[i:i + FANOUT])), 1)) for i in range(0, n, FANOUT)]
    while len(level) > 1:
        level = [(level[i][0], node(level[i:i + FANOUT], 0)) for i in range(0, len(level), FANOUT)]
    return np.concatenate(nodes), level[0][1], keys, values


def parse(block, key):
    """(leaf?, child LBA or value) for key in one node."""
    n, leaf = (int(x) for x in block[:8].view("<u4"))
    ent = block[8:8 + 16 * n].view("<u8").reshape(n, 2)
    i = int(np.searchsorted(ent[:, 0], np.uint64(key), side="right")) - 1
    if leaf and ent[i, 0] != key:
        raise KeyError(key)
    return bool(leaf), int(ent[i, 1])


def host_walk(dev, root, key, buf):
    """The value of key, the host reading each node (NVM Read) and choosing the child."""
    P, lba = _core_programs(), root
    while True:
        P.read_blocks_into(dev._dev, lba, buf)
        leaf, nxt = parse(buf, key)
        if leaf:
            return nxt
        lba = nxt


def path_of(nodes, root, key):
    """The LBAs a lookup of key reads, root first."""
    lbas, lba = [], root
    while True:
        lbas.append(lba)
        leaf, nxt = parse(nodes[lba * BLOCK:(lba + 1) * BLOCK], key)
        if leaf:
            return lbas
        lba = nxt


def drive_walk(first, hops, path, ent_first, ent_hops, out_first, out_hops):
    """The walk as chained single-block gathers: the first on the drive as the host sees
    it, the rest on the drive's inside (no host or link latency)."""
    P = _core_programs()
    for i, lba in enumerate(path):
        dev, ent, out = (first, ent_first, out_first) if i == 0 else (hops, ent_hops, out_hops)
        e = np.array([(lba, 0, BLOCK)], dtype=[("lba", "<u8"), ("offset", "<u4"), ("length", "<u4")]).view(np.uint8)
        ent_host = ent.numpy(copy=False)  # the in-process device's SLM: writing it is no command
        ent_host[:16] = e
        P.gather(dev._dev, ent.range(16), 1, out.range(BLOCK))
    return out_hops if len(path) > 1 else out_first


def measure(p, depth, lookups, scale, work):
    """Modelled seconds per lookup (host, in drive) and the host overhead per lookup."""
    nodes, root, keys, values = build_tree(depth)
    path = M.namespace(work, f"tree{depth}", max(len(nodes), 1 << 20))
    with open(path, "r+b") as f:
        f.write(nodes.tobytes())
    rng = np.random.default_rng(depth)
    pick = rng.integers(0, keys.size, size=lookups)
    hop_p = dict(p, **{"host-latency-ns": 0, "link-latency-ns": 0})
    out = {}
    for name, q, s in (("model", p, scale), ("off", None, 1)):
        spec_first = M.spec(path, q, s, slm="4M", lba=BLOCK) if q else f"emu:{path}?slm=4M&lba={BLOCK}"
        spec_hops = M.spec(path, hop_p, s, slm="4M", lba=BLOCK) if q else f"emu:{path}?slm=4M&lba={BLOCK}"
        with nvme_csd.open(spec_first) as first, nvme_csd.open(spec_hops) as hops:
            buf = np.empty(BLOCK, np.uint8)
            bufs = [d.alloc(BLOCK) for d in (first, hops, first, hops)]
            th = td = 0.0
            key = int(keys[pick[0]])  # a walk of each kind first: the drives' threads start
            host_walk(first, root, key, buf)
            drive_walk(first, hops, path_of(nodes, root, key), bufs[0], bufs[1], bufs[2], bufs[3])
            o0 = M.left_overruns
            for i in pick:
                key = int(keys[i])
                v, t = M.clock(lambda: host_walk(first, root, key, buf), s, (first,) if q else ())
                assert v == int(values[i]), "the host's walk found another value"
                th += t
                lbas = path_of(nodes, root, key)
                leaf, t = M.clock(lambda: drive_walk(first, hops, lbas, bufs[0], bufs[1], bufs[2], bufs[3]), s,
                                  (first, hops) if q else ())
                assert parse(leaf.numpy(), key)[1] == int(values[i]), "the drive's walk found another value"
                td += t
            overruns = M.left_overruns - o0
            for b in bufs:
                b.free()
        out[name] = (th / lookups, td / lookups, overruns)
    (th, td, overruns), (oh, od, _) = out["model"], out["off"]
    return th, td, (oh / scale, od / scale), overruns


def sweep_depth(drives, depths, lookups, scale, host_ns):
    rows = []
    work = M.workdir()
    for drive in drives:
        p = M.params(drive, host_latency_ns=host_ns)
        for d in depths:
            th, td, ov, overruns = measure(p, d, lookups, scale, work)
            rows.append((drive, d, th, td, ov, overruns))
            print(f"{drive:14s} depth {d}: host {M.us(th):>12s}  in drive {M.us(td):>12s}  gain {th / td:4.2f}x"
                  f"  (host overhead {M.us(ov[0])} / {M.us(ov[1])}, overruns {overruns})", flush=True)
    return rows


def sweep_rtt(drive, depth, rtts_us, lookups, scale):
    rows = []
    work = M.workdir()
    for rtt in rtts_us:
        p = M.params(drive, host_latency_ns=int(rtt * 1000))
        s = min(scale, 1e9 / max(p["media-read-latency-ns"], p["host-latency-ns"], 1))  # latencies <= 1 s
        th, td, ov, overruns = measure(p, depth, lookups, s, work)
        rows.append((rtt, th, td, ov, overruns, s))
        print(f"{drive} RTT {rtt:7.1f} us depth {depth}: host {M.us(th):>12s}  in drive {M.us(td):>12s}"
              f"  gain {th / td:4.2f}x  (x{s:g}, host overhead {M.us(ov[0])} / {M.us(ov[1])}, overruns {overruns})",
              flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", action="store_true", help="across NVMe/TCP: the gain against the round trip")
    ap.add_argument("--lookups", type=int, default=10)
    ap.add_argument("--scale", type=float, default=1000)
    ap.add_argument("--depths", default="1,2,3,4,5,6")
    ap.add_argument("--host-ns", type=int, default=5000, help="host-latency-ns of the local drive")
    ap.add_argument("--rtts", default="0,10,25,50,100,250,500,1000,2500", help="round trips, us")
    args = ap.parse_args(argv)
    depths = [int(x) for x in args.depths.split(",")]
    print("modelled time per lookup (timing model, dilated; docs/perf.md)")
    if args.fabric:
        rows = sweep_rtt("nvme-tcp-gen4", depths[-1], [float(x) for x in args.rtts.split(",")], args.lookups,
                         args.scale)
        print("\n| round trip (host-latency-ns) | host: a command per level | in drive: one command | gain |")
        print("|---|---|---|---|")
        for rtt, th, td, ov, overruns, s in rows:
            print(f"| {rtt:g} µs | {M.us(th)} | {M.us(td)} | **{th / td:.2f}×** |")
        return rows
    rows = sweep_depth(["ll-nand-gen5", "gen4x4-8core"], depths, args.lookups, args.scale, args.host_ns)
    print("\n| drive | depth | host: a command per level | in drive: one command | gain |")
    print("|---|---|---|---|---|")
    for drive, d, th, td, ov, overruns in rows:
        print(f"| {drive} | {d} | {M.us(th)} | {M.us(td)} | **{th / td:.2f}×** |")
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
