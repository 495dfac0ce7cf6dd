# SPDX-License-Identifier: MIT
"""Landing in GPU memory: skipped without a CUDA device or without the GPU part."""
import errno
import os

import numpy as np
import pytest

import nvme_csd
from nvme_csd import gpu

from test_device import flip_bit_in_file

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (gpu.available() and torch.cuda.is_available()), reason="no GPU here")


def test_stored_tensor_onto_the_gpu_in_one_call(dev):
    t = np.random.default_rng(1).standard_normal((512, 1024)).astype(np.float32)
    dev.store["t"] = t
    g = dev.store.get("t", device="cuda")
    assert g.is_cuda and g.dtype == torch.float32 and tuple(g.shape) == t.shape
    assert torch.equal(g.cpu(), torch.from_numpy(t))
    # the in-process device is a simulated peer-to-peer drive: one DMA from its registered namespace
    want = "pinned-pipeline" if os.environ.get("CSD_TEST_DEVICE") else "ns-registered (simulated peer-to-peer drive)"
    assert gpu.last_report[0] == want


def test_filtered_result_onto_the_gpu_in_one_call(dev):
    rec = np.zeros(100000, dtype=[("id", "<u4"), ("v", "<f4")])
    rec["id"] = np.arange(100000)
    rec["v"] = np.random.default_rng(2).random(100000, dtype=np.float32)
    g = dev.filter(rec, "v", ">", 0.9, indices=True, device="cuda")
    assert g.is_cuda
    assert np.array_equal(g.cpu().numpy(), np.nonzero(rec["v"].astype(np.float64) > 0.9)[0])


def test_slm_array_onto_the_gpu(dev):
    a = dev.to_slm(np.arange(1 << 20, dtype=np.float32))
    for direct in (False, True):
        g = gpu.slm_to_cuda(dev, a, direct=direct)
        assert torch.equal(g.cpu(), torch.arange(1 << 20, dtype=torch.float32))
    assert torch.equal(dev.read(a, device="cuda").cpu(), torch.arange(1 << 20, dtype=torch.float32))


def test_damaged_object_fails_the_landing_as_get_does(dev, tmp_path):
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("changes the in-process device's file")
    t = np.random.default_rng(3).integers(0, 1 << 62, 1 << 18, dtype=np.int64)
    dev.store["t"] = t
    flip_bit_in_file(tmp_path / "ns.img", t.tobytes()[1 << 20:(1 << 20) + 64])
    with pytest.raises(nvme_csd.CsdError, match="does not match its CRC-32C") as cpu:
        dev.store.get("t")
    with pytest.raises(nvme_csd.CsdError) as cuda:
        dev.store.get("t", device="cuda")
    assert str(cuda.value) == str(cpu.value) and cuda.value.errno == errno.EIO


def test_landing_again_when_replaced_after_its_stat(dev, monkeypatch):
    dev.store["t"] = np.arange(1000, dtype=np.float32)
    new = np.arange(5000, dtype=np.int64).reshape(50, 100)
    real = type(dev.store).stat
    seen = []

    def stat(self, name):  # replaced by a larger object between the stat and the landing
        info = real(self, name)
        if not seen:
            dev.store["t"] = new
        seen.append(info)
        return info

    monkeypatch.setattr(type(dev.store), "stat", stat)
    g = dev.store.get("t", device="cuda")
    assert len(seen) == 2 and g.dtype == torch.int64 and torch.equal(g.cpu(), torch.from_numpy(new))


def test_prefetch_onto_the_gpu(dev):
    for i in range(4):
        dev.store[f"b{i}"] = np.full((64, 64), i, dtype=np.float32)
    got = [x for x in dev.store.prefetch([f"b{i}" for i in range(4)], depth=2, device="cuda")]
    assert [int(x[0, 0].item()) for x in got] == [0, 1, 2, 3] and all(x.is_cuda for x in got)
