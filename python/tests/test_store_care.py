# SPDX-License-Identifier: MIT
"""Real drives treated with care (issue 43): format refuses a namespace that holds a
partition table, a filesystem or a store unless told force=True; an exception from a
progress callback cancels the put (nothing stored, its reservation released); read-only
opens serve reads and refuse writes."""
import contextlib
import errno
import fcntl
import os
import re
import struct

import numpy as np
import pytest

import nvme_csd


def image(path, signatures, size=64 << 20):
    """A zeroed backing file of size bytes with bytes written at the given offsets."""
    with open(path, "wb") as f:
        f.truncate(size)
        for pos, data in signatures:
            f.seek(pos)
            f.write(data)


@pytest.mark.parametrize("what, signatures", [
    ("GPT partition table", [(512, b"EFI PART")]),
    ("ext2/3/4 filesystem", [(1080, b"\x53\xef")]),
    ("MBR partition table", [(446, b"\x80\x00\x02\x00\x83" + bytes(11)), (510, b"\x55\xaa")]),
])
def test_format_refuses_what_the_namespace_holds(tmp_path, what, signatures):
    image(tmp_path / "ns.img", signatures)
    with nvme_csd.open(f"emu:{tmp_path}/ns.img") as dev:
        with pytest.raises(nvme_csd.CsdError, match=what) as e:
            dev.store.format()
        assert "force=True" in str(e.value)
        with pytest.raises(nvme_csd.CsdError):
            len(dev.store)   # no store was written
        dev.store.format(force=True)
        assert len(dev.store) == 0


def test_format_refuses_a_store_and_a_zeroed_namespace_needs_no_force(tmp_path):
    with nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M") as dev:
        dev.store.format()          # a brand-new file: zeros
        dev.store["kept"] = b"abc"
        with pytest.raises(nvme_csd.CsdError, match="object store"):
            dev.store.format()
        assert dev.store["kept"] == b"abc"
        dev.store.format(force=True)
        assert "kept" not in dev.store


def test_drive_set_format_refuses_before_writing_any_drive(tmp_path):
    image(tmp_path / "b.img", [(512, b"EFI PART")])
    paths = [f"emu:{tmp_path}/a.img?size=64M", f"emu:{tmp_path}/b.img"]
    with nvme_csd.open_many(paths) as ds:
        with pytest.raises(nvme_csd.CsdError, match="GPT"):
            ds.format()
    with nvme_csd.open(paths[0]) as dev:
        with pytest.raises(nvme_csd.CsdError):
            len(dev.store)   # drive a was spared too
    with nvme_csd.open_many(paths) as ds:
        ds.format(force=True)
        assert ds.list() == []


def test_an_exception_from_progress_cancels_the_put(dev):
    big = np.arange(9 << 18, dtype=np.int32)   # 9 MiB: progress every 4 MiB
    dev.store["old"] = b"the old version"
    calls = []

    def stop(done, total):
        calls.append(done)
        raise KeyboardInterrupt   # as Ctrl-C in the callback would
    with pytest.raises(KeyboardInterrupt):
        dev.store.put("big", big, progress=stop)
    assert calls == [4 << 20], "the put went on after its callback raised"
    assert "big" not in dev.store, "the put was committed after its callback raised"
    assert dev.store.reservations() == [], "the cancelled put left its reservation"
    with pytest.raises(RuntimeError, match="stop here"):   # replacing: the old version stays
        dev.store.put("old", big, progress=lambda d, t: (_ for _ in ()).throw(RuntimeError("stop here")))
    assert dev.store["old"] == b"the old version"
    assert dev.store.reservations() == []


@contextlib.contextmanager
def unwritable(path):
    """path made unwritable to this process while the block runs (mode 0444; for root,
    also the immutable flag where the filesystem has it); yields whether opening it to
    write fails."""
    FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10
    path.chmod(0o444)
    flags = None
    if os.geteuid() == 0:
        with open(path, "rb") as f:
            try:
                flags = struct.unpack("l", fcntl.ioctl(f, FS_IOC_GETFLAGS, struct.pack("l", 0)))[0]
                fcntl.ioctl(f, FS_IOC_SETFLAGS, struct.pack("l", flags | FS_IMMUTABLE_FL))
            except OSError:
                flags = None
    try:
        yield os.geteuid() != 0 or flags is not None
    finally:
        if flags is not None:
            with open(path, "rb") as f:
                fcntl.ioctl(f, FS_IOC_SETFLAGS, struct.pack("l", flags))
        path.chmod(0o644)


@pytest.mark.parametrize("front_end", ["vendor", "host"])
def test_read_only_open_serves_reads_and_refuses_writes(tmp_path, front_end):
    path = tmp_path / "ns.img"
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with nvme_csd.open(f"emu:{path}?size=64M") as dev:
        dev.store.format()
        dev.store["a"] = a
        dev.store["b"] = b"blob"
    before = path.read_bytes()
    with unwritable(path) as locked:
        if locked:
            with pytest.raises(nvme_csd.CsdError, match=r"read_only=True"):
                nvme_csd.open(f"emu:{path}")
        with nvme_csd.open(f"emu:{path}", read_only=True, front_end=front_end) as dev:
            assert dev.read_only and dev.front_end == front_end
            assert sorted(dev.store) == ["a", "b"] and dev.store.stat("a")["shape"] == [3, 4]
            assert np.array_equal(dev.store["a"], a) and dev.store["b"] == b"blob"
            assert dev.caps["programs"] and isinstance(dev.stats, dict)
            x = dev.store.load("a")                                  # SLM Load, then a program that reads
            assert dev.checksum(x) == dev.checksum(a)
            for write in (lambda: dev.store.__setitem__("c", b"new"), lambda: dev.store.__delitem__("a"),
                          lambda: dev.store.format(force=True), lambda: dev.store.reclaim(0),
                          lambda: dev._dev.slm_store(64, 1, x.offset)):
                with pytest.raises(nvme_csd.ReadOnly, match="opened read-only"):
                    write()
            assert np.array_equal(dev.store["a"], a)
    assert path.read_bytes() == before, "a read-only open changed the image"


def test_a_table_is_not_written_over_stored_objects(tmp_path):
    """An EmbeddingBag's table is written as raw blocks of the namespace: over an object of
    the store there (or its superblocks) it is refused (EEXIST, naming the object and an LBA
    past what the store uses) and the object stays intact; from that LBA it is written. It
    overwrote the object (which then failed its CRC-32C) or the superblock (the store came
    back empty)."""
    nn = pytest.importorskip("nvme_csd.nn")  # torch
    with nvme_csd.open(f"emu:{tmp_path}/d.img?size=64M") as dev:
        dev.store.format()
        x = np.random.default_rng(1).random(1 << 18, dtype=np.float32)  # 1 MiB from LBA 16
        dev.store["x"] = x
        for lba, what in ((100, "object 'x'"), (0, "its superblocks")):
            with pytest.raises(nvme_csd.CsdError, match="of the object store on this namespace") as e:
                nn.EmbeddingBag(100, 8, device=dev, table_lba=lba)
            assert e.value.errno == errno.EEXIST and what in str(e.value), e.value
        free = int(re.search(r"write from LBA (\d+)", str(e.value)).group(1))
        assert free >= 16 + x.nbytes // 512
        nn.EmbeddingBag(100, 8, device=dev, table_lba=free)
        assert np.array_equal(dev.store["x"], x) and list(dev.store) == ["x"]
