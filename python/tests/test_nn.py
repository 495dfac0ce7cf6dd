# SPDX-License-Identifier: MIT
"""nvme_csd.nn.EmbeddingBag against torch.nn.EmbeddingBag with the same arguments: sums of
f32 to the bit on values whose sums are exact (order-independent), the rest to a stated
tolerance; from_pretrained; the sparse training path against torch's dense gradients."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import nvme_csd  # noqa: E402
from nvme_csd.nn import EmbeddingBag  # noqa: E402


def vendor_drive(path):
    """The drive at path on the vendor front end (media programs read the namespace the
    vendor Execute names); skips the test where it has no embedding_bag."""
    d = nvme_csd.open(path, front_end="vendor")
    if "embedding_bag" not in d.programs:
        d.close()
        pytest.skip("the drive has no embedding_bag (command set 1.2)")
    return d


@pytest.fixture
def vdev(tmp_path):
    d = vendor_drive(os.environ.get("CSD_TEST_DEVICE") or f"emu:{tmp_path}/ns.img?size=64M&slm=32M")
    if os.environ.get("CSD_TEST_DEVICE"):  # the drive under test may hold the last test's store: a blank one
        lba, count = d.namespace["lba_size"], d.namespace["lba_count"]
        zeros = np.zeros(256 << 10, dtype=np.uint8)
        nvme_csd._core.programs.write_blocks(d._dev, 0, zeros)  # where the signatures lie (docs/store.md)
        nvme_csd._core.programs.write_blocks(d._dev, count - zeros.size // lba, zeros)
    yield d
    d.close()


def exact_table(rows, dim, seed):
    """Values k/64 with |k| <= 1000: every sum of a few hundred of them is exact in f32."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-1000, 1001, (rows, dim), generator=g).float() / 64


def bags(n_idx, rows, offsets, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, rows, (n_idx,), generator=g), torch.tensor(offsets)


def test_the_table_is_not_written_over_a_store_or_a_filesystem(vdev, tmp_path):
    """A real drive treated with care (docs/store.md): over the object store, or a namespace
    holding a filesystem, the table (default table_lba 0: the store's superblock) is refused
    with CsdError EEXIST naming it and force=True, and nothing is written; force=True writes.
    Before, the table went over the store's superblock and every object was lost."""
    import errno
    vdev.store.format(force=True)
    vdev.store["kept"] = np.arange(1000)
    table = exact_table(20, 4, 9)
    for make in (lambda **k: EmbeddingBag.from_pretrained(table, device=vdev, **k),
                 lambda **k: EmbeddingBag(20, 4, device=vdev, table_lba=64, **k)):
        with pytest.raises(nvme_csd.CsdError, match="holds an object store") as e:
            make()
        assert e.value.errno == errno.EEXIST and "EmbeddingBag(..., force=True)" in str(e.value)
        assert (vdev.store["kept"] == np.arange(1000)).all(), "the refused table was written"
    assert torch.equal(EmbeddingBag.from_pretrained(table, device=vdev, table_lba=2048, force=True).weight, table)
    img = tmp_path / "fs.img"
    with open(img, "wb") as f:
        f.truncate(16 << 20)
        f.seek(1080)
        f.write(b"\x53\xef")
    with vendor_drive(f"emu:{img}") as d:
        with pytest.raises(nvme_csd.CsdError, match="ext2/3/4 filesystem"):
            EmbeddingBag.from_pretrained(table, device=d, table_lba=8)
    assert img.read_bytes()[8 * 512:16 * 512] == bytes(8 * 512), "the refused table was written"


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_forward_equals_torch(vdev, mode):
    table = exact_table(1000, 48, 1)
    idx, offs = bags(300, 1000, [0, 5, 5, 120, 299], 2)  # an empty bag and a bag of one
    ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=64, mode=mode)
    ref = torch.nn.EmbeddingBag.from_pretrained(table, mode=mode)
    # mean: one division by the count after an exact sum, the same rounding as torch's
    assert torch.equal(ours(idx, offs), ref(idx, offs))


def test_weights_i32_include_last_offset_and_2d(vdev):
    table = exact_table(200, 16, 3)
    ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=8, mode="sum", include_last_offset=True)
    ref = torch.nn.EmbeddingBag.from_pretrained(table, mode="sum", include_last_offset=True)
    idx = torch.tensor([3, 199, 3, 0, 50, 51, 7], dtype=torch.int32)
    offs = torch.tensor([0, 2, 2, 6], dtype=torch.int32)
    w = torch.tensor([0.5, -2.0, 1.0, 4.0, 0.25, 1.0, 8.0])  # powers of two: exact products
    assert torch.equal(ours(idx, offs, per_sample_weights=w), ref(idx, offs, per_sample_weights=w))
    two_d = torch.tensor([[1, 2, 3], [4, 5, 199]])
    plain = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=8, mode="sum")
    assert torch.equal(plain(two_d), torch.nn.EmbeddingBag.from_pretrained(table, mode="sum")(two_d))


