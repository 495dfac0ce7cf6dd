# SPDX-License-Identifier: MIT
"""numpy arrays of any dtype numpy can write to a .npy file -- structured ones (records,
nested, padded by align=True or by offsets with gaps, big-endian, titled) and plain ones --
through every door: the store mapping, open_many's DriveSet and csdctl put/get of .npy
files. Each gives back an equal dtype and equal bytes (padding included), records the dtype
as numpy's own .npy description, and refuses what it cannot represent. numpy is the judge:
np.save writes what csdctl reads, np.load reads what csdctl writes."""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nvme_csd

SALES = np.dtype([("id", "<u4"), ("value", "<f4"), ("region", "<u4"), ("amount", "<f4")])  # README's sales.npy
DTYPES = {
    "sales": SALES,
    "nested": np.dtype([("a", "<i2"), ("b", [("x", ">f8"), ("y", "u1", (3,))]), ("c", "<c8", (2, 2))]),
    "aligned": np.dtype([("a", "u1"), ("b", "<i4"), ("c", "u1")], align=True),
    "nested_aligned": np.dtype([("a", "u1"), ("b", np.dtype([("x", "u1"), ("y", "<i8")], align=True))], align=True),
    "gaps": np.dtype({"names": ["a", "b"], "formats": ["<i4", ">f8"], "offsets": [4, 16], "itemsize": 32}),
    "big_endian": np.dtype([("a", ">i4"), ("b", ">f8"), ("s", ">U3"), ("t", ">M8[ns]"), ("ok", "?")]),
    "titles": np.dtype([(("Title", "a"), "<i4"), ("b", "S3")]),
    "names": np.dtype([("it's", "<i4"), ('\u00e9\n"', ">i2")]),
    "float32": np.dtype(np.float32),
    "int64_be": np.dtype(">i8"),
    "unicode": np.dtype("<U5"),
    "datetime": np.dtype("<M8[us]"),
    "complex": np.dtype(np.complex64),
    "bool": np.dtype(bool),
}
OBJECT = np.array([1, "a", None], dtype=object)
OVERLAPPING = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<i2"], "offsets": [0, 0]})


def sample(dtype, shape=(7, 3), seed=0):
    """An array of this dtype and shape holding random bytes, padding included."""
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.frombuffer(bytearray(np.random.default_rng(seed).bytes(n)), dtype=dtype).reshape(shape)


