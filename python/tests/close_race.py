# SPDX-License-Identifier: MIT
"""Device.close() racing other threads' calls, fork and garbage collection, each scenario in
a process of its own (test_close.py runs them: a use-after-free crashes this process, not
pytest's). Usage: python close_race.py SCENARIO DIR [REPEATS]; prints 'ok ...' when every
call either worked or raised DeviceClosed / AbortRequested."""
import gc
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

import nvme_csd
from nvme_csd.btree import RECORD_SIZE, BTree

BPF = Path(os.environ.get("CSD_BPF_DIR") or Path(__file__).resolve().parents[2] / "build/meson/examples/bpf")
ENDED = (nvme_csd.DeviceClosed, nvme_csd.AbortRequested)  # what a call racing close() may raise


def open_dev(where, name, model=""):
    d = nvme_csd.open(f"emu:{where}/{name}.img?size=64M&slm=32M{model}")
    d.store.format()
    return d


def tree(d, depth_fanout=2, keys=100):
    prog = d.load_program(BPF / "btree_lookup.o", RECORD_SIZE)
    at = d.namespace["lba_count"] - 4096  # past what the store writes
    t = BTree.build(d, {i: i * 3 for i in range(keys)}, at, prog, fanout=depth_fanout, force=True)  # beside the store
    return prog, t


def hammer(calls, stop, errors, counts):
    """Runs each call in turn until one raises what a close may raise (or stop is set)."""
    i = 0
    while not stop.is_set():
        try:
            calls[i % len(calls)]()
            counts.append(1)
        except ENDED:
            return
        except Exception as e:  # anything else is a failure of the test
            errors.append(repr(e))
            return
        i += 1


def run_threads(d, calls, nthreads, settle, errors):
    """nthreads threads hammer calls; close() after settle seconds; every thread must end."""
    stop, counts = threading.Event(), []
    ts = [threading.Thread(target=hammer, args=(calls, stop, errors, counts)) for _ in range(nthreads)]
    for t in ts:
        t.start()
    time.sleep(settle)
    t0 = time.monotonic()
    d.close()
    took = time.monotonic() - t0
    stop.set()
    for t in ts:
        t.join(30)
        if t.is_alive():
            errors.append("a thread did not end after close()")
    return took, len(counts)


def chase(where, repeats):
    """Threads chasing a depth-7 tree while close() runs (the reviewer's reproducer: the
    Device freed under a chase): every chase either ends or raises DeviceClosed /
    AbortRequested, and later calls raise DeviceClosed."""
    errors, worst, done = [], 0.0, 0
    for r in range(repeats):
        d = open_dev(where, f"c{r}")
        prog, t = tree(d)
        assert t.depth == 7
        calls = [lambda: prog.chase(t.root_lba, [50], 7), lambda: prog.chase_value(t.root_lba, [99], 7)]
        took, n = run_threads(d, calls, 4, 0.02, errors)
        worst, done = max(worst, took), done + n
        for call in calls:
            try:
                call()
                errors.append("a chase ran after close()")
            except nvme_csd.DeviceClosed:
                pass
    return errors, f"{done} chases; close() took at most {worst * 1e3:.0f} ms"


def mixed(where, repeats):
    """Every kind of call at once (programs, SLM, the store with progress, a zero-copy view,
    a downloaded program's filter, chases, slm buffers made and freed), close() at a random
    moment, many times."""
    errors = []
    rng = np.random.default_rng(1)
    calls_done = 0
    for r in range(repeats):
        d = open_dev(where, f"m{r}")
        prog, t = tree(d, 4, 300)
        thr = d.load_program(BPF / "threshold.o", 16) if (BPF / "threshold.o").exists() else None
        x = np.arange(1 << 14, dtype=np.float32)
        a = d.to_slm(x)
        d.store["obj"] = x
        views = []

        def view():
            v = a.numpy(copy=False)  # kept past close(): it keeps the device's memory
            views.append(v)
            assert v[5] == 5

        calls = [lambda: d.elementwise("add", x, x), lambda: d.gemm(x[:64].reshape(8, 8), x[:64].reshape(8, 8)),
                 lambda: d.checksum(x), lambda: d.store.put("p", x, progress=lambda done, total: None),
                 lambda: d.store.get("obj"), lambda: list(d.store), lambda: d.to_slm(x).free(),
                 lambda: prog.chase(t.root_lba, [7], 8), lambda: t.lookup(299), view, lambda: d.stats,
                 lambda: d.reduce(x[:1024].reshape(4, 256), "sum"), lambda: d.softmax(x[:256].reshape(4, 64))]
        if thr is not None:
            recs = np.zeros(64, dtype=[("key", "<i4"), ("pad", "<u4"), ("val", "<u8")])
            calls.append(lambda: thr.filter(recs, [1]))
        took, n = run_threads(d, calls, 6, float(rng.uniform(0.0, 0.05)), errors)
        calls_done += n
        for v in views:  # still readable and writable after close()
            v[0] = 1.0
            assert v[5] == 5
        del views, a
    return errors, f"{calls_done} calls before the closes"


