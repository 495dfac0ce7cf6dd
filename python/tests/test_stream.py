# SPDX-License-Identifier: MIT
"""The store's programs over objects larger than the SLM they may use (docs/store.md,
"Objects larger than SLM"): streamed runs against numpy and against a run that fits in SLM
whole, at sizes around multiples of the budget; a cancel from progress stores nothing."""
import os
from pathlib import Path

import numpy as np
import pytest

import nvme_csd
from nvme_csd.errors import CsdError

BUDGET = 256 << 10  # the streamed runs' SLM: the fixture's device has 32 MiB


def sizes(unit):
    """Record counts around 1x, 2x and 3x of BUDGET bytes: just below, at, just above."""
    return [k * BUDGET // unit + d for k in (1, 2, 3) for d in (-1, 0, 1)]


def test_filter_streams_as_one_execute(dev):
    rec = np.dtype([("id", "<u4"), ("score", "<f4"), ("pad", "<u4")])  # 12 bytes: records straddle pieces
    for n in sizes(rec.itemsize):
        a = np.zeros(n, dtype=rec)
        a["id"] = np.arange(n)
        a["score"] = np.random.default_rng(n).random(n, dtype=np.float32)
        dev.store["recs"] = a
        seen = []
        m = dev.store.filter("recs", "hot", record_size=12, field_offset=4, field_type=np.float32, op=">", lo=0.7,
                             slm_budget=BUDGET, progress=lambda d, t: seen.append((d, t)))
        want = a[a["score"] > np.float32(0.7)]
        assert m == len(want)
        assert dev.store["hot"].tobytes() == want.tobytes()
        assert len(seen) >= 2 and seen[-1] == (a.nbytes, a.nbytes)  # progress per piece
        dev.store.filter("recs", "whole", record_size=12, field_offset=4, field_type=np.float32, op=">", lo=0.7)
        assert dev.store["whole"].tobytes() == want.tobytes()
        dev.store.filter("recs", "idx", record_size=12, field_offset=4, field_type=np.float32, op=">", lo=0.7,
                         indices=True, slm_budget=BUDGET)
        assert np.array_equal(dev.store["idx"], np.nonzero(a["score"] > np.float32(0.7))[0].astype("<u4"))


def test_a_small_filter_costs_its_records_not_the_budget(tmp_path):
    """On the timing model (exact=on) a filter that fits in one piece takes the same modelled
    time whatever SLM it may use: its output range is its records' worst case, not the
    buffer a budget's pieces would need (the model charges a program's ranges)."""
    import os
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("the in-process device's options")
    a = np.random.default_rng(5).random(16384 * 4, dtype=np.float32).reshape(-1, 4)  # 256 KiB of records
    took = {}
    for slm in ("4M", "64M"):
        with nvme_csd.open(f"emu:{tmp_path}/f{slm}.img?size=64M&slm={slm}&model=gen4x4-8core&exact=on") as d:
            d.store.format()
            d.store["t"] = a
            v0 = d.model_clock_ns
            d.store.filter("t", "hot", record_size=16, field_offset=4, field_type=np.float32, op="<", lo=0.01)
            took[slm] = d.model_clock_ns - v0
            assert np.array_equal(d.store["hot"], a[a[:, 1] < np.float32(0.01)])
    assert took["64M"] == took["4M"], took


def test_checksum_reduce_convert_stream(dev):
    x = np.random.default_rng(3).standard_normal(3 * BUDGET // 4 + 5).astype(np.float32)
    x[7] = np.nan
    dev.store["x"] = x
    crc = dev.store.stat("x")["crc32c"]
    assert dev.store.checksum("x", slm_budget=BUDGET) == crc == dev.store.checksum("x")
    with pytest.raises(nvme_csd.InvalidArgument, match="cannot be combined"):
        dev.store.checksum("x", "xxh64", slm_budget=BUDGET)
    for op in ("sum", "mean", "min", "max", "argmax", "argmin"):
        streamed = dev.store.reduce("x", op, slm_budget=BUDGET)
        whole = dev.store.reduce("x", op)
        assert streamed.tobytes() == whole.tobytes(), op
    assert dev.store.reduce("x", "argmax", slm_budget=BUDGET)[0] == np.nanargmax(x)
    y = np.arange(5 * BUDGET // 8, dtype=np.int64).reshape(-1, 1024)
    dev.store["y"] = y
    assert np.array_equal(dev.store.reduce("y", "sum", slm_budget=BUDGET), y.sum(axis=1))
    dev.store["z"] = y.reshape(-1)
    with pytest.raises(nvme_csd.InvalidArgument, match="128-bit"):
        dev.store.reduce("z", "mean", slm_budget=BUDGET)
    assert dev.store.convert("x", "h", "f32_f16", slm_budget=BUDGET) == x.size * 2
    assert np.array_equal(dev.store["h"].view(np.uint16), x.astype(np.float16).view(np.uint16))


def test_gemm_streams(dev):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((900, 64)).astype(np.float32)
    b = rng.standard_normal((64, 48)).astype(np.float32)
    dev.store["a"], dev.store["b"] = a, b
    dev.store.gemm("a", "b", "c", slm_budget=BUDGET)
    dev.store.gemm("a", "b", "c1")
    assert dev.store["c"].tobytes() == dev.store["c1"].tobytes()
    assert np.allclose(dev.store["c"], a @ b, rtol=1e-4, atol=1e-4)


def test_cancel_from_progress_stores_nothing(dev):
    a = np.random.default_rng(1).random(16 * BUDGET // 4, dtype=np.float32)
    dev.store["a"] = a

    def stop(done, total):
        if done > total // 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dev.store.filter("a", "b", record_size=4, field_offset=0, field_type=np.float32, op=">", lo=0.5,
                         slm_budget=BUDGET, progress=stop)
    assert "b" not in dev.store
    assert dev.store.reservations() == []
    with pytest.raises(KeyboardInterrupt):
        dev.store.checksum("a", slm_budget=BUDGET, progress=stop)


def test_budget_too_small_is_an_error(dev):
    dev.store["a"] = np.zeros(1 << 16, dtype=np.uint8)
    with pytest.raises(CsdError, match="cannot hold one piece"):
        dev.store.filter("a", "b", record_size=1 << 15, field_offset=0, field_type=np.uint32, op="==", lo=0,
                         slm_budget=1 << 15)


def test_downloaded_program_numbers_records_across_pieces(dev):
    """csd_index() counts from the object's first record in every piece (index_base, 1.3):
    project.o maps each 13-byte record to field * param + its index."""
    from pathlib import Path
    import os
    bpf = Path(os.environ.get("CSD_BPF_DIR") or Path(__file__).resolve().parents[2] / "build/meson/examples/bpf")
    if not dev.caps["program_types"] & 2 or not (bpf / "project.o").exists():
        pytest.skip("no eBPF runtime or no example programs")
    n = 2 * BUDGET // 13 + 7  # records straddle the pieces
    raw = np.random.default_rng(13).integers(0, 256, n * 13, dtype=np.uint8)
    dev.store["r"] = raw.tobytes()
    field = raw.reshape(-1, 13)[:, 4:8].copy().view("<u4").ravel().astype(np.uint64)
    want = field * np.uint64(3) + np.arange(n, dtype=np.uint64)
    with dev.load_program(bpf / "project.o", 13) as prog:
        dev.store.run_program(prog, "map", "r", "m", [3], slm_budget=BUDGET)
        assert np.array_equal(np.frombuffer(dev.store["m"].tobytes(), "<u8"), want)
        _, total = dev.store.run_program(prog, "reduce", "r", params=[3], slm_budget=BUDGET)
        assert total == int(want.sum(dtype=np.uint64))


def test_threads_with_no_budget_take_turns_for_slm(tmp_path):
    """Python threads streaming objects twice the drive's SLM, none given a budget: the first
    takes all SLM free, the others wait for it instead of failing (docs/store.md); every
    answer is numpy's. Each thread's call releases the GIL while the drive works."""
    import os
    import threading
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("the in-process device's options")
    with nvme_csd.open(f"emu:{tmp_path}/t.img?size=64M&slm=4M") as d:
        d.store.format()
        rec = np.dtype([("id", "<u4"), ("score", "<f4"), ("pad", "<u8")])
        a = np.zeros((8 << 20) // rec.itemsize + 7, dtype=rec)
        a["id"] = np.arange(len(a))
        a["score"] = np.random.default_rng(3).random(len(a), dtype=np.float32)
        d.store["recs"] = a
        want = np.nonzero(a["score"] > np.float32(0.9))[0].astype("<u4")
        errors = []

        def run(k):
            try:
                for _ in range(2):
                    d.store.filter("recs", f"hot{k}", record_size=16, field_offset=4, field_type=np.float32,
                                   op=">", lo=0.9, indices=True)
                    if not np.array_equal(d.store[f"hot{k}"], want):
                        errors.append(f"thread {k}: wrong answer")
            except Exception as e:  # noqa: BLE001 - every thread's failure is reported
                errors.append(f"thread {k}: {e}")

        threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []


def test_unknown_names_are_invalid_arguments_before_anything_runs(dev):
    """An op, algo, codec, mode or field type the command set does not know is refused as
    docs/python.md says arguments are (InvalidArgument, a ValueError, naming the known ones)
    by the store's programs and a drive set's as by the Device's (they raised KeyError or
    numpy's TypeError), and nothing is stored. The filter's field type also takes the
    command set's own names ("f32", as csdctl's --type)."""
    rec = np.dtype([("id", "<u4"), ("score", "<f4")])
    a = np.zeros(1000, dtype=rec)
    a["score"] = np.linspace(0, 1, 1000, dtype=np.float32)
    st = dev.store
    st["recs"] = a
    kw = dict(record_size=8, field_offset=4)
    calls = [
        ("unknown op 'bogus'", lambda: st.filter("recs", "out", **kw, field_type=np.float32, op="bogus", lo=0.5)),
        ("field type 'f128'", lambda: st.filter("recs", "out", **kw, field_type="f128", op=">", lo=0.5)),
        ("field type .*float16", lambda: st.filter("recs", "out", **kw, field_type=np.float16, op=">", lo=0.5)),
        ("unknown algo 'md5'", lambda: st.checksum("recs", "md5")),
        ("unknown op 'median'", lambda: st.reduce("recs", "median")),
        ("unknown op 'f32_f64'", lambda: st.convert("recs", "out", "f32_f64")),
        ("unknown codec 'gzip'", lambda: st.decompress("recs", "out", "gzip")),
        ("unknown op 'maybe'", lambda: dev.filter(a, "score", "maybe", 0.5)),
    ]
    bpf = Path(os.environ.get("CSD_BPF_DIR") or Path(__file__).resolve().parents[2] / "build/meson/examples/bpf")
    if (bpf / "threshold.o").exists() and dev.caps["program_types"] & 2:
        prog = dev.load_program(bpf / "threshold.o", rec.itemsize)
        calls.append(("unknown mode 'chase'", lambda: st.run_program(prog, "chase", "recs", "out")))
    for what, call in calls:
        with pytest.raises(nvme_csd.InvalidArgument, match=what) as e:
            call()
        assert isinstance(e.value, ValueError) and ("known" in str(e.value) or "not one of" in str(e.value)), e.value
    assert "out" not in st
    assert st.filter("recs", "out", **kw, field_type="f32", op=">", lo=0.5) == (a["score"] > np.float32(0.5)).sum()


@pytest.mark.parametrize("codec,tool", [("zstd", "zstd"), ("lz4", "lz4")])
def test_the_way_out_a_frame_too_large_names_works(dev, tmp_path, codec, tool):
    """A frame larger than a piece is refused naming how to compress in frames that fit; the
    command it names, run as written, gives an object that streams (it named zstd's
    --block-size and lz4's -B, which size the blocks inside one frame: refused again)."""
    import re
    import shutil
    import subprocess
    if not shutil.which(tool) or not shutil.which("split"):
        pytest.skip(f"no {tool} or split")
    raw = np.random.default_rng(3).integers(0, 16, 3 << 20, dtype=np.uint8).tobytes()
    src = tmp_path / "raw"
    src.write_bytes(raw)
    one = tmp_path / f"one.{codec}"
    subprocess.run([tool, "-q", "-c", str(src)], stdout=one.open("wb"), check=True)
    dev.store.put_file("one", one)
    with pytest.raises(nvme_csd.InvalidArgument, match="cannot be split") as e:
        dev.store.decompress("one", "out", codec, slm_budget=1 << 20)
    cmd = re.search(r"\((split -b \S+ --filter='[^']+' FILE > FILE\.\w+):", str(e.value))
    assert cmd, f"the error names no command: {e.value}"
    subprocess.run(cmd.group(1).replace(" FILE", " raw"), shell=True, check=True, cwd=tmp_path)  # FILE: the file
    made = tmp_path / ("raw." + cmd.group(1).rsplit(".", 1)[1])
    dev.store.put_file("framed", made)
    assert dev.store.decompress("framed", "out", codec, slm_budget=1 << 20) == len(raw)
    assert dev.store.read("out", 0, len(raw)) == raw
