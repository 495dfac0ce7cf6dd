# SPDX-License-Identifier: MIT
"""nvme_csd.data: the store as a torch data source (StoreDataset, Prefetcher)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from nvme_csd import gpu  # noqa: E402
from nvme_csd.data import Prefetcher, StoreDataset  # noqa: E402


@pytest.fixture
def batches(dev):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((64, 33)).astype(np.float32) for _ in range(7)]
    for i, a in enumerate(arrays):
        dev.store[f"b{i}"] = a
    return arrays


def test_dataset_items_are_the_stored_tensors(dev, batches):
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))], transform=lambda x: x * 2)
    assert len(ds) == len(batches)
    for i, a in enumerate(batches):
        assert torch.equal(ds[i], torch.from_numpy(a) * 2)


def test_dataset_works_with_a_dataloader(dev, batches):
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))])
    got = list(torch.utils.data.DataLoader(ds, batch_size=None, shuffle=False))
    assert all(torch.equal(g, torch.from_numpy(a)) for g, a in zip(got, batches))


@pytest.mark.parametrize("depth", [1, 2, 5, 10])
def test_prefetcher_yields_every_item_in_order(dev, batches, depth):
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))])
    order = [3, 0, 6, 6, 1]
    got = list(Prefetcher(ds, depth=depth, device="cpu", indices=order))
    assert len(got) == len(order)
    assert all(torch.equal(g, torch.from_numpy(batches[i])) for g, i in zip(got, order))


def test_prefetcher_reports_a_missing_object(dev, batches):
    ds = StoreDataset(dev, ["b0", "no-such-object"])
    it = iter(Prefetcher(ds, depth=2, device="cpu"))
    assert torch.equal(next(it), torch.from_numpy(batches[0]))
    with pytest.raises(Exception, match="no-such-object"):
        next(it)


def test_prefetcher_refuses_bad_settings(dev, batches):
    ds = StoreDataset(dev, ["b0"])
    with pytest.raises(ValueError):
        Prefetcher(ds, depth=0, device="cpu")


@pytest.mark.skipif(not (gpu.available() and torch.cuda.is_available()), reason="no GPU here")
def test_prefetcher_lands_items_on_the_gpu(dev, batches):
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))])
    got = [x.clone() for x in Prefetcher(ds, depth=3, device="cuda")]  # consumed on the current stream
    assert all(g.is_cuda and torch.equal(g.cpu(), torch.from_numpy(a)) for g, a in zip(got, batches))
