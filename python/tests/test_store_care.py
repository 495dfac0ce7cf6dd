# SPDX-License-Identifier: MIT
"""Real drives treated with care (issue 43): format refuses a namespace that holds a
partition table, a filesystem or a store unless told force=True; an exception from a
progress callback cancels the put (nothing stored, its reservation released)."""
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
