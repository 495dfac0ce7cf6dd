# SPDX-License-Identifier: MIT
"""nvme_csd.data: the store as a torch data source (StoreDataset, Prefetcher)."""
import os

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


def test_dataset_pickles_without_an_open_device(dev, batches):
    import pickle
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))])
    assert ds.dev is dev                       # the Device given, in the process that made it
    copy = pickle.loads(pickle.dumps(ds))      # as a spawned worker receives it
    assert copy._dev is None and copy.open_options["front_end"] == dev.front_end
    assert torch.equal(copy[2], torch.from_numpy(batches[2]))   # opened its own on first use
    assert copy.dev is not dev and copy.dev.path == dev.path
    copy.close()
    assert not dev.closed


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_dataloader_workers_open_their_own_device(dev, batches, start):
    """num_workers=2, forked or spawned: every item right, read in the workers (each with its
    own Device), and CUDA never initialised there even for a dataset asking for 'cuda'."""
    from loader_helpers import collate_reports, worker_report
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))], device="cuda", transform=worker_report)
    dl = torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2, collate_fn=collate_reports,
                                     multiprocessing_context=start)
    got, pids, cuda = [], set(), False
    for x, p, c in dl:
        got += list(x)
        pids |= p
        cuda |= c
    assert len(got) == len(batches) and all(torch.equal(g, torch.from_numpy(a)) for g, a in zip(got, batches))
    assert len(pids) == 2 and os.getpid() not in pids
    assert not cuda and all(not g.is_cuda for g in got)
    assert not dev.closed and np.array_equal(dev.store["b0"], batches[0])  # the parent's Device untouched


def test_prefetcher_batches_collates_and_samples(dev, batches):
    ds = StoreDataset(dev, [f"b{i}" for i in range(len(batches))])
    pf = Prefetcher(ds, depth=2, device="cpu", batch_size=3)
    got = list(pf)
    assert len(pf) == len(got) == 3 and [g.shape[0] for g in got] == [3, 3, 1]
    assert torch.equal(got[1], torch.stack([torch.from_numpy(batches[i]) for i in (3, 4, 5)]))
    assert len(Prefetcher(ds, device="cpu", batch_size=3, drop_last=True)) == 2
    assert [g.shape[0] for g in Prefetcher(ds, device="cpu", batch_size=3, drop_last=True)] == [3, 3]

    sampler = torch.utils.data.DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=5)
    sampler.set_epoch(3)
    want = list(sampler)
    pf = Prefetcher(ds, device="cpu", sampler=sampler, batch_size=2, collate_fn=torch.cat)
    got = list(pf)
    assert len(pf) == len(got) == 2
    assert torch.equal(torch.cat(got), torch.cat([torch.from_numpy(batches[i]) for i in want]))
    with pytest.raises(ValueError):
        Prefetcher(ds, device="cpu", batch_size=0)
    with pytest.raises(ValueError):
        Prefetcher(ds, device="cpu", sampler=sampler, indices=[0])


def test_ddp_example_trains_two_ranks_each_on_its_own_drive(tmp_path):
    """examples/python/ddp_train.py: two gloo ranks, each reading its shard (the blocks of
    striped tensors) from its own in-process drive of a DriveSet; the loss falls and DDP
    keeps the ranks' parameters equal."""
    import re
    import subprocess
    import sys
    from pathlib import Path
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("in-process drives of its own")
    torch_dist = pytest.importorskip("torch.distributed")
    if not torch_dist.is_available() or not torch_dist.is_gloo_available():
        pytest.skip("torch without gloo")
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "ddp_train.py"
    drives = [f"emu:{tmp_path}/d{i}.img?size=32M&slm=8M" for i in range(2)]
    r = subprocess.run([sys.executable, str(example), "--drives", *drives, "--epochs", "3"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    losses = {int(rk): [] for rk in "01"}
    for rk, loss in re.findall(r"rank (\d) epoch \d+: loss ([0-9.]+)", out):
        losses[int(rk)].append(float(loss))
    assert all(len(v) == 3 and v[-1] < v[0] / 5 for v in losses.values()), out
    for rk in (0, 1):
        m = re.search(rf"rank {rk}: read (\d+) bytes in \d+ commands from its drive (\S+)", out)
        assert m and int(m.group(1)) > 0 and m.group(2) == drives[rk], out
    assert "parameters equal on every rank" in out, out
