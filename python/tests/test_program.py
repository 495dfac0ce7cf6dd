# SPDX-License-Identifier: MIT
"""Programs of your own: eBPF objects from examples/bpf (built by clang at build time;
$CSD_BPF_DIR in the guest) loaded with dev.load_program and run over structured arrays,
checked against numpy."""
import errno
import os
from pathlib import Path

import numpy as np
import pytest

import nvme_csd

BPF = Path(os.environ.get("CSD_BPF_DIR") or Path(__file__).resolve().parents[2] / "build/meson/examples/bpf")
REC = np.dtype([("key", "<i4"), ("field", "<u4"), ("payload", "<u8")])


def records(n, seed=5):
    r = np.zeros(n, dtype=REC)
    g = np.random.default_rng(seed)
    r["key"] = g.integers(-1000, 1000, n)
    r["field"] = g.integers(0, 2 ** 32, n, dtype=np.uint64)
    r["payload"] = np.arange(n)
    return r


@pytest.fixture
def ebpf(dev):
    if not dev.caps["program_types"] & 2:
        pytest.skip("this device has no eBPF runtime")
    if not (BPF / "threshold.o").exists():
        pytest.skip(f"no example programs in {BPF}")
    return dev


def test_filter_map_reduce_match_numpy(ebpf):
    dev = ebpf
    r = records(20000)
    with dev.load_program(BPF / "threshold.o", REC.itemsize) as prog:
        # the standard's Program List (82h) has no names: libcsd names the index
        unnamed = dev.caps["sources"].get("programs") == "standard"
        assert prog.name == (f"ebpf-{prog.id:04x}" if unnamed else "threshold")
        got = prog.filter(r, [123])
        assert got.dtype == REC and np.array_equal(got, r[r["key"] > 123])
        assert prog.reduce(r, [123]) == int((r["key"] > 123).sum())
        assert len(prog.filter(r, [2000])) == 0
    with dev.load_program((BPF / "project.o").read_bytes(), REC.itemsize) as prog:
        out = prog.map(r, [3])
        assert out.dtype == np.uint64
        assert np.array_equal(out, r["field"].astype(np.uint64) * 3 + np.arange(len(r), dtype=np.uint64))
    with dev.load_program(BPF / "histogram.o", REC.itemsize) as prog:
        edges = [-1000, -500, 0, 500, 1000]
        counts = [prog.reduce(r, [lo, hi]) for lo, hi in zip(edges, edges[1:])]
        assert counts == np.histogram(r["key"], bins=edges)[0].tolist()
        assert prog.reduce(r, [0, 0, 1]) == int(r["key"].astype(np.int64).sum()) % 2 ** 64


def test_records_already_in_slm_and_as_rows(ebpf):
    dev = ebpf
    r = records(1000, seed=8)
    with dev.load_program(BPF / "threshold.o", 16) as prog:
        s = dev.to_slm(r)
        assert np.array_equal(prog.filter(s, [0]), r[r["key"] > 0])
        rows = r.view(np.uint8).reshape(len(r), 16)
        assert np.array_equal(prog.filter(rows, [0]), rows[r["key"] > 0])
        with pytest.raises(nvme_csd.InvalidParameters):
            prog.filter(np.zeros(10, dtype="<u8"), [0])  # 8-byte records
        with pytest.raises(nvme_csd.InvalidParameters):
            prog.filter(r, list(range(9)))  # nine params


def test_refused_images_and_slots(ebpf):
    dev = ebpf
    with pytest.raises(nvme_csd.InvalidProgramImage) as e:
        dev.load_program(b"\x7fELF" + bytes(200), 16)
    assert e.value.dw0 == 0xFFFFFFFF
    prog = dev.load_program(BPF / "prefix.o", 16).keep()
    slot = prog.id
    del prog
    assert any(i == slot for i, _, _ in dev.caps["programs"])  # kept
    with pytest.raises(nvme_csd.ProgramSlotInUse):
        dev.load_program(BPF / "prefix.o", 16, slot=slot)
    dev._dev.program_unload(slot)
    assert not any(i == slot for i, _, _ in dev.caps["programs"])
    with pytest.raises(nvme_csd.CsdError) as e:  # the drive: Invalid Program; csd.ko: not this file's
        dev._dev.program_unload(slot)
    assert isinstance(e.value, nvme_csd.InvalidProgram) or (dev.transport == "kmod" and e.value.errno == errno.EPERM)
    if dev.stats["available"]:  # a standard-only drive has no statistics log (C1h)
        assert dev.stats["program_load_rejects"] >= 1
