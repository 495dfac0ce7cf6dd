# SPDX-License-Identifier: MIT
"""The same filter and whole-tensor reduce over the same data on 1, 2 and 4 drives of one
guest (nvme_csd.open_many, data striped by rows), against reading it all to the host and
using numpy; median seconds of 3 runs, bytes over the bus counted by the library. Run by
bench/run-drive-scaling.sh (TCG guest: the drives' work runs on QEMU's host threads, the
host side in the emulated CPU). bench/vm/fabric_timing.py measures the same operations."""
import glob
import os
import statistics
import time

import numpy as np

import nvme_csd

rng = np.random.default_rng(1)
rec = np.zeros(1 << 19, dtype=[("id", "<u4"), ("v", "<f4")])  # 4 MiB of 8-byte records
rec["id"] = np.arange(rec.size)
rec["v"] = rng.random(rec.size, dtype=np.float32)
x = rng.standard_normal(1 << 20).astype(np.float32)  # 4 MiB


def median_time(fn):
    """Median seconds of three calls of fn."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bus_moved(ds, fn):
    """(NVMe commands, bytes both ways) between the host and the drives of ds in one call of fn."""
    c0, t0, f0 = ds.bus()
    fn()
    c1, t1, f1 = ds.bus()
    return c1 - c0, (t1 - t0) + (f1 - f0)


def operations(ds):
    """The four measured operations on a prepared set: filter and reduce in the drives,
    and the same by reading everything to the host and using numpy."""
    return {
        "filter": lambda: ds.filter("rec", "hot", record_size=8, field_offset=4, field_type=np.float32,
                                    op=">", lo=0.9),
        "reduce": lambda: ds.reduce("x", "sum"),
        "filter_host": lambda: (lambda a: a[a["v"] > 0.9])(ds.get("rec").view(rec.dtype).reshape(-1)),
        "reduce_host": lambda: ds.get("x").astype(np.float64).sum(),
    }


def prepare(ds):
    """Formats the set and stores the benchmark's table and tensor, striped."""
    ds.format(force=True)  # the guest's drives may hold an earlier run's store
    ds.put("rec", rec, placement="striped")
    ds.put("x", x, placement="striped")


def main():
    # the NVM namespaces' generic nodes: those whose block device exists
    nodes = sorted(f"/dev/ng{b[len('/dev/nvme'):]}" for b in glob.glob("/dev/nvme*n*") if os.path.exists(b))
    print("| drives | filter (in drives) | reduce sum (in drives) | filter: get + numpy | reduce: get + numpy |"
          " bytes over the bus: filter, reduce in drives / get |")
    print("|---|---|---|---|---|---|")
    for n in (1, 2, 4):
        if n > len(nodes):
            break
        with nvme_csd.open_many(nodes[:n]) as ds:
            prepare(ds)
            ops = operations(ds)
            t = {k: median_time(fn) for k, fn in ops.items()}
            b = {k: bus_moved(ds, fn)[1] for k, fn in ops.items()}
            print(f"| {n} | {t['filter'] * 1e3:.0f} ms | {t['reduce'] * 1e3:.0f} ms | {t['filter_host'] * 1e3:.0f} ms |"
                  f" {t['reduce_host'] * 1e3:.0f} ms | {b['filter']:,} B, {b['reduce']:,} B / {b['reduce_host']:,} B |",
                  flush=True)


if __name__ == "__main__":
    main()
