# SPDX-License-Identifier: MIT
"""Filter offload against selectivity on one and four drives (CORD, IPDPS'25, and the
multi-drive SmartSSD papers): modelled time of a scan whose matches reach the host.

A table of 16-byte records (id, value, region, amount; value uniform in [0, 1)) striped
over a DriveSet of in-process drives, each with the timing model; the query keeps the
records with value < s for selectivity s.
- in drives: DriveSet.filter (each drive filters its stripe into a result object, in
  parallel) and the result read to the host (DriveSet.get).
- host: the whole table read to the host (DriveSet.get, every drive at once) and filtered
  by numpy on this machine's CPU (its time measured, the best of 5 runs, and added).
The drives' time is modelled (dilated, see modelled.py). Answers checked equal.

Usage: python3 bench/trends/filter_selectivity.py [--records N] [--drives 1,4] [--scale S]
"""
import argparse
import sys
import time

import numpy as np

import nvme_csd

import modelled as M


def table(n):
    rng = np.random.default_rng(2025)
    t = np.empty((n, 4), np.float32)
    t[:, 0] = np.arange(n, dtype=np.float32)
    t[:, 1] = rng.random(n, dtype=np.float32)
    t[:, 2] = rng.integers(0, 50, n).astype(np.float32)
    t[:, 3] = rng.random(n, dtype=np.float32) * 100
    return t


def measure(drive, ndrives, data, sels, scale, work):
    """{selectivity: (in drives, host get + numpy, numpy alone, overhead (drives, host))}."""
    paths = [M.namespace(work, f"d{ndrives}-{i}", data.nbytes // ndrives + (64 << 20)) for i in range(ndrives)]
    res = {}
    for name, p, s in (("model", M.params(drive), scale), ("off", None, 1)):
        specs = [M.spec(x, p, s, slm="64M", lba=4096) if p else f"emu:{x}?slm=64M&lba=4096" for x in paths]
        with nvme_csd.open_many(specs) as ds:
            ds.format()
            ds.put("t", data, placement="striped")
            for sel in sels:
                def drives():
                    ds.filter("t", "hot", record_size=16, field_offset=4, field_type="f4", op="lt", lo=sel)
                    return ds.get("hot")
                got, td = M.clock(drives, s)
                ds.remove("hot")
                raw, tg = M.clock(lambda: ds.get("t"), s)
                tn = float("inf")
                for _ in range(5):  # the host's best of 5: this machine is shared
                    t0 = time.perf_counter()
                    ref = raw[raw[:, 1].astype(np.float64) < sel]
                    tn = min(tn, time.perf_counter() - t0)
                assert np.array_equal(np.asarray(got).reshape(-1, 4), ref), "the drives' matches differ"
                res.setdefault(sel, {})[name] = (td, tg + tn, tn)
    out = {}
    for sel, r in res.items():
        (td, th, tn), (od, oh, on) = r["model"], r["off"]
        out[sel] = (td, th, tn, (od / scale, (oh - on) / scale))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drive", default="gen4x4-8core")
    ap.add_argument("--records", type=int, default=1 << 20)
    ap.add_argument("--drives", default="1,4")
    ap.add_argument("--sels", default="0.001,0.01,0.05,0.1,0.25,0.5")
    ap.add_argument("--scale", type=float, default=50)
    args = ap.parse_args(argv)
    data = table(args.records)
    sels = [float(x) for x in args.sels.split(",")]
    work = M.workdir()
    rows = {}
    print(f"modelled time of the query, {args.records} records ({data.nbytes >> 20} MiB), {args.drive} drives "
          f"(timing model, dilated x{args.scale:g}; the host's numpy measured on this CPU)")
    for n in (int(x) for x in args.drives.split(",")):
        r = measure(args.drive, n, data, sels, args.scale, work)
        rows[n] = r
        for sel, (td, th, tn, ov) in r.items():
            print(f"{n} drive(s) {sel * 100:5.1f} %: in drives {M.ms(td):>10s}  host {M.ms(th):>10s} (numpy "
                  f"{M.ms(tn)})  gain {th / td:5.2f}x  (host overhead {M.ms(ov[0])} / {M.ms(ov[1])})", flush=True)
    print("\n| selectivity | " + " | ".join(f"{n} drive{'s' if n > 1 else ''}: in drives / host (numpy) | gain"
                                           for n in rows) + " |")
    print("|---|" + "---|---|" * len(rows))
    for sel in sels:
        cells = []
        for n in rows:
            td, th, tn, ov = rows[n][sel]
            cells.append(f"{M.ms(td)} / {M.ms(th)} ({M.ms(tn)}) | **{th / td:.1f}×**")
        print(f"| {sel * 100:g} % | " + " | ".join(cells) + " |")
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
