# SPDX-License-Identifier: MIT
"""Guest test: the timing model (csd.model.* in timing-model.sh's header) measured on the
guest's own clock. Each workload is bounded by one resource; its modelled time is worked out
here from the parameters (docs/timing-model.md) and the measurement must land within the
tolerance below. The device was started with:
  link 0.005 GB/s (200 ns a byte), 50 us a command; media read 0.1 GB/s after 30 ms, write
  0.1 GB/s after 0.5 ms; SLM 1 GB/s; 2 compute units of 0.125 GFLOP/s, 0.2 GB/s streaming.
"""
import json
import os
import struct
import subprocess
import time

from csd_guest import *

c = Checks()
KiB, MiB = 1 << 10, 1 << 20
LBA = 4096
LINK_NS, LAT_NS = 200, 50_000                  # per byte, per command
MEDIA_READ_NS, MEDIA_READ_LAT = 10, 30_000_000
SLM_NS = 1
UNIT_FLOPS_PER_NS = 0.125

# Tolerance. The model holds each completion until its modelled finish, so a measurement
# is never shorter than the model, less the guest clock's error (well under 0.5%). It is
# longer by the guest's own cost of submitting and completing a command under TCG: about
# 0.1-0.8 ms a command on the 2-core CI machine (docs/timing-model.md, "Accuracy"), hence
# a 30 ms media latency, so that a QD1 read (30.5 ms) carries it within 3%. Every
# workload below takes 10 ms or more: within -0.5% .. +5%. A command
# that the host finishes after its modelled time is an overrun (C1h), which would make the
# measurement the host's, not the model's: none is allowed here but in fio's hundreds of
# reads, where a host hiccup may cost one (at most 1%).
# That guest cost is the host's: without exact mode it grows with the host's load (a 512 KiB
# SLM Read measured +8.7% at load 11 with no overrun: the drive held its completion to the
# model, the guest then took 9 ms to see it). So the free-running boot checks what is the
# drive's — never shorter than the model, no overrun — and bounds the guest's share loosely;
# the exact boot (CSD_VM_EXACT, -icount: guest time counted in instructions) checks the same
# workloads within -0.5% .. +5%, whatever the host's load.
EXACT = os.environ.get("CSD_VM_EXACT") == "1"
LOW, HIGH = 0.995, 1.05 if EXACT else 1.30

_overruns = [stats()["model_overruns"]]


def overruns_since_last():
    """Overruns (C1h) since the previous call: commands the host finished after the model."""
    now = stats()["model_overruns"]
    d, _overruns[0] = now - _overruns[0], now
    return d


def within(measured_ns, model_ns, what, commands=1):
    over = overruns_since_last()
    c.ok(model_ns * LOW <= measured_ns <= model_ns * HIGH and over <= commands // 100,
         f"{what}: measured {measured_ns / 1e6:.3f} ms, model {model_ns / 1e6:.3f} ms "
         f"({(measured_ns / model_ns - 1) * 100:+.1f}%), {over} overruns")


def best_of(n, fn, *a, **kw):
    """The shortest ioctl of n runs (each must succeed): the guest's noise only adds."""
    best = None
    for _ in range(n):
        r = fn(*a, **kw)
        assert r.status == 0, hex(r.status)
        best = r.ns if best is None else min(best, r.ns)
    return best


