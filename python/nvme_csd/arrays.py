# SPDX-License-Identifier: MIT
"""Arrays in and out: numpy views of what users pass (numpy, torch CPU tensors, DLPack,
buffers) and SlmArray, an array that lives in SLM."""

import ast

import numpy as np

from . import _core
from .errors import CsdError, InvalidParameters


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def as_numpy(x, dtype=None, name="argument"):
    """A C-contiguous numpy view of x (numpy, torch CPU tensor, DLPack or buffer), no copy
    when the memory allows; raises InvalidParameters with the reason otherwise."""
    if isinstance(x, np.ndarray):
        a = x
    elif _is_torch(x):
        if x.device.type != "cpu":
            raise InvalidParameters(f"{name}: a {x.device.type} tensor; pass a CPU tensor")
        a = x.detach().numpy()
    elif hasattr(x, "__dlpack__"):
        a = np.from_dlpack(x)
    else:
        try:
            a = np.frombuffer(memoryview(x), dtype=np.uint8)
        except TypeError:
            raise InvalidParameters(f"{name}: expected an array, tensor or buffer, got {type(x).__name__}") from None
    if dtype is not None and a.dtype != np.dtype(dtype):
        raise InvalidParameters(f"{name}: dtype {a.dtype}, expected {np.dtype(dtype)}")
    if not a.flags.c_contiguous:
        raise InvalidParameters(f"{name}: not C-contiguous (use numpy.ascontiguousarray or .contiguous())")
    return a


def catalog_dtype(dtype, what):
    """A dtype as the object store records it: libcsd's text (csd/npy.hpp) of the
    description numpy writes into a .npy header, so a structured dtype keeps every field,
    offset, title and byte order; InvalidParameters for one that cannot be described
    (object dtypes, overlapping or out-of-order fields)."""
    try:
        descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
    except ValueError as e:
        raise InvalidParameters(f"{what}: dtype {dtype} has no .npy description ({e})") from None
    return _canonical(descr if isinstance(descr, str) else repr(descr), what)


def numpy_dtype(text, what):
    """The numpy dtype of an object's recorded dtype text (as catalog_dtype gives it)."""
    text = _canonical(text, what)
    return np.lib.format.descr_to_dtype(ast.literal_eval(text) if text.startswith("[") else text)


def _canonical(text, what):
    try:
        return _core.canonical_dtype(text)
    except CsdError as e:
        raise InvalidParameters(f"{what}: {e}") from None


def byte_view(a):
    """A C-contiguous array's bytes as a flat uint8 array, no copy: what crosses into libcsd
    for any dtype (the buffer protocol refuses some, such as datetime64)."""
    return a.reshape(-1).view(np.uint8) if a.nbytes else np.empty(0, dtype=np.uint8)


class SlmArray:
    """An array that lives in SLM: a device allocation with a dtype and shape. Programs
    take it without moving data; .numpy() brings it to the host (a view, no copy, on the
    in-process device)."""

    def __init__(self, dev, buf, dtype, shape):
        self.device, self.buffer = dev, buf
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def offset(self):
        return self.buffer.offset

    def range(self, nbytes=None):
        return (self.buffer.offset, self.nbytes if nbytes is None else nbytes)

    def numpy(self, copy=True):
        """The contents as a numpy array (copy=False: a view of SLM, in-process device only)."""
        if not copy:
            view = self.device._dev.slm_host_view(self.offset, self.nbytes)
            if view is None:
                raise CsdError("SLM is not host memory on this transport: use numpy(copy=True)")
            return np.frombuffer(view, dtype=self.dtype).reshape(self.shape)
        out = np.empty(self.shape, dtype=self.dtype)
        if self.nbytes:
            self.device._dev.slm_read_into(self.offset, byte_view(out))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def free(self):
        self.buffer.free()

    def __repr__(self):
        return f"SlmArray(offset={self.offset}, dtype={self.dtype}, shape={self.shape})"
