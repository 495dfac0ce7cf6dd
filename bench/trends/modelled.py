# SPDX-License-Identifier: MIT
"""Shared by the trend scripts (bench/trends/*.py): drives described by the timing model's
parameters (docs/timing-model.md), and modelled time measured on the in-process device.

Modelled time, exact. Every drive is opened with exact=on (docs/timing-model.md, "Exact
mode"): the in-process device keeps a virtual clock, a command arrives at the clock's time
and its completion moves the clock to its modelled finish at once, whatever this machine's
speed or load. The time of a step is the advance of the drive's clock over it
(Device.model_clock_ns, DriveSet.model_clock_ns(i); see `clock`): the modelled time of its
commands, one after the other. Neither Python around a command nor the emulator's own work
counts (the host's storage stack is the model's host-latency-ns), and no command overruns,
so one run gives the model's time and a rerun the same. The host's own compute, where a
script adds it, is measured apart as the CPU time of the thread that runs it."""
import os
import tempfile

# Drives, as the model's parameters (these are the presets' values, docs/timing-model.md).
DRIVES = {
    "gen4x4-8core": {"link-gbps": 7.0, "link-latency-ns": 900, "media-read-gbps": 6.8, "media-write-gbps": 5.0,
                     "media-read-latency-ns": 60000, "media-write-latency-ns": 16000, "slm-gbps": 25.6,
                     "unit-gflops": 16.0, "unit-gbps": 4.0, "bpf-record-ns": 8, "compute-units": 8},
    "ll-nand-gen5": {"link-gbps": 14.0, "link-latency-ns": 500, "media-read-gbps": 13.0, "media-write-gbps": 10.0,
                     "media-read-latency-ns": 4000, "media-write-latency-ns": 16000, "slm-gbps": 51.2,
                     "unit-gflops": 2000.0, "unit-gbps": 40.0, "bpf-record-ns": 2, "compute-units": 1},
    "nvme-tcp-gen4": {"link-gbps": 2.9, "link-latency-ns": 900, "media-read-gbps": 6.8, "media-write-gbps": 5.0,
                      "media-read-latency-ns": 60000, "media-write-latency-ns": 16000, "slm-gbps": 25.6,
                      "unit-gflops": 16.0, "unit-gbps": 4.0, "bpf-record-ns": 8, "compute-units": 8,
                      "host-latency-ns": 25000},
}
_RATES = ("link-gbps", "media-read-gbps", "media-write-gbps", "slm-gbps", "unit-gflops", "unit-gbps")


def params(drive, **changes):
    """The drive's parameters with changes (host_latency_ns=... for host-latency-ns)."""
    p = dict(DRIVES[drive])
    for k, v in changes.items():
        p[k.replace("_", "-")] = v
    return p


def spec(path, p, **options):
    """emu: spec of a namespace file under the model p, exact (its virtual clock)."""
    opts = dict(options)
    for k, v in p.items():
        opts["model." + k] = repr(float(v)) if k in _RATES else int(v)
    opts["exact"] = "on"
    return f"emu:{path}?" + "&".join(f"{k}={v}" for k, v in opts.items())


def namespace(work, name, size):
    """A zero namespace file of size bytes in work."""
    path = os.path.join(work, name + ".img")
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def workdir():
    """A new temporary folder for the namespace files."""
    return tempfile.mkdtemp(prefix="csd-trends-")


def clock(fn, devs, parallel=False):
    """(fn(), modelled seconds): how far fn's commands move the model's clock of the drives
    devs (anything with model_clock_ns: a Device, or drive i of a DriveSet), exact=on.
    One drive: its clock's advance. Several: the sum of their advances (one after the
    other), or with parallel (they work at once, each one command at a time: a DriveSet's
    drives) the largest."""
    before = [d.model_clock_ns for d in devs]
    r = fn()
    moved = [d.model_clock_ns - b for d, b in zip(devs, before)]
    return r, (max if parallel else sum)(moved) / 1e9


def us(s):
    """Seconds as microseconds, e.g. '9.6 us'."""
    return f"{s * 1e6:,.1f} us"


def ms(s):
    """Seconds as milliseconds, e.g. '3.35 ms'."""
    return f"{s * 1e3:,.2f} ms"
