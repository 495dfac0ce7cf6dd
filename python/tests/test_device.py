# SPDX-License-Identifier: MIT
"""nvme_csd against a device: programs checked with numpy, errors, the store mapping."""
import errno
import math
import os
import time

import numpy as np
import pytest

import nvme_csd


def test_quickstart(dev):
    dev.store["w"] = np.random.rand(256, 256).astype(np.float32)
    w = dev.store["w"]
    assert w.dtype == np.float32 and w.shape == (256, 256)
    assert np.allclose(dev.gemm(w, w), w @ w, rtol=1e-4, atol=1e-3)
    s = dev.stats
    assert s["exec_cmds"] >= 1 if s["available"] else s["exec_cmds"] is None  # unknown, not zero
    assert dev.offload == (dev.front_end != "host") and dev.where == ("host" if dev.front_end == "host" else "device")


def test_caps_and_programs(dev):
    caps = dev.caps
    assert caps["slm_size"] >= 4 << 20 and caps["max_desc_len"] == 4096
    assert dev.programs == ["copy", "gemm", "elementwise", "softmax", "reduce", "filter", "convert",
                            "checksum", "conv2d", "decompress", "gather", "embedding_bag"]


def test_gemm_transposes_alpha_beta(dev):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 30), dtype=np.float32)
    b = rng.standard_normal((40, 20), dtype=np.float32)
    c = rng.standard_normal((30, 40), dtype=np.float32)
    got = dev.gemm(a, b, c, trans_a=True, trans_b=True, alpha=0.5, beta=2.0)
    assert np.allclose(got, 0.5 * a.T @ b.T + 2.0 * c, atol=1e-4)


def test_elementwise_softmax_reduce(dev):
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    y = np.full(1000, 2.0, dtype=np.float32)
    assert np.allclose(dev.elementwise("mul", x, y), x * y)
    gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    assert np.allclose(dev.elementwise("gelu", x), gelu, atol=1e-6)
    assert np.allclose(dev.elementwise("axpb", x, a=2.0, b=1.0), 2 * x + 1)
    m = np.random.default_rng(2).standard_normal((5, 50)).astype(np.float32)
    e = np.exp(m - m.max(axis=1, keepdims=True))
    assert np.allclose(dev.softmax(m), e / e.sum(axis=1, keepdims=True), atol=1e-6)
    assert np.allclose(dev.reduce(m, "mean"), m.astype(np.float64).mean(axis=1))
    assert np.array_equal(dev.reduce(m, "argmax"), m.argmax(axis=1))
    ints = np.arange(-10, 10, dtype=np.int32).reshape(2, 10)
    assert dev.reduce(ints, "sum").tolist() == [-55, 45]


def test_filter_records_and_indices(dev):
    rec = np.zeros(10000, dtype=[("id", "<u4"), ("value", "<f4"), ("region", "<i8")])
    rec["id"] = np.arange(10000)
    rec["value"] = np.random.default_rng(3).random(10000, dtype=np.float32)
    rec["region"] = np.arange(10000) % 7 - 3
    hot = dev.filter(rec, "value", ">", 0.9)
    assert np.array_equal(hot, rec[rec["value"].astype(np.float64) > 0.9])
    idx = dev.filter(rec, "region", "between", -1, 1, indices=True)
    assert np.array_equal(idx, np.nonzero((rec["region"] >= -1) & (rec["region"] <= 1))[0])


