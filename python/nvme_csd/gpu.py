# SPDX-License-Identifier: MIT
"""Land data from the drive in GPU memory as torch CUDA tensors: SLM arrays and stored
objects go through libcsd's pinned-buffer pipeline (or registered SLM) straight into a
tensor's memory, with no extra copy, objects checked against their CRC-32C; `last_report`
says which path ran, how many bytes and how long."""

import numpy as np

from . import _core
from .arrays import numpy_dtype
from .errors import CsdError, InvalidParameters

last_report = None  # (path, bytes, seconds) of the latest transfer


def available():
    """Whether this build has the GPU part and a CUDA device is present."""
    return bool(_core.has_gpu_part) and _core.gpu_available()


def _require():
    if not _core.has_gpu_part:
        raise CsdError("this nvme_csd was built without CUDA (no /usr/local/cuda at build time)")
    if not _core.gpu_available():
        raise CsdError("no CUDA device")
    import torch
    return torch


def _torch_dtype(torch, dtype):
    if dtype.fields is not None:
        raise InvalidParameters(f"a structured dtype ({dtype}) has no torch equivalent: get it with device='cpu'")
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def configure(dev, *, chunk_mib=8, buffers=4, readers=12):
    """Sets dev's pipeline into GPU memory: bytes per step, pinned buffers in flight, and
    threads filling a buffer in parallel (the defaults shown: libcsd's, picked from the sweep in
    docs/perf.md)."""
    _require()
    _core.gpu_configure(dev._dev, int(chunk_mib) << 20, int(buffers), int(readers))


def slm_to_cuda(dev, slm_array, *, direct=True, device="cuda"):
    """An SlmArray's contents as a new torch CUDA tensor (same dtype and shape)."""
    global last_report
    torch = _require()
    out = torch.empty(slm_array.shape, dtype=_torch_dtype(torch, slm_array.dtype), device=device)
    stream = torch.cuda.current_stream(out.device).cuda_stream
    last_report = _core.gpu_slm_to_gpu(dev._dev, slm_array.offset, slm_array.nbytes, out.data_ptr(), stream, direct)
    return out


def object_to_cuda(dev, name, *, device="cuda"):
    """A stored tensor (or blob, as uint8) as a new torch CUDA tensor, checked against its
    CRC-32C (landed again if another writer replaced it meanwhile)."""
    torch = _require()
    from .store import land

    def alloc(info):
        dtype = numpy_dtype(info["dtype"], f"store[{name!r}]") if info["dtype"] else np.dtype(np.uint8)
        shape = info["shape"] if info["dtype"] else [info["bytes"]]
        return torch.empty(shape, dtype=_torch_dtype(torch, dtype), device=device)

    def into(out):
        global last_report
        stream = torch.cuda.current_stream(out.device).cuda_stream
        path, nbytes, seconds, generation = _core.gpu_object_to_gpu(dev._dev, name, out.data_ptr(),
                                                                    out.numel() * out.element_size(), stream)
        last_report = (path, nbytes, seconds)
        return generation

    return land(dev.store, name, alloc, into)[1]


def to_device(array, device):
    """A host array on a torch device (the fallback for data already in host memory)."""
    import torch
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)
