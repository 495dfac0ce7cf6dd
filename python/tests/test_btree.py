# SPDX-License-Identifier: MIT
"""Pointer chasing in the drive (1.2): a B+-tree built on the namespace, every key and
absent ones looked up by one chase each, against a dict; the hop limit and an LBA past
the namespace as errors."""
import os
from pathlib import Path

import numpy as np
import pytest

import nvme_csd
from nvme_csd.btree import RECORD_SIZE, BTree

BPF = Path(os.environ.get("CSD_BPF_DIR") or Path(__file__).resolve().parents[2] / "build/meson/examples/bpf")


@pytest.fixture
def lookup(dev):
    if not dev.caps["program_types"] & 2:
        pytest.skip("this device has no eBPF runtime")
    if not dev.caps.get("max_chase_hops"):
        pytest.skip("the drive has no chase (1.2)")
    if dev.front_end != "vendor":
        pytest.skip("a chase needs the vendor Execute (its namespace)")
    if not (BPF / "btree_lookup.o").exists():
        pytest.skip(f"no example programs in {BPF}")
    with dev.load_program(BPF / "btree_lookup.o", RECORD_SIZE) as prog:
        yield dev, prog


def test_lookups_equal_a_dict(lookup):
    dev, prog = lookup
    g = np.random.default_rng(4)
    keys = np.unique(g.integers(0, 10 ** 12, 5000, dtype=np.uint64))
    pairs = {int(k): int(v) for k, v in zip(keys, g.integers(0, 2 ** 61, len(keys), dtype=np.uint64))}
    tree = BTree.build(dev, pairs, 32, prog, force=True)  # over the fixture's store
    assert tree.depth == 3
    for k, v in pairs.items():
        assert tree[k] == v
    for k in g.integers(0, 10 ** 12, 500, dtype=np.uint64):
        assert tree.get(int(k)) == pairs.get(int(k))
    assert tree.lookup_hops(int(keys[0]))[1] == 3


def test_hop_limit_and_lba_past_the_namespace(lookup):
    dev, prog = lookup
    tree = BTree.build(dev, {i: i for i in range(100)}, 32, prog, fanout=2, force=True)  # depth 7
    assert tree.depth == 7
    with pytest.raises(nvme_csd.HopLimitExceeded) as e:
        prog.chase(tree.root_lba, [50], max_hops=3)
    assert e.value.dw0 > tree.root_lba
    with pytest.raises(nvme_csd.LbaOutOfRange):
        prog.chase(1 << 62, [1])  # past any namespace
    with pytest.raises(nvme_csd.InvalidParameters):
        prog.chase(tree.root_lba, [1], max_hops=nvme_csd.wire.MAX_CHASE_HOPS + 1)
    # refused on the host, before a command: what no 64-bit LBA or 32-bit hop limit can be
    # (an outside review: pybind's raw TypeError came out instead of InvalidArgument)
    for bad in (dict(start_lba=-1), dict(start_lba=1 << 64), dict(max_hops=-1), dict(max_hops=(1 << 32) + 1)):
        args = {**dict(start_lba=tree.root_lba, params=[1], max_hops=3), **bad}
        for call in (prog.chase, prog.chase_value):
            with pytest.raises(nvme_csd.InvalidArgument):
                call(**args)


def test_a_lookup_is_one_execute_of_mode_chase(lookup):
    # _core.programs.downloaded in mode chase: the one Execute (the result range its only
    # range, as libcsd's Program::run sends it), its answer in the completion; what the
    # trend script times (bench/trends/dependent_lookups.py)
    dev, prog = lookup
    tree = BTree.build(dev, {i * 3: i + 7 for i in range(500)}, 32, prog, fanout=4, force=True)
    out = dev.alloc(16)
    try:
        for key, want in ((30, (1 << 62) | 17), (31, 0)):
            dw0, dw1 = nvme_csd._core.programs.downloaded(dev._dev, prog.id, nvme_csd.wire.PROGRAM_MODES["chase"],
                                                          out.range(), (0, 0), tree.depth, [tree.root_lba, key])
            assert dw0 | dw1 << 32 == want
    finally:
        out.free()


def test_build_refuses_what_the_namespace_holds(dev, tmp_path):
    """As format does (docs/store.md): over the fixture's store, or an ext2/3/4 filesystem,
    or blocks holding data no tree wrote, BTree.build raises CsdError EEXIST naming it and
    writes nothing; force=True writes; a tree is rebuilt in place without it. Before, a
    tree at LBA 64 beside docs/python.md's store silently broke the store's objects."""
    import errno
    dev.store["kept"] = np.arange(1000)
    with pytest.raises(nvme_csd.CsdError, match="holds an object store") as e:
        BTree.build(dev, {1: 10}, 64, None)
    assert e.value.errno == errno.EEXIST and "force=True" in str(e.value)
    assert (dev.store["kept"] == np.arange(1000)).all()
    img = tmp_path / "fs.img"
    with open(img, "wb") as f:
        f.truncate(16 << 20)
        f.seek(1080)
        f.write(b"\x53\xef")
    with nvme_csd.open(f"emu:{img}", front_end="host") as plain:
        with pytest.raises(nvme_csd.CsdError, match="ext2/3/4 filesystem"):
            BTree.build(plain, {1: 10}, 1000, None)
        assert img.read_bytes()[1000 * 512:1001 * 512] == bytes(512), "the refused build wrote"
        assert BTree.build(plain, {1: 10}, 1000, None, force=True).blocks == 1
    img.write_bytes(bytes(16 << 20))
    with nvme_csd.open(f"emu:{img}", front_end="host") as plain:
        BTree.build(plain, {i: i for i in range(100)}, 1000, None)
        BTree.build(plain, {i: i for i in range(200)}, 1000, None)  # over its own nodes
        with open(img, "r+b") as f:
            f.seek(1020 * 512)
            f.write(b"data")
        with pytest.raises(nvme_csd.CsdError, match="LBA 1020 holds data"):
            BTree.build(plain, {i: i for i in range(1000)}, 1000, None)
