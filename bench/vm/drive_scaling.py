"""The same filter and whole-tensor reduce over the same data on 1, 2 and 4 drives of one
guest (nvme_csd.open_many, data striped by rows), against reading it all to the host and
using numpy; median seconds of 3 runs. Run by bench/run-drive-scaling.sh (TCG guest: the
drives' work runs on QEMU's host threads, the host side in the emulated CPU)."""
import glob
import os
import statistics
import time

import numpy as np

import nvme_csd

# the NVM namespaces' generic nodes: those whose block device exists
nodes = sorted(f"/dev/ng{b[len('/dev/nvme'):]}" for b in glob.glob("/dev/nvme*n*") if os.path.exists(b))
rng = np.random.default_rng(1)
rec = np.zeros(1 << 19, dtype=[("id", "<u4"), ("v", "<f4")])  # 4 MiB of 8-byte records
rec["id"] = np.arange(rec.size)
rec["v"] = rng.random(rec.size, dtype=np.float32)
x = rng.standard_normal(1 << 20).astype(np.float32)  # 4 MiB


def median_time(fn):
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


print(f"| drives | filter (in drives) | reduce sum (in drives) | filter: get + numpy | reduce: get + numpy |"
      f" bytes to the host, in drives / get |")
print("|---|---|---|---|---|---|")
for n in (1, 2, 4):
    if n > len(nodes):
        break
    with nvme_csd.open_many(nodes[:n]) as ds:
        ds.format()
        ds.put("rec", rec, placement="striped")
        ds.put("x", x, placement="striped")
        f = median_time(lambda: ds.filter("rec", "hot", record_size=8, field_offset=4, field_type=np.float32,
                                          op=">", lo=0.9))
        r = median_time(lambda: ds.reduce("x", "sum"))
        fh = median_time(lambda: (lambda a: a[a["v"] > 0.9])(ds.get("rec").view(rec.dtype).reshape(-1)))
        rh = median_time(lambda: ds.get("x").astype(np.float64).sum())
        print(f"| {n} | {f * 1e3:.0f} ms | {r * 1e3:.0f} ms | {fh * 1e3:.0f} ms | {rh * 1e3:.0f} ms |"
              f" {8 * n} B (reduce), 0 (filter) / {rec.nbytes + x.nbytes} B |", flush=True)
