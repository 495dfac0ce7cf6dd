# SPDX-License-Identifier: MIT
"""Filter offload against selectivity on one and four drives (CORD, IPDPS'25, and the
multi-drive SmartSSD papers): modelled time of a scan whose matches reach the host.

A table of 16-byte records (id, value, region, amount; value uniform in [0, 1)) striped
over a DriveSet of in-process drives, each with the timing model; the query keeps the
records with value < s for selectivity s.
- in drives: DriveSet.filter (each drive filters its stripe into a result object, in
  parallel) and the result read to the host (every drive at once: read).
- host: the whole table read to the host (every drive at once: read) and filtered
  by numpy on this machine's CPU (its time added: the CPU time of the thread running it,
  time.thread_time, the least of NUMPY_RUNS runs: a wall clock on this shared 2-core
  machine counts the other programs' time too, 2-3x from one run to the next).
The drives' time is the model's clock (exact=on, see modelled.py): each step (the filter,
the matches' read, the table's read) timed by the advance of every drive's virtual clock,
the largest drive's (they work at once, each one command at a time). Answers checked equal.

Usage: python3 bench/trends/filter_selectivity.py [--records N] [--drives 1,4] [--sels 0.001,0.5]
"""
import argparse
import sys
import time

import numpy as np

import nvme_csd

import modelled as M


def table(n):
    """n records of 4 f32 (id, value in [0, 1), region, amount), the same every run."""
    rng = np.random.default_rng(2025)
    t = np.empty((n, 4), np.float32)
    t[:, 0] = np.arange(n, dtype=np.float32)
    t[:, 1] = rng.random(n, dtype=np.float32)
    t[:, 2] = rng.integers(0, 50, n).astype(np.float32)
    t[:, 3] = rng.random(n, dtype=np.float32) * 100
    return t


NUMPY_RUNS = 20  # the host's filter: the least CPU time of these


class Drive:
    """Drive i of a DriveSet as modelled.clock reads it (its model clock)."""

    def __init__(self, ds, i):
        self.ds, self.i = ds, i

    @property
    def model_clock_ns(self):
        """Drive i's virtual clock, ns."""
        return self.ds.model_clock_ns(self.i)


def step(fn, devs):
    """(fn(), modelled seconds): the largest drive's clock advance over fn (modelled.clock)."""
    return M.clock(fn, devs, parallel=True)


def read(ds, name):
    """A striped table of 4 f32 columns read to the host: every drive's part at once
    (libcsd's DriveSet::get). Not DriveSet.get, whose stat for the dtype first reads each
    drive's catalog one drive after the other: commands in series on several drives,
    which the largest drive's clock advance (step) would not add up."""
    return np.frombuffer(ds._set.get(name), np.float32).reshape(-1, 4)


def numpy_time(data, sel):
    """The host's filter of the table at sel: the least CPU time of NUMPY_RUNS runs, s."""
    tn = float("inf")
    for _ in range(NUMPY_RUNS):
        t0 = time.thread_time()
        data[data[:, 1].astype(np.float64) < sel]
        tn = min(tn, time.thread_time() - t0)
    return tn


def measure(drive, ndrives, data, sels, work, numpy_s=None):
    """{selectivity: (in drives, host read + numpy, numpy alone)}, seconds;
    numpy_s: {selectivity: the host's filter time} (measured here if not given)."""
    numpy_s = numpy_s or {sel: numpy_time(data, sel) for sel in sels}
    paths = [M.namespace(work, f"d{ndrives}-{i}", data.nbytes // ndrives + (64 << 20)) for i in range(ndrives)]
    out = {}
    with nvme_csd.open_many([M.spec(x, M.params(drive), slm="64M", lba=4096) for x in paths]) as ds:
        ds.format(force=True)
        ds.put("t", data, placement="striped")
        devs = [Drive(ds, i) for i in range(ndrives)]
        for sel in sels:
            def query():
                ds.filter("t", "hot", record_size=16, field_offset=4, field_type="f4", op="lt", lo=sel)
            _, tf = step(query, devs)
            got, tr = step(lambda: read(ds, "hot"), devs)
            ds.remove("hot")
            raw, tg = step(lambda: read(ds, "t"), devs)
            ref = raw[raw[:, 1].astype(np.float64) < sel]
            assert np.array_equal(np.asarray(got).reshape(-1, 4), ref), "the drives' matches differ"
            out[sel] = (tf + tr, tg + numpy_s[sel], numpy_s[sel])
    return out


def main(argv=None):
    """Prints the table (docs/perf.md); returns {drives: measure's rows}."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drive", default="gen4x4-8core")
    ap.add_argument("--records", type=int, default=1 << 20)
    ap.add_argument("--drives", default="1,4")
    ap.add_argument("--sels", default="0.001,0.01,0.05,0.1,0.25,0.5")
    args = ap.parse_args(argv)
    data = table(args.records)
    sels = [float(x) for x in args.sels.split(",")]
    work = M.workdir()
    rows = {}
    numpy_s = {sel: numpy_time(data, sel) for sel in sels}  # the same host filter beside 1 and 4 drives
    print(f"modelled time of the query, {args.records} records ({data.nbytes >> 20} MiB), {args.drive} drives "
          "(timing model, exact=on: the drives' virtual clocks; the host's numpy: its CPU time on this machine)")
    for n in (int(x) for x in args.drives.split(",")):
        r = measure(args.drive, n, data, sels, work, numpy_s)
        rows[n] = r
        for sel, (td, th, tn) in r.items():
            print(f"{n} drive(s) {sel * 100:5.1f} %: in drives {M.ms(td):>10s}  host {M.ms(th):>10s} (numpy "
                  f"{M.ms(tn)})  gain {th / td:5.2f}x", flush=True)
    print("\n| selectivity | " + " | ".join(f"{n} drive{'s' if n > 1 else ''}: in drives / host (numpy) | gain"
                                           for n in rows) + " |")
    print("|---|" + "---|---|" * len(rows))
    for sel in sels:
        cells = []
        for n in rows:
            td, th, tn = rows[n][sel]
            cells.append(f"{M.ms(td)} / {M.ms(th)} ({M.ms(tn)}) | **{th / td:.1f}×**")
        print(f"| {sel * 100:g} % | " + " | ".join(cells) + " |")
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