def test_random_f32_and_half_tables_within_tolerance(vdev):
    """Random f32 values: sums in index order as torch's CPU kernel, compared at 1e-6
    relative; f16 / bf16 tables at their own precision."""
    g = torch.Generator().manual_seed(4)
    idx, offs = bags(500, 300, [0, 100, 350], 5)
    for dtype, tol in [(torch.float32, 1e-5), (torch.float16, 1e-2), (torch.bfloat16, 6e-2)]:
        table = torch.randn(300, 32, generator=g).to(dtype)
        ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=16, mode="mean")
        ref = torch.nn.EmbeddingBag.from_pretrained(table.float(), mode="mean")
        got = ours(idx, offs)
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), ref(idx, offs), rtol=tol, atol=tol)


def test_bad_indices_are_refused_and_the_table_read_back(vdev):
    table = exact_table(100, 8, 6)
    ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=8, mode="sum")
    assert torch.equal(ours.weight, table)
    with pytest.raises(nvme_csd.InvalidParameters):
        ours(torch.tensor([1, 100]), torch.tensor([0]))
    with pytest.raises(ValueError):
        EmbeddingBag(vdev.namespace["lba_count"], 1024, device=vdev)  # larger than the namespace


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_training_updates_the_touched_rows_like_torch(vdev, mode):
    table = exact_table(64, 8, 7)
    ours = EmbeddingBag(64, 8, device=vdev, table_lba=32, mode=mode, _weight=table)
    ref = torch.nn.EmbeddingBag.from_pretrained(table.clone(), mode=mode, freeze=False)
    idx, offs = torch.tensor([1, 5, 5, 9, 1, 60]), torch.tensor([0, 3])
    target = torch.full((2, 8), 0.5)
    for model in (ours, ref):
        loss = ((model(idx, offs) - target) ** 2).sum()
        loss.backward()
    dense = ours.grad.to_dense()
    torch.testing.assert_close(dense, ref.weight.grad, rtol=1e-6, atol=1e-6)
    assert set(ours.grad.coalesce().indices()[0].tolist()) <= {1, 5, 9, 60}  # sparse: touched rows only
    ours.apply_gradients(0.125)
    with torch.no_grad():
        ref.weight -= 0.125 * ref.weight.grad
    torch.testing.assert_close(ours.weight, ref.weight, rtol=1e-6, atol=1e-6)
    assert torch.equal(ours.weight[2], table[2])  # untouched rows stay as they were


# ---- an outside review of issue 31: padding_idx, the other torch arguments, weights' length
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
def test_padding_idx_equals_torch(vdev, mode, last):
    table = exact_table(300, 24, 5)
    g = torch.Generator().manual_seed(6)
    idx = torch.randint(0, 300, (120,), generator=g)
    idx[::3] = 7                       # padding entries spread over the bags
    idx[40:60] = 7                     # a bag of padding only (offsets 40..60)
    offs = torch.tensor([0, 10, 40, 60, 60, 119] + ([120] if last else []))
    for pad in (7, 7 - 300):           # negative: from the end, as torch
        ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=64, mode=mode, padding_idx=pad,
                                            include_last_offset=last)
        ref = torch.nn.EmbeddingBag.from_pretrained(table, mode=mode, padding_idx=pad, include_last_offset=last)
        got, want = ours(idx, offs), ref(idx, offs)
        assert torch.equal(got, want), (mode, pad)
        assert torch.equal(got[2], torch.zeros(24))  # padding only: zeros
    if mode == "sum":
        w = torch.tensor([2.0 ** (i % 5 - 2) for i in range(120)])
        ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=64, mode="sum", padding_idx=7,
                                            include_last_offset=last)
        ref = torch.nn.EmbeddingBag.from_pretrained(table, mode="sum", padding_idx=7, include_last_offset=last)
        assert torch.equal(ours(idx, offs, per_sample_weights=w), ref(idx, offs, per_sample_weights=w))


def test_padding_idx_gets_no_gradient_and_starts_as_zeros(vdev):
    bag = EmbeddingBag(50, 8, device=vdev, table_lba=64, mode="mean", padding_idx=3)
    assert torch.equal(bag.weight[3], torch.zeros(8))
    ref = torch.nn.EmbeddingBag(50, 8, mode="mean", padding_idx=3)
    with torch.no_grad():
        ref.weight.copy_(bag.weight)
    idx, offs = torch.tensor([3, 1, 3, 2, 3, 3]), torch.tensor([0, 3, 4])
    bag(idx, offs).sum().backward()
    ref(idx, offs).sum().backward()
    assert 3 not in bag._grad
    assert torch.allclose(bag.grad.to_dense(), ref.weight.grad)