def test_filter_64_bit_bounds_whole(dev):
    # u64 bounds past 2**63 and negative i64 bounds reach the drive whole (libcsd lays them out)
    rec = np.zeros(6, dtype=[("u", "<u8"), ("i", "<i8")])
    rec["u"] = [0, 1, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
    rec["i"] = [-2**63, -5, -1, 0, 7, 2**63 - 1]
    assert dev.filter(rec, "u", ">=", 2**63)["u"].tolist() == [2**63, 2**64 - 2, 2**64 - 1]
    assert dev.filter(rec, "u", "between", 1, 2**64 - 2)["u"].tolist() == [1, 2**63 - 1, 2**63, 2**64 - 2]
    assert dev.filter(rec, "i", "<", -1)["i"].tolist() == [-2**63, -5]
    assert dev.filter(rec, "i", "between", -5, 2**63 - 1, indices=True).tolist() == [1, 2, 3, 4, 5]


def test_programs_go_through_libcsds_typed_calls():
    # every device-defined program has its typed call, and Python packs no parameter layout
    import nvme_csd.device
    import nvme_csd.program
    from nvme_csd import _core
    assert [n for n in nvme_csd.wire.PROGRAM_IDS if not hasattr(_core.programs, n)] == []
    assert not hasattr(nvme_csd.device, "struct") and not hasattr(nvme_csd.program, "struct")


def test_convert_matches_numpy(dev):
    x = (np.random.default_rng(4).standard_normal(4096) * 1000).astype(np.float32)
    assert np.array_equal(dev.convert(x, "float16"), x.astype(np.float16))
    back = dev.convert(x.astype(np.float16), "float32")
    assert np.array_equal(back, x.astype(np.float16).astype(np.float32))
    q = dev.convert(x, "int8", scale=10.0, zero_point=3)
    assert np.array_equal(q, np.clip(np.rint(x.astype(np.float64) / 10) + 3, -128, 127).astype(np.int8))


def test_checksum_and_decompress(dev):
    assert dev.checksum(b"123456789") == 0xE3069283
    assert dev.checksum(b"Nobody inspects the spammish repetition", "xxh64") == 0xFBCEA83C8A378BF1
    with pytest.raises(nvme_csd.ProgramFault):
        dev.decompress(b"definitely not zstd", 4096)


def test_conv2d_against_loops(dev):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 7, 7), dtype=np.float32)
    w = rng.standard_normal((3, 2, 3, 3), dtype=np.float32)
    b = rng.standard_normal(3, dtype=np.float32)
    y = dev.conv2d(x, w, b, stride=2, padding=1)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 4, 4))
    for k in range(3):
        for i in range(4):
            for j in range(4):
                want[0, k, i, j] = (xp[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[k]).sum() + b[k]
    assert np.allclose(y, want, atol=1e-4)


def test_slm_arrays_stay_in_the_drive(dev):
    a = dev.to_slm(np.eye(64, dtype=np.float32))
    b = dev.to_slm(np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    before = dev.bus()
    c = dev.gemm(a, b)                      # SLM in, SLM out
    after = dev.bus()
    assert isinstance(c, nvme_csd.SlmArray)
    assert after[2] - before[2] == 0        # nothing came back over the bus
    assert np.array_equal(c.numpy(), np.arange(64 * 64, dtype=np.float32).reshape(64, 64))


def test_async_calls_return_futures(dev):
    m = np.random.default_rng(6).standard_normal((64, 64)).astype(np.float32)
    futs = [dev.gemm_async(m, m) for _ in range(8)]
    for f in futs:
        assert np.allclose(f.result(), m @ m, atol=1e-3)


def test_store_mapping(dev):
    t = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    dev.store["t"] = t
    dev.store["blob"] = b"raw bytes"
    assert set(dev.store) == {"t", "blob"} and len(dev.store) == 2 and "t" in dev.store
    assert np.array_equal(dev.store["t"], t) and dev.store["t"].dtype == np.int64
    assert dev.store["blob"] == b"raw bytes"
    assert dev.store.read("t", 8, 16) == t.tobytes()[8:24]
    del dev.store["blob"]
    assert "blob" not in dev.store
    with pytest.raises(KeyError):
        dev.store["blob"]
    with pytest.raises(KeyError):
        del dev.store["blob"]
    assert [x.tolist() for x in dev.store.prefetch(["t", "t"])] == [t.tolist(), t.tolist()]


def flip_bit_in_file(path, needle):
    """Flips one bit in the middle of the only copy of `needle` in a file (the in-process
    device's namespace), behind the store."""
    data = path.read_bytes()
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0
    with open(path, "r+b") as f:
        f.seek(at + len(needle) // 2)
        b = f.read(1)[0]
        f.seek(at + len(needle) // 2)
        f.write(bytes([b ^ 0x10]))


def test_store_get_fails_on_damage(dev, tmp_path):
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("changes the in-process device's file")
    t = np.random.default_rng(7).integers(0, 1 << 62, 100000, dtype=np.int64)
    dev.store["t"] = t
    flip_bit_in_file(tmp_path / "ns.img", t.tobytes()[40000:40064])
    with pytest.raises(nvme_csd.CsdError, match="does not match its CRC-32C") as e:
        dev.store["t"]
    assert e.value.errno == errno.EIO


@pytest.mark.parametrize("replacement", ["larger", "smaller"])
def test_store_get_lands_again_when_replaced_after_its_stat(dev, monkeypatch, replacement):
    new = np.arange(5000, dtype=np.int64).reshape(50, 100) if replacement == "larger" else b"tiny"
    dev.store["t"] = np.arange(1000, dtype=np.float32)
    real = type(dev.store).stat
    seen = []

    def stat(self, name):  # another writer replaces the object between get()'s stat and its read
        info = real(self, name)
        if not seen:
            dev.store["t"] = new
        seen.append(info)
        return info

    monkeypatch.setattr(type(dev.store), "stat", stat)
    got = dev.store["t"]
    assert len(seen) == 2 and seen[0]["generation"] != seen[1]["generation"]
    if replacement == "larger":
        assert got.dtype == np.int64 and np.array_equal(got, new)
    else:
        assert got == new


def test_store_filter_in_drive(dev):
    rec = np.zeros(5000, dtype=[("id", "<u4"), ("v", "<f4")])
    rec["id"] = np.arange(5000)
    rec["v"] = np.arange(5000) / 5000
    dev.store["sales"] = rec.tobytes()
    n = dev.store.filter("sales", "hot", record_size=8, field_offset=4, field_type="<f4", op=">=", lo=0.8)
    assert n == 1000
    assert np.frombuffer(dev.store["hot"], dtype=rec.dtype)["id"].min() == 4000


def test_bad_input_is_a_clear_error_and_device_stays_usable(dev):
    m = np.ones((4, 4), dtype=np.float32)
    with pytest.raises(nvme_csd.InvalidParameters, match="dtype float64"):
        dev.gemm(np.ones((4, 4)), m)
    with pytest.raises(nvme_csd.InvalidParameters, match="C-contiguous"):
        dev.gemm(np.ones((8, 8), dtype=np.float32)[::2, ::2], m)
    with pytest.raises(nvme_csd.InvalidParameters, match="do not multiply"):
        dev.gemm(np.ones((4, 5), dtype=np.float32), m)
    with pytest.raises(nvme_csd.InvalidParameters, match="unknown op"):
        dev.reduce(m, "median")
    with pytest.raises(nvme_csd.InvalidProgram) as e:
        dev.execute(0x42, [(0, 16)])
    if dev.front_end == "nvme-cs":  # its own status, still an InvalidProgram
        assert e.value.status_name == "Invalid Program Index" and e.value.code == 0x18F
        assert isinstance(e.value, nvme_csd.errors.InvalidProgramIndex)
    else:
        assert e.value.status_name == "Invalid Program" and e.value.code == 0x1C0
    with pytest.raises(nvme_csd.SlmOutOfBounds):
        dev.execute("copy", [(dev.caps["slm_size"] - 4, 8), (0, 8)])
    assert np.allclose(dev.gemm(m, m), 4 * m)       # still usable


def test_closed_device(dev):
    dev.close()
    with pytest.raises(nvme_csd.DeviceClosed):
        dev.stats
    with pytest.raises(nvme_csd.CsdError):
        dev.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))


def test_writers_in_several_processes_lose_nothing(dev):
    """Processes sharing only the drive put and remove at once; every acknowledged
    update is there afterwards (the drive's Compare and Write arbitrates commits)."""
    import multiprocessing as mp

    from store_writer import writer   # a module of its own: the spawned writers import no pytest

    path = dev.path
    # On a drive in a TCG guest a process importing numpy and nvme_csd takes seconds: fewer
    # updates there, and one deadline for all writers together. The writers are forks of a
    # forkserver (started once per session, numpy and nvme_csd imported there once): fresh
    # processes that share nothing with this one but the drive, as spawned ones were, without
    # each importing numpy anew (spawned writers took 37-40 s per run in the guest).
    writers, n = 3, (15 if dev.transport == "inproc" else 6)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["numpy", "nvme_csd"])
    procs = [ctx.Process(target=writer, args=(path, dev.transport == "uring", w, n))
             for w in range(writers)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 600
    for p in procs:
        p.join(max(1.0, deadline - time.monotonic()))
        assert p.exitcode == 0, f"a writer process failed or was still running (exit code {p.exitcode})"
    want = {f"p{w}-{k}" for w in range(writers) for k in range(n) if not ((k - 0) % 3 == 2 and k + 2 < n)}
    assert set(dev.store.keys()) == want
    for name in want:
        w, k = (int(x) for x in name[1:].split("-"))
        a = dev.store[name]
        assert a.shape == (100 + 37 * k + w,) and (a == w * 100 + k).all(), name
    assert dev.store.reservations() == []


def _forked_writer(dev, w, n, acknowledged):
    """One writer forked after open: puts n objects into the inherited dev.store and
    reports each name as soon as its put returned."""
    for k in range(n):
        name = f"f{w}-{k}"
        dev.store[name] = np.full(50 + 13 * k + w, w * 1000 + k, dtype=np.int32)
        acknowledged.put(name)


def test_workers_forked_after_open_lose_nothing(dev):
    """multiprocessing workers forked after nvme_csd.open put into the inherited dev.store
    at once (as docs/python.md's users would); every acknowledged object is there, intact."""
    import multiprocessing as mp
    import queue

    if dev.transport != "inproc":
        pytest.skip("fork after open is for the in-process device; a worker opens its own Device elsewhere")
    try:
        mp.get_context("fork").Lock()
    except OSError as e:  # e.g. a guest whose /dev/shm this user may not write
        pytest.skip(f"multiprocessing has no semaphores here: {e}")
    workers, n = 3, 150
    dev.store["before-fork"] = np.arange(10)  # the parent's commits before fork, as a user's would be
    del dev.store["before-fork"]
    ctx = mp.get_context("fork")
    acknowledged = ctx.Queue()
    procs = [ctx.Process(target=_forked_writer, args=(dev, w, n, acknowledged)) for w in range(workers)]
    for p in procs:
        p.start()
    names = []
    while len(names) < workers * n and any(p.is_alive() for p in procs):
        try:
            names.append(acknowledged.get(timeout=1))
        except queue.Empty:
            pass
    for p in procs:
        p.join(120)
    while True:  # what was acknowledged just before a worker ended
        try:
            names.append(acknowledged.get(timeout=0.2))
        except queue.Empty:
            break
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    stored = set(dev.store.keys())
    missing = sorted(set(names) - stored)
    assert not missing, f"{len(missing)} of {len(names)} acknowledged objects missing: {missing[:10]}"
    for name in names:
        w, k = (int(x) for x in name[1:].split("-"))
        a = dev.store[name]
        assert a.shape == (50 + 13 * k + w,) and (a == w * 1000 + k).all(), name
    assert not failed, f"worker exit codes {failed}"
    assert len(names) == workers * n
    assert dev.store.reservations() == []


def test_timing_model_on_the_in_process_device(tmp_path):
    """emu:...?model=PRESET: commands complete no earlier than the modelled drive, and
    dev.stats tells where the modelled time went (docs/timing-model.md)."""
    import time
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("the in-process device's options")
    d = nvme_csd.open(f"emu:{tmp_path}/m.img?size=64M&model=gen3x4-4core&model.media-read-latency-ns=2000000")
    if d.where == "host":  # e.g. CSD_IGNORE_VENDOR=1 makes this drive a plain one
        pytest.skip("host mode: the programs and statistics are this process's core, not the modelled drive's")
    assert d.stats["model_media_busy_ns"] == 0
    t0 = time.monotonic()
    d.store.format()  # writes and flushes: each flush costs a modelled media write latency
    d.store["x"] = np.arange(1 << 16, dtype=np.float32)
    took = time.monotonic() - t0
    s = d.stats
    assert s["model_media_busy_ns"] > 0 and s["model_link_in_busy_ns"] > 0
    assert s["model_delay_ns"] > 0 or s["model_overruns"] > 0  # held back, or the host was slower
    t0 = time.monotonic()
    _ = d.store["x"]  # reads: at least one 2 ms media read latency
    assert time.monotonic() - t0 >= 0.002
    assert took > 0
    d.close()
    with pytest.raises(nvme_csd.CsdError, match="gen4x4-8core"):
        nvme_csd.open(f"emu:{tmp_path}/m.img?model=gen9")


def test_exact_mode_gives_the_in_process_device_the_models_clock(tmp_path):
    """emu:...&exact=on: dev.model_clock_ns is the model's clock; a 0.2 s media latency takes
    0.2 s of it and no host time (docs/timing-model.md, exact mode)."""
    import time
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("the in-process device's options")
    with nvme_csd.open(f"emu:{tmp_path}/x.img?size=64M&model=gen4x4-8core&"
                       "model.media-read-latency-ns=200000000&exact=on", front_end="vendor") as d:
        d.store.format()
        d.store["x"] = np.arange(4096, dtype=np.float32)
        v0, w0 = d.model_clock_ns, time.monotonic()
        assert np.array_equal(d.store["x"], np.arange(4096, dtype=np.float32))
        took = d.model_clock_ns - v0
        assert took >= 200_000_000, took        # at least one media read on the model's clock
        assert time.monotonic() - w0 < took / 1e9  # and less than that on the host's
        assert d.stats["model_overruns"] == 0
    with pytest.raises(nvme_csd.CsdError, match="exact=on needs a timing model"):
        nvme_csd.open(f"emu:{tmp_path}/x.img?exact=on")


def test_each_kind_of_drive_says_what_it_speaks_and_where_programs_run(tmp_path, monkeypatch):
    """A plain NVMe drive opens in host mode (programs on the host, the drive's results); a
    standard-only drive reports its capabilities' sources and no statistics (None, not 0).
    CSD_IGNORE_VENDOR=1 (the test aid of docs/real-drives.md) hides the vendor signature."""
    monkeypatch.setenv("CSD_IGNORE_VENDOR", "1")
    monkeypatch.delenv("CSD_FRONT_END", raising=False)
    with nvme_csd.open(f"emu:{tmp_path}/plain.img?size=64M") as plain:
        assert (plain.speaks, plain.front_end, plain.where, plain.offload) == ("none", "host", "host", False)
        assert plain.caps["sources"]["slm_size"] == "host"
        assert plain.checksum(b"123456789") == 0xE3069283
        a = plain.to_slm(np.arange(1024, dtype=np.uint32))  # SLM is this process's memory: a view shows it
        assert (a.numpy(copy=False) == np.arange(1024)).all()
        commands, to_dev, from_dev = plain.bus()
        assert (commands, to_dev, from_dev) == (0, 0, 0)  # SLM is host memory: nothing crossed
    with nvme_csd.open(f"emu:{tmp_path}/std.img?size=64M&slm=32M&nvme-cs=1&vendor-io=0") as std:
        assert (std.speaks, std.front_end, std.where, std.offload) == ("standard", "nvme-cs", "device", True)
        assert std.caps["slm_size"] == 32 << 20 and std.caps["sources"]["slm_size"] == "probe"
        assert std.caps["sources"]["programs"] == "standard"
        assert std.stats["available"] is False and std.stats["exec_cmds"] is None
        assert std.checksum(b"123456789") == 0xE3069283
