# SPDX-License-Identifier: MIT
"""Shared by the trend scripts (bench/trends/*.py): drives described by the timing model's
parameters (docs/timing-model.md), and modelled time measured on the in-process device.

Modelled time, dilated. The in-process device completes each command no earlier than the
modelled drive would (host clock). A low-latency drive's read takes 4 us in the model,
less than this machine's Python spends around one command, so a run at real speed would
time Python. Every run here uses the model slowed down uniformly by a factor S (every
latency x S, every rate / S): the model is linear in time, so each modelled time is the
dilated one / S. Where one command runs at a time, the time is read from the drive itself
(C1h model_delay_ns, see `clock`), so neither Python nor the host's sleep overshooting a
finish counts; what it leaves out, each command's real work, is bounded by the same calls
with the model off, divided by S, printed as "host overhead". A run with model_overruns
(the emulator slower than the dilated model) is flagged."""
import os
import tempfile
import time

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


def spec(path, p, scale, **options):
    """emu: spec of a namespace file under the model p slowed down scale times."""
    opts = dict(options)
    for k, v in p.items():
        if k == "compute-units":
            opts["model." + k] = int(v)
        elif k in _RATES:
            opts["model." + k] = repr(v / scale)
        else:
            opts["model." + k] = int(round(v * scale))
    return f"emu:{path}?" + "&".join(f"{k}={v}" for k, v in opts.items())


def namespace(work, name, size):
    """A zero namespace file of size bytes in work."""
    path = os.path.join(work, name + ".img")
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def workdir():
    return tempfile.mkdtemp(prefix="csd-trends-")


def clock(fn, scale, devs=(), best_of=1, parallel=False, undo=None, pick=max):
    """(result, modelled seconds) of fn() on a drive slowed down scale times.

    With devs (the drives fn's commands go to, one command at a time): the sum of the
    time their completions were held back for the model (C1h model_delay_ns, counted when
    each command's real work is done), / scale: each command's modelled latency less its
    real work, which the same calls with the model off bound (the scripts' "host overhead"). Exact against
    the host's sleep overshooting a modelled finish, which the host clock would count.
    A call in which a command overran (the host slower than the dilated model, whose
    delay is then not counted) is run again (after undo(), if fn's work must be undone
    first, e.g. an object it made), up to RETRIES times; overruns left in the
    last try are added to left_overruns, which the scripts print. The count is never over
    the model (a command's real work, or its thread losing the CPU on this shared machine,
    only shortens the time it is held back), so with best_of = k, fn (which must give the
    same commands each time) runs k times and the largest count is kept: how much one
    command was shortened then no longer changes the table from one run to the next.
    pick=statistics.median instead, where a try can also come out long: fn's commands
    change with the state a try leaves (the object store's catalog, rewritten now and then
    as it grows, and a retry adds a generation), so one long try and one short one are
    both left out.
    parallel: devs work at once (a DriveSet's drives, each one command at a time): the
    largest of their counts, not the sum. Without devs: the host clock / scale."""
    if not devs:
        t0 = time.perf_counter()
        r = fn()
        return r, (time.perf_counter() - t0) / scale
    times = []
    for _ in range(best_of):
        if times and undo:
            undo()
        r, t = _held(fn, scale, devs, parallel, undo)
        times.append(t)
    return r, pick(times)


def _held(fn, scale, devs, parallel, undo):
    """(fn(), the time its commands were held back for the model / scale), see clock."""
    for attempt in range(RETRIES):
        if attempt and undo:
            undo()
        before = [(d.stats["model_delay_ns"], d.stats["model_overruns"]) for d in devs]
        r = fn()
        after = [(d.stats["model_delay_ns"], d.stats["model_overruns"]) for d in devs]
        if all(a[1] == b[1] for a, b in zip(after, before)):
            break  # no command overran: every one's modelled time was held and counted
        # a command's real work outlasted its modelled time (a busy host): its delay is not
        # counted, so the sum would be short; fn is run again
    else:
        global left_overruns
        left_overruns += sum(a[1] - b[1] for a, b in zip(after, before))
    held = (max if parallel else sum)(a[0] - b[0] for a, b in zip(after, before))
    return r, held / 1e9 / scale


RETRIES = 5
left_overruns = 0  # commands that overran in a measurement kept after RETRIES tries


def us(s):
    return f"{s * 1e6:,.1f} us"


def ms(s):
    return f"{s * 1e3:,.2f} ms"