def raw(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def assert_same(got, want):
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert np.array_equal(raw(got), raw(want))


def descr_text(dtype):
    """How numpy itself writes the dtype into a .npy header."""
    d = np.lib.format.dtype_to_descr(dtype)
    return d if isinstance(d, str) else repr(d)


@pytest.mark.parametrize("kind", DTYPES)
def test_store_round_trip(dev, kind):
    a = sample(DTYPES[kind])
    dev.store["t"] = a
    assert_same(dev.store["t"], a)
    assert dev.store.stat("t")["dtype"] == descr_text(a.dtype)
    assert np.array_equal(raw(dev.store.load("t").numpy()), raw(a))  # SLM keeps the dtype too


def test_store_round_trip_of_odd_shapes(dev):
    for shape in [(), (0,), (5, 0, 2), (1, 1, 1, 4)]:
        a = sample(SALES, shape, seed=len(shape))
        dev.store["s"] = a
        assert_same(dev.store["s"], a)


def test_store_refuses_what_it_cannot_represent(dev):
    with pytest.raises(nvme_csd.InvalidParameters, match="object dtype"):
        dev.store["o"] = OBJECT
    with pytest.raises(nvme_csd.InvalidParameters, match="object dtype"):
        dev.store["o"] = np.zeros(3, dtype=[("a", "<i4"), ("o", "O")])
    with pytest.raises(nvme_csd.InvalidParameters, match="no .npy description"):
        dev.store["o"] = np.zeros(3, dtype=OVERLAPPING)
    assert "o" not in dev.store and len(dev.store) == 0


@pytest.fixture
def drives(tmp_path):
    paths = [f"emu:{tmp_path}/d{i}.img?size=16M&slm=4M" for i in range(3)]
    with nvme_csd.open_many(paths) as ds:
        ds.format()
        yield ds


@pytest.mark.parametrize("placement", ["home", "striped", "replicated"])
@pytest.mark.parametrize("kind", ["sales", "nested", "aligned", "gaps", "big_endian", "titles", "float32"])
def test_drive_set_round_trip(drives, kind, placement):
    a = sample(DTYPES[kind], (101, 2))
    drives.put("t", a, placement=placement)
    assert_same(drives.get("t"), a)
    assert drives.stat("t")["dtype"] == descr_text(a.dtype)


def test_drive_set_refuses_what_it_cannot_represent(drives):
    for placement in ["home", "striped", "replicated"]:
        with pytest.raises(nvme_csd.InvalidParameters, match="object dtype"):
            drives.put("o", OBJECT, placement=placement)
        with pytest.raises(nvme_csd.InvalidParameters, match="no .npy description"):
            drives.put("o", np.zeros(3, dtype=OVERLAPPING), placement=placement)
    assert drives.list() == []


# ---------------------------------------------------------------- csdctl put/get of .npy files
def find_csdctl():
    """csdctl from $CSDCTL, else this tree's build, else the PATH (the guest's)."""
    top = Path(__file__).resolve().parents[2]
    for c in [os.environ.get("CSDCTL"), top / "build" / "meson" / "host" / "csdctl", shutil.which("csdctl")]:
        if c and os.access(c, os.X_OK):
            return str(c)
    return None


@pytest.fixture
def csdctl(tmp_path):
    exe = find_csdctl()
    if exe is None:
        pytest.skip("no csdctl: build it (make build) or set $CSDCTL")

    def run(*args, ok=True):
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        if ok:
            assert p.returncode == 0, f"csdctl {' '.join(args)}: {p.stderr}"
        return p
    return run


@pytest.mark.parametrize("kind", DTYPES)
def test_csdctl_npy_round_trip(csdctl, tmp_path, kind):
    path = f"emu:{tmp_path}/ns.img?size=16M&slm=4M"
    a = sample(DTYPES[kind], (11, 4), seed=3)
    np.save(tmp_path / "in.npy", a)
    csdctl("-d", path, "format")
    csdctl("-d", path, "put", "t", "in.npy")                    # numpy's file into the store
    csdctl("-d", path, "get", "t", "out.npy")                   # and back out as a file
    assert_same(np.load(tmp_path / "out.npy"), a)
    with nvme_csd.open(path) as dev:                           # the same object from Python
        assert_same(dev.store["t"], a)
        assert dev.store.stat("t")["dtype"] == descr_text(a.dtype)
        p = a[::-1].copy()                                     # (numpy chooses its padding bytes)
        dev.store["p"] = p                                     # Python's object to csdctl
    csdctl("-d", path, "get", "p", "p.npy")
    assert_same(np.load(tmp_path / "p.npy"), p)


def test_csdctl_refuses_what_it_cannot_represent(csdctl, tmp_path):
    path = f"emu:{tmp_path}/ns.img?size=16M&slm=4M"
    csdctl("-d", path, "format")
    np.save(tmp_path / "obj.npy", OBJECT, allow_pickle=True)
    p = csdctl("-d", path, "put", "o", "obj.npy", ok=False)
    assert p.returncode != 0 and "object dtype" in p.stderr, p.stderr
    np.save(tmp_path / "f.npy", np.asfortranarray(sample(SALES, (4, 3))))
    p = csdctl("-d", path, "put", "f", "f.npy", ok=False)
    assert p.returncode != 0 and "Fortran order" in p.stderr, p.stderr
    np.save(tmp_path / "short.npy", sample(SALES, (4,)))
    (tmp_path / "short.npy").write_bytes((tmp_path / "short.npy").read_bytes()[:-1])
    p = csdctl("-d", path, "put", "s", "short.npy", ok=False)
    assert p.returncode != 0 and "63 bytes" in p.stderr, p.stderr
    assert "0 objects" in csdctl("-d", path, "ls").stdout


def test_csdctl_drive_set_round_trip(csdctl, tmp_path):
    paths = [f"emu:{tmp_path}/d{i}.img?size=16M&slm=4M" for i in range(3)]
    drives = ",".join(paths)
    a = sample(DTYPES["nested_aligned"], (100,), seed=4)
    np.save(tmp_path / "in.npy", a)
    with nvme_csd.open_many(paths) as ds:
        ds.format()
    for placement in ["home", "striped", "replicated"]:
        csdctl("--drives", drives, "put", placement, "in.npy", "--placement", placement)
        csdctl("--drives", drives, "get", placement, f"{placement}.npy")
        assert_same(np.load(tmp_path / f"{placement}.npy"), a)
    with nvme_csd.open_many(paths) as ds:
        for placement in ["home", "striped", "replicated"]:
            assert_same(ds.get(placement), a)
