# SPDX-License-Identifier: MIT
"""nvme-csd demo (runs in the guest): a dataset stored on the drive, the same questions
answered inside the drive and the classic way, compared for time and bus traffic.

Dataset: `sales`, 8M records of four float32 (id, value, region, amount), 128 MiB;
`readings`, a 4096 x 8192 float32 sensor matrix, 128 MiB; `weights`, 1024 x 1024
float32, 4 MiB; `batch`, 256 x 1024 float32, 1 MiB.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

CSDCTL = os.environ.get("CSDCTL", "csdctl")
DEV = os.environ.get("CSD_DEVICE", "/dev/ng0n1")
TMP = "/tmp/demo"
rows = []


def csdctl(*args, quiet=True):
    """Runs csdctl; returns (stdout, bus counters)."""
    p = subprocess.run([CSDCTL, "-d", DEV, "--bus-stats", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"demo: csdctl {' '.join(args)} failed: {p.stderr.strip()}")
    bus = json.loads(p.stderr.strip().splitlines()[-1])
    return p.stdout, bus["bus_bytes_to_device"] + bus["bus_bytes_from_device"]


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def mib(n):
    return f"{n / 1048576:9.2f} MiB"


def record(question, way, seconds, bus):
    rows.append((question, way, seconds, bus))
    print(f"  {way:10s} {seconds:7.2f} s  {mib(bus)} across the bus", flush=True)


def step(msg):
    print(f"== {msg}", flush=True)


os.makedirs(TMP, exist_ok=True)
step("creating the dataset in the guest")
rng = np.random.default_rng(2026)
n = 8 << 20
sales = np.empty((n, 4), dtype=np.float32)
sales[:, 0] = np.arange(n, dtype=np.float32)
sales[:, 1] = rng.random(n, dtype=np.float32)
sales[:, 2] = rng.integers(0, 50, n).astype(np.float32)
sales[:, 3] = rng.random(n, dtype=np.float32) * 100
readings = rng.standard_normal((4096, 8192), dtype=np.float32)
weights = (rng.standard_normal((1024, 1024), dtype=np.float32) / 32).astype(np.float32)
batch = rng.standard_normal((256, 1024), dtype=np.float32)
for name, arr in (("sales", sales), ("readings", readings), ("weights", weights), ("batch", batch)):
    np.save(f"{TMP}/{name}.npy", arr)

step("storing it on the drive with csdctl (object store on the namespace)")
csdctl("format")
for name in ("sales", "readings", "weights", "batch"):
    _, t = timed(lambda: csdctl("put", name, f"{TMP}/{name}.npy"))
    print(f"  put {name:9s} {os.path.getsize(f'{TMP}/{name}.npy') / 1048576:7.1f} MiB in {t:.2f} s", flush=True)
    os.remove(f"{TMP}/{name}.npy")
del readings, weights, batch
print(csdctl("ls")[0], end="")

ok = True
for threshold, label in ((0.99, "1%"), (0.5, "50%")):
    q = f"filter value > {threshold} ({label})"
    step(f"Q: which sales have value > {threshold}? (selectivity {label})")
    (out, bus), t = timed(lambda: csdctl("run", "filter", "sales", "hot", "--record-size", "16",
                                         "--field-offset", "4", "--type", "f32", "--op", "gt",
                                         "--lo", str(threshold)))
    hot_count = int(out.split()[0])
    (_, bus2), t2 = timed(lambda: csdctl("get", "hot", f"{TMP}/hot.npy"))
    record(q, "in-drive", t + t2, bus + bus2)
    drive_hot = np.load(f"{TMP}/hot.npy")

    def classic():
        _, b = csdctl("get", "sales", f"{TMP}/all.npy")
        allrec = np.load(f"{TMP}/all.npy")
        return allrec[allrec[:, 1].astype(np.float64) > threshold], b
    (host_hot, bus3), t3 = timed(classic)
    record(q, "classic", t3, bus3)
    same = hot_count == len(host_hot) and np.array_equal(drive_hot, host_hot)
    print(f"  {hot_count} matching records; in-drive and classic agree: {same}", flush=True)
    ok &= same
    os.remove(f"{TMP}/all.npy")

q = "max and mean of each of 4096 rows"
step(f"Q: {q} of the sensor readings")
(out_max, b1), t1 = timed(lambda: csdctl("run", "reduce", "readings", "--op", "max"))
(out_mean, b2), t2 = timed(lambda: csdctl("run", "reduce", "readings", "--op", "mean"))
record(q, "in-drive", t1 + t2, b1 + b2)
drive_max = np.array(out_max.split(), dtype=np.float64)
drive_mean = np.array(out_mean.split(), dtype=np.float64)


def classic_reduce():
    _, b = csdctl("get", "readings", f"{TMP}/r.npy")
    r = np.load(f"{TMP}/r.npy")
    return (r.max(axis=1), r.astype(np.float64).mean(axis=1)), b
((hmax, hmean), b3), t3 = timed(classic_reduce)
record(q, "classic", t3, b3)
same = np.array_equal(drive_max, hmax.astype(np.float64)) and np.allclose(drive_mean, hmean, atol=1e-9)
print(f"  in-drive and classic agree: {same}", flush=True)
ok &= same
os.remove(f"{TMP}/r.npy")

q = "scores = batch x weights (256x1024x1024)"
step(f"Q: {q}")
(_, b1), t1 = timed(lambda: csdctl("run", "gemm", "batch", "weights", "scores"))
(_, b2), t2 = timed(lambda: csdctl("get", "scores", f"{TMP}/s.npy"))
record(q, "in-drive", t1 + t2, b1 + b2)
drive_scores = np.load(f"{TMP}/s.npy")


def classic_gemm():
    _, b = csdctl("get", "batch", f"{TMP}/b.npy")
    _, c = csdctl("get", "weights", f"{TMP}/w.npy")
    return np.load(f"{TMP}/b.npy") @ np.load(f"{TMP}/w.npy"), b + c
(host_scores, b3), t3 = timed(classic_gemm)
record(q, "classic", t3, b3)
same = np.allclose(drive_scores, host_scores, atol=1e-3)
print(f"  in-drive and classic agree: {same}", flush=True)
ok &= same

step("summary (guest under TCG; device work runs on QEMU's host threads)")
print(f"{'question':44s} {'way':9s} {'time':>8s} {'across the bus':>15s}")
for q, way, s, b in rows:
    print(f"{q:44s} {way:9s} {s:7.2f}s {mib(b):>15s}")
step("device statistics (csdctl stats)")
print("\n| question | way | time | across the bus |\n|---|---|---|---|")  # the same, for plots.py offload
for q, way, s, b in rows:
    print(f"| {q} | {way} | {s:.2f} s | {b / 1048576:.2f} MiB |")
print(csdctl("stats")[0], end="")
print("demo: in-drive and classic answers agree" if ok else "demo: ANSWERS DIFFER")
sys.exit(0 if ok else 1)
