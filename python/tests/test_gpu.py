# SPDX-License-Identifier: MIT
"""Landing in GPU memory: skipped without a CUDA device or without the GPU part."""
import numpy as np
import pytest

import nvme_csd
from nvme_csd import gpu

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (gpu.available() and torch.cuda.is_available()), reason="no GPU here")


def test_stored_tensor_onto_the_gpu_in_one_call(dev):
    t = np.random.default_rng(1).standard_normal((512, 1024)).astype(np.float32)
    dev.store["t"] = t
    g = dev.store.get("t", device="cuda")
    assert g.is_cuda and g.dtype == torch.float32 and tuple(g.shape) == t.shape
    assert torch.equal(g.cpu(), torch.from_numpy(t))
    assert gpu.last_report[0] == "pinned-pipeline"


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


def test_cufile_or_fallback(dev):
    t = np.arange(1 << 18, dtype=np.int64)
    dev.store["t"] = t
    g = dev.store.get("t", device="cuda", cufile=True)
    assert torch.equal(g.cpu(), torch.from_numpy(t))
    assert gpu.last_report[0] == "cufile" or gpu.last_report[0].startswith("pinned-pipeline (cuFile: ")


def test_cufile_after_registered_slm(dev):
    # regression: on the GPU machine (CUDA 13.0, no nvidia-fs) opening cuFile's driver after
    # SLM had been registered with CUDA killed the process with a segmentation fault
    a = dev.to_slm(np.arange(1 << 20, dtype=np.float32))
    gpu.slm_to_cuda(dev, a, direct=True)
    t = np.arange(1 << 18, dtype=np.int64)
    dev.store["t"] = t
    assert torch.equal(dev.store.get("t", device="cuda", cufile=True).cpu(), torch.from_numpy(t))


def test_prefetch_onto_the_gpu(dev):
    for i in range(4):
        dev.store[f"b{i}"] = np.full((64, 64), i, dtype=np.float32)
    got = [x for x in dev.store.prefetch([f"b{i}" for i in range(4)], depth=2, device="cuda")]
    assert [int(x[0, 0].item()) for x in got] == [0, 1, 2, 3] and all(x.is_cuda for x in got)