# Media: SLM Load of 4 MiB: read latency, 4 MiB out of the media, into SLM, the command.
n = 4 * MiB
model = MEDIA_READ_LAT + n * MEDIA_READ_NS + n * SLM_NS + LAT_NS
within(best_of(3, slm_load, 0, n // LBA, 0), model, "media: SLM Load 4 MiB")

# Link: SLM Read of 512 KiB: out of SLM, over the link to the host.
n = 512 * KiB
model = n * SLM_NS + n * LINK_NS + LAT_NS
within(best_of(3, slm_read, 0, n), model, "link: SLM Read 512 KiB")

# Link, the other way: SLM Write of 512 KiB: over the link into SLM. Its buffer holds its
# bytes before the command, as a program's data does; one the guest never touched costs the
# guest a few ms more to pin before the command reaches the drive (its own cost, not the
# model's: docs/timing-model.md, "Accuracy").
n = 512 * KiB
model = n * LINK_NS + n * SLM_NS + LAT_NS
within(best_of(3, slm_write, 0, os.urandom(n)), model, "link: SLM Write 512 KiB")

# Compute: gemm 256 x 256 x 256 (2 * 256^3 flops) on one unit; its descriptor comes in
# over the link first, its 768 KiB of ranges go through SLM alongside.
m = 256
gemm_params = struct.pack("<4I2f", m, m, m, 0, 1.0, 0.0)
ranges = [(0, m * m * 4), (MiB, m * m * 4), (2 * MiB, m * m * 4)]
desc_bytes = len(descriptor(0x02, ranges, gemm_params))
gemm_ns = 2 * m ** 3 / UNIT_FLOPS_PER_NS
model = desc_bytes * LINK_NS + gemm_ns + LAT_NS
within(best_of(3, execute, 0x02, ranges, gemm_params), model, "compute: gemm 256^3")

# Queueing: four gemms at once (four processes, released together) on two units take two
# gemms' time, not one's (four units) and not four (one unit): from the first submission
# to the last completion, on the guest's monotonic clock (shared by the processes). The
# guest's two vCPUs start and notice four processes a few ms apart, hence gemms of 268 ms.
go_r, go_w = os.pipe()
done_r, done_w = os.pipe()
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        os.read(go_r, 1)
        r = execute(0x02, ranges, gemm_params)
        os.write(done_w, struct.pack("<QQH", r.start, r.start + r.ns, r.status))
        os._exit(0)
    kids.append(pid)
time.sleep(0.5)                                 # all four are waiting on the pipe
os.write(go_w, b"xxxx")
spans = [struct.unpack("<QQH", os.read(done_r, 18)) for _ in range(4)]
for pid in kids:
    os.waitpid(pid, 0)
c.ok(all(st == 0 for _, _, st in spans), "queueing: four gemms succeed")
took = max(e for _, e, _ in spans) - min(s for s, _, _ in spans)
first = min(s for s, _, _ in spans)
print("  gemms (submitted, completed), ms after the first submission: " +
      ", ".join(f"({(s - first) / 1e6:.1f}, {(e - first) / 1e6:.1f})" for s, e, _ in sorted(spans)))
model = 2 * desc_bytes * LINK_NS + 2 * gemm_ns + LAT_NS   # the last: second descriptor, two runs
within(took, model, "queueing: 4 gemms on 2 units, first submission to last completion")


def fio(*args):
    out = subprocess.run(["fio", "--output-format=json", "--direct=1", "--ioengine=io_uring",
                          "--filename=/dev/nvme0n1", "--time_based", "--ramp_time=1",
                          "--runtime=4", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])["jobs"][0]["read"]


# Latency: fio, 4 KiB random reads at QD1: the mean latency is one Read's model.
model_4k = MEDIA_READ_LAT + LBA * MEDIA_READ_NS + LBA * LINK_NS + LAT_NS
r = fio("--name=rand", "--rw=randread", "--bs=4k", "--iodepth=1", "--size=128M")
# Never before the model: fio's total latency (lat, submission included; its clat starts
# once io_uring_enter returned, which under TCG can be after the drive took the command).
# The mean: fio's completion latency (clat), the figure fio users read.
c.ok(r["lat_ns"]["min"] >= model_4k * LOW,
     f"latency: no 4 KiB read completed before the model: fastest {r['lat_ns']['min'] / 1e6:.3f} ms")
within(r["clat_ns"]["mean"], model_4k, f"latency: fio randread 4 KiB QD1 ({r['total_ios']} reads), mean",
       commands=r["total_ios"])

# Bandwidth: fio, sequential 128 KiB reads at QD8: the link (0.005 GB/s) is the bottleneck
# (the media's 0.1 GB/s and its 30 ms overlap behind eight commands in flight).
r = fio("--name=seq", "--rw=read", "--bs=128k", "--iodepth=8", "--size=128M")
bw = r["bw_bytes"]
model_bw = 1e9 / LINK_NS
over = overruns_since_last()
c.ok(model_bw * 0.95 <= bw <= model_bw / LOW and over <= r["total_ios"] // 100,
     f"bandwidth: fio sequential 128 KiB reads QD8: {bw / 1e6:.2f} MB/s, model "
     f"{model_bw / 1e6:.2f} MB/s ({(bw / model_bw - 1) * 100:+.1f}%), {over} overruns")

s = stats()
for k in ("model_link_in_busy_ns", "model_link_out_busy_ns", "model_media_busy_ns", "model_slm_busy_ns", "model_compute_busy_ns",
          "model_delay_ns"):
    c.ok(s[k] > 0, f"C1h {k}: {s[k] / 1e6:.1f} ms")
c.report()
