# SPDX-License-Identifier: MIT
"""nvme_csd.open_many: several in-process drives as one, each fan-out checked against
numpy (or $CSD_TEST_DRIVES, comma-separated drive paths, e.g. in the guest)."""
import os

import numpy as np
import pytest

import nvme_csd


@pytest.fixture
def drives(tmp_path):
    env = os.environ.get("CSD_TEST_DRIVES")
    paths = env.split(",") if env else [f"emu:{tmp_path}/d{i}.img?size=64M&slm=32M" for i in range(3)]
    with nvme_csd.open_many(paths) as ds:
        ds.format(force=True)  # the guest's drives may hold the last test's stores
        yield ds


def test_placement_and_striping(drives):
    drives.put("cfg", b"whole object")
    assert drives.get("cfg") == b"whole object"
    assert 0 <= drives.home("cfg") < len(drives)
    t = np.random.default_rng(1).standard_normal((1001, 5)).astype(np.float32)
    drives.put("t", t, placement="striped")
    assert drives.striped("t") and not drives.striped("cfg")
    assert np.array_equal(drives.get("t"), t)
    assert drives.stat("t")["shape"] == [1001, 5]
    assert sorted(o["name"] for o in drives.list()) == ["cfg", "t"]
    drives.remove("t")
    assert [o["name"] for o in drives.list()] == ["cfg"]


def test_fan_out_matches_numpy(drives):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(50000).astype(np.float32)
    drives.put("x", x, placement="striped")
    assert drives.reduce("x", "sum") == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5, abs=1e-2)
    assert drives.reduce("x", "mean") == pytest.approx(float(x.astype(np.float64).mean()), abs=1e-5)
    assert drives.reduce("x", "max") == float(x.max()) and drives.reduce("x", "min") == float(x.min())
    assert drives.reduce("x", "argmax") == int(x.argmax()) and drives.reduce("x", "argmin") == int(x.argmin())
    rec = np.zeros(30000, dtype=[("id", "<u4"), ("v", "<f4")])
    rec["id"] = np.arange(30000)
    rec["v"] = rng.random(30000, dtype=np.float32)
    drives.put("rec", rec, placement="striped")
    n = drives.filter("rec", "hot", record_size=8, field_offset=4, field_type=np.float32, op=">", lo=0.9)
    got = drives.get("hot").view(rec.dtype).reshape(-1)
    assert n == int((rec["v"] > 0.9).sum()) and np.array_equal(got, rec[rec["v"] > 0.9])
    # the field type by the command set's name, as csdctl's --type; unknown names are
    # InvalidArgument naming the known ones (they were KeyError and numpy's TypeError)
    assert drives.filter("rec", "hot", record_size=8, field_offset=4, field_type="f32", op=">", lo=0.9) == n
    with pytest.raises(nvme_csd.InvalidArgument, match="unknown op 'bogus'; known"):
        drives.filter("rec", "hot", record_size=8, field_offset=4, field_type=np.float32, op="bogus", lo=0.9)
    with pytest.raises(nvme_csd.InvalidArgument, match="field type 'f128' is not one of"):
        drives.filter("rec", "hot", record_size=8, field_offset=4, field_type="f128", op=">", lo=0.9)
    a = rng.standard_normal((97, 40)).astype(np.float32)
    b = rng.standard_normal((40, 21)).astype(np.float32)
    drives.put("a", a, placement="striped")
    drives.put("b", b, placement="replicated")
    drives.gemm("a", "b", "c")
    assert np.allclose(drives.get("c"), a @ b, rtol=1e-4, atol=1e-4)


def test_each_drive_has_its_statistics(drives):
    # a filter over a striped table runs on every drive: each one's own C1h counters show it
    drives.put("s", np.arange(3000, dtype=np.float32), placement="striped")
    before = [drives.stats(i) for i in range(len(drives))]
    drives.filter("s", "hot", record_size=4, field_offset=0, field_type="f4", op="lt", lo=10.0)
    for i in range(len(drives)):
        after = drives.stats(i)
        assert after["available"] is True
        assert after["exec_cmds"] > before[i]["exec_cmds"], (i, before[i], after)
    with pytest.raises(IndexError):
        drives.stats(len(drives))


def test_each_drive_has_its_model_clock(tmp_path):
    """exact=on: each drive's own virtual clock (DriveSet.model_clock_ns(i)) moves by the
    model's time of its own commands only: a whole object read from its home drive moves that
    drive's clock by at least a 0.2 s media read, in less host time, and a drive it does not
    touch not at all."""
    import time
    if os.environ.get("CSD_TEST_DRIVES"):
        pytest.skip("the in-process device's options")
    paths = [f"emu:{tmp_path}/c{i}.img?size=64M&slm=32M&model=gen4x4-8core&"
             "model.media-read-latency-ns=200000000&exact=on" for i in range(3)]
    with nvme_csd.open_many(paths) as ds:
        ds.format(force=True)
        ds.put("w", b"a whole object")
        home = ds.home("w")
        v0, w0 = [ds.model_clock_ns(i) for i in range(len(ds))], time.monotonic()
        assert ds.get("w") == b"a whole object"
        took = [ds.model_clock_ns(i) - v0[i] for i in range(len(ds))]
        assert took[home] >= 200_000_000, took
        assert time.monotonic() - w0 < took[home] / 1e9
        idle = [i for i in range(len(ds)) if i not in (0, home)]  # drive 0's catalog says if striped
        assert idle and all(took[i] == 0 for i in idle), (home, took)
        with pytest.raises(IndexError):
            ds.model_clock_ns(len(ds))


def test_a_failing_drive_is_named(drives, tmp_path):
    if len(drives) < 2:
        pytest.skip("needs two drives")
    drives.put("x", np.arange(3000, dtype=np.float32), placement="striped")
    part = drives._set.part_name("x", 1)
    with nvme_csd.open(drives._set.name(1)) as one:
        del one.store[part]
    with pytest.raises(nvme_csd.NotFound, match=r"on drive 1 \("):
        drives.get("x")


def test_a_closed_set_raises_device_closed(tmp_path):
    ds = nvme_csd.open_many([f"emu:{tmp_path}/c{i}.img?size=16M&slm=8M" for i in range(2)])
    ds.format()
    assert not ds.closed
    ds.close()
    assert ds.closed
    with pytest.raises(nvme_csd.DeviceClosed):
        ds.get("x")
    with pytest.raises(nvme_csd.DeviceClosed):
        len(ds)