def test_the_other_torch_arguments(vdev):
    table = exact_table(20, 4, 1)
    with pytest.raises(NotImplementedError, match="max_norm"):
        EmbeddingBag(20, 4, max_norm=1.0, device=vdev)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        EmbeddingBag.from_pretrained(table, scale_grad_by_freq=True, device=vdev)
    with pytest.raises(ValueError, match="padding_idx"):
        EmbeddingBag(20, 4, padding_idx=20, device=vdev)
    # sparse: the gradient is the touched rows either way (bag.grad, a sparse tensor)
    for sparse in (False, True):
        bag = EmbeddingBag.from_pretrained(table, freeze=False, sparse=sparse, mode="sum", device=vdev)
        bag(torch.tensor([1, 2]), torch.tensor([0])).sum().backward()
        assert bag.sparse == sparse and bag.grad.is_sparse and sorted(bag._grad) == [1, 2]
    # torch's positional order: (num_embeddings, embedding_dim, max_norm, norm_type,
    # scale_grad_by_freq, mode, sparse, _weight, include_last_offset, padding_idx)
    bag = EmbeddingBag(20, 4, None, 2.0, False, "sum", False, table, True, 5, device=vdev)
    assert bag.mode == "sum" and bag.include_last_offset and bag.padding_idx == 5


def test_per_sample_weights_of_another_length_are_refused(vdev):
    table = exact_table(20, 4, 1)
    bag = EmbeddingBag.from_pretrained(table, mode="sum", device=vdev)
    idx, offs = torch.tensor([1, 2, 3]), torch.tensor([0])
    before = vdev.bus()[0]
    for n in (2, 4):
        with pytest.raises(ValueError, match="one per-sample weight per index"):
            bag(idx, offs, per_sample_weights=torch.ones(n))
    assert vdev.bus()[0] == before  # refused on the host: no command
    # and by the drive (the device core owns the rule): a weights range one element longer
    P = nvme_csd._core.programs
    i, o, w = vdev.to_slm(idx.numpy()), vdev.to_slm(offs.numpy()), vdev.to_slm(np.ones(4, np.float32))
    out = vdev.alloc(16)
    with pytest.raises(nvme_csd.InvalidParameters):
        P.embedding_bag(vdev._dev, i.range(), o.range(), w.range(), out.range(), 0, 20, 4, 0, 0, False, 1, False)
    P.embedding_bag(vdev._dev, i.range(), o.range(), w.range(12), out.range(), 0, 20, 4, 0, 0, False, 1, False)


@pytest.fixture
def big_vdev(tmp_path):
    """A namespace larger than what one Execute may read (CSD_MEDIA_MAX_STAGE, 64 MiB)."""
    d = vendor_drive(os.environ.get("CSD_TEST_DEVICE_BIG") or f"emu:{tmp_path}/big.img?size=160M&slm=32M")
    yield d
    d.close()


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_a_batch_past_one_executes_reads_is_split_and_equals_torch(big_vdev, mode):
    """Issue 40: rows spanning 80 MiB of table (one Execute reads at most 64 MiB): the module
    splits the batch into Executes of whole bags, and a bag that alone needs more is pooled
    from its rows; torch's result either way (before: InvalidParameters)."""
    rows, dim = 81920, 256  # 1 KiB rows: 80 MiB
    table = exact_table(rows, dim, 7)
    ours = EmbeddingBag.from_pretrained(table, device=big_vdev, table_lba=0, mode=mode)
    ref = torch.nn.EmbeddingBag.from_pretrained(table, mode=mode)
    every = torch.randperm(rows, generator=torch.Generator().manual_seed(8))
    # 8 bags over every row, then one bag of every row, then both in one batch
    offs = torch.arange(0, rows, rows // 8)
    assert torch.equal(ours(every, offs), ref(every, offs))
    one = torch.tensor([0])  # f32 sums of 81,920 values k/64 stay exact; the mean divides once
    assert torch.equal(ours(every, one), ref(every, one))
    both = torch.cat([every, every[:1000]])
    offs2 = torch.tensor([0, rows, rows + 10])
    assert torch.equal(ours(both, offs2), ref(both, offs2))


def test_an_empty_batch_is_checked_as_torch_checks_it(vdev):
    """Issue 40: no indices, yet offsets past the end, a first offset not 0 or weights with
    mode 'max' are refused as torch refuses them (before: zeros)."""
    table = exact_table(10, 4, 9)
    empty = torch.tensor([], dtype=torch.int64)
    for mode in ("sum", "max"):
        ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=0, mode=mode)
        ref = torch.nn.EmbeddingBag.from_pretrained(table, mode=mode)
        assert torch.equal(ours(empty, torch.tensor([0, 0])), ref(empty, torch.tensor([0, 0])))
        for bad in (torch.tensor([0, 3]), torch.tensor([1])):
            with pytest.raises(Exception):
                ref(empty, bad)
            with pytest.raises(ValueError):
                ours(empty, bad)
    ours = EmbeddingBag.from_pretrained(table, device=vdev, table_lba=0, mode="max")
    ref = torch.nn.EmbeddingBag.from_pretrained(table, mode="max")
    w = torch.tensor([])
    with pytest.raises(Exception):
        ref(empty, torch.tensor([0]), per_sample_weights=w)
    with pytest.raises(ValueError):
        ours(empty, torch.tensor([0]), per_sample_weights=w)