def with_and_gc(where, repeats):
    """`with` ending, and the last reference dropped, while another thread's call runs."""
    errors = []
    for r in range(repeats):
        with open_dev(where, f"w{r}", "&model=gen3x4-4core&model.media-read-latency-ns=10000000") as d:
            prog, t = tree(d)
            stop, counts = threading.Event(), []
            th = threading.Thread(target=hammer, args=([lambda: prog.chase(t.root_lba, [3], 7)], stop, errors, counts))
            th.start()
            time.sleep(0.03)
        th.join(30)
        errors += ["the chase did not end"] if th.is_alive() else []
        # the last reference to a Device (and its Program) dropped while a thread calls it
        d = open_dev(where, f"g{r}", "&model=gen3x4-4core&model.media-read-latency-ns=10000000")
        prog, t = tree(d)
        stop = threading.Event()
        th = threading.Thread(target=hammer, args=([lambda p=prog, t=t: p.chase(t.root_lba, [3], 7)], stop, errors, []))
        th.start()
        time.sleep(0.03)
        del d, prog, t
        gc.collect()
        time.sleep(0.05)
        stop.set()
        th.join(30)
        errors += ["the chase did not end"] if th.is_alive() else []
    return errors, "ok"


def forked(where, repeats):
    """A child closes its inherited Device (once while a parent's thread has a chase in
    flight): the child exits at once, and the parent's device goes on working."""
    errors = []
    d = open_dev(where, "f", "&model=gen3x4-4core&model.media-read-latency-ns=5000000")
    prog, t = tree(d)
    d.store["obj"] = np.arange(100)
    stop = threading.Event()
    th = threading.Thread(target=hammer, args=([lambda: prog.chase(t.root_lba, [3], 7)], stop, errors, []))
    th.start()
    for r in range(repeats):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                d.close()
                assert d.closed
                try:
                    d.store.get("obj")
                    code = 3
                except nvme_csd.DeviceClosed:
                    pass
            except BaseException:
                code = 2
            os._exit(code)
        deadline = time.monotonic() + 20
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                errors.append("the child's close() hung")
                break
            time.sleep(0.01)
        if done and status != 0:
            errors.append(f"the child exited with {status:#x}")
        if prog.chase(t.root_lba, [50], 7)[0] != (1 << 62) | 150:
            errors.append("the parent's chase after the child closed")
        if not np.array_equal(d.store["obj"], np.arange(100)):
            errors.append("the parent's store after the child closed")
    stop.set()
    th.join(30)
    d.close()
    return errors, "ok"


def progress_closes(where, repeats):
    """A progress callback that closes its own device: the put ends (its data whole or
    refused), then every call raises DeviceClosed; no hang."""
    errors = []
    for r in range(repeats):
        d = open_dev(where, f"p{r}")
        x = np.arange(1 << 20, dtype=np.uint8)
        try:
            d.store.put("big", x, progress=lambda done, total: d.close())
        except ENDED:
            pass
        if not d.closed:
            errors.append("not closed")
        try:
            d.store.get("big")
            errors.append("a call after close()")
        except nvme_csd.DeviceClosed:
            pass
    return errors, "ok"


def progress_closes_with_a_call_waiting_for_slm(where, repeats):
    """A streamed run (no budget: all of the drive's SLM) whose progress callback closes the
    device while another thread's streamed call waits for that SLM (docs/store.md, "Streamed
    calls running at once"): close() waited for the waiting call, which waited for the run
    whose callback was in close(): a hang. The waiting call now stops waiting and fails as it
    would alone (cannot hold one piece), or raises DeviceClosed if it starts after close()."""
    import errno
    errors = []
    for r in range(repeats):
        d = nvme_csd.open(f"emu:{where}/w{r}.img?size=64M&slm=1M")
        d.store.format()
        d.store["big"] = np.arange(16 << 20, dtype=np.uint8)
        d.store["other"] = np.arange(4 << 20, dtype=np.uint8)
        other = []

        def waits():
            try:
                d.store.checksum("other")
                other.append("ran")
            except ENDED:
                other.append("ended")
            except nvme_csd.CsdError as e:
                other.append("refused" if e.errno == errno.ENOMEM else f"{type(e).__name__}: {e}")

        t = threading.Thread(target=waits)

        def progress(done, total):
            if t.ident is None:
                t.start()
                time.sleep(0.5)  # it finds the SLM this run holds and waits for it
                d.close()

        try:
            d.store.checksum("big", progress=progress)
        except ENDED:
            pass
        t.join()
        if not d.closed:
            errors.append("not closed")
        if other not in (["ran"], ["ended"], ["refused"]):
            errors.append(f"the other call: {other}")
    return errors, "ok"


if __name__ == "__main__":
    scenario, where = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    errs, note = globals()[scenario](where, repeats)
    if errs:
        print("FAILED:", "; ".join(sorted(set(errs))[:8]))
        sys.exit(1)
    print("ok", scenario, note)
