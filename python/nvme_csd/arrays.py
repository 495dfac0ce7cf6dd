# SPDX-License-Identifier: MIT
"""Arrays in and out: numpy views of what users pass (numpy, torch CPU tensors, DLPack,
buffers) and SlmArray, an array that lives in SLM."""

import ast
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Tuple, cast

import numpy as np

from . import _core
from .errors import CsdError, InvalidArgument, InvalidArgumentType
from .wire import FIELD_TYPES, _NP

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from .device import Device


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def as_numpy(x: Any, dtype: Any = None, name: str = "argument") -> np.ndarray:
    """A C-contiguous numpy view of x (numpy, torch CPU tensor, DLPack or buffer), no copy
    when the memory allows; raises InvalidArgument (a ValueError) with the reason otherwise,
    InvalidArgumentType (a TypeError) for what is no array at all."""
    if isinstance(x, np.ndarray):
        a = x
    elif _is_torch(x):
        if x.device.type != "cpu":
            raise InvalidArgument(f"{name}: a {x.device.type} tensor; pass a CPU tensor")
        a = x.detach().numpy()
    elif hasattr(x, "__dlpack__"):
        a = np.from_dlpack(x)
    else:
        try:
            a = np.frombuffer(memoryview(x), dtype=np.uint8)
        except TypeError:
            raise InvalidArgumentType(f"{name}: expected an array, tensor or buffer, got {type(x).__name__}") from None
    if dtype is not None and a.dtype != np.dtype(dtype):
        raise InvalidArgument(f"{name}: dtype {a.dtype}, expected {np.dtype(dtype)}")
    if not a.flags.c_contiguous:
        raise InvalidArgument(f"{name}: not C-contiguous (use numpy.ascontiguousarray or .contiguous())")
    return a


def code_of(table: Dict[str, int], name: Any, what: str, kind: str = "op") -> int:
    """The command set's code for a name (an op, algo, codec or mode: kind) from one of
    nvme_csd.wire's tables; InvalidArgument naming the known ones for any other."""
    try:
        return table[name]
    except (KeyError, TypeError):
        raise InvalidArgument(f"{what}: unknown {kind} {name!r}; known: {sorted(table)}") from None


def field_type_code(field_type: Any, what: str) -> int:
    """The filter's field type code for a numpy dtype (np.float32, "<f4") or the command
    set's name of it ("f32", as csdctl's --type); InvalidArgument for any other."""
    try:
        dt = np.dtype(_NP.get(field_type, field_type) if isinstance(field_type, str) else field_type)
    except TypeError:
        dt = None
    if dt not in FIELD_TYPES:
        raise InvalidArgument(f"{what}: field type {field_type!r} is not one of {sorted(_NP)} "
                              "(or their numpy dtypes)")
    return FIELD_TYPES[dt]


def catalog_dtype(dtype: Any, what: str) -> str:
    """A dtype as the object store records it: libcsd's text (csd/npy.hpp) of the
    description numpy writes into a .npy header, so a structured dtype keeps every field,
    offset, title and byte order; InvalidArgument for one that cannot be described
    (object dtypes, overlapping or out-of-order fields)."""
    try:
        descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
    except ValueError as e:
        raise InvalidArgument(f"{what}: dtype {dtype} has no .npy description ({e})") from None
    return _canonical(descr if isinstance(descr, str) else repr(descr), what)


def numpy_dtype(text: str, what: str) -> np.dtype:
    """The numpy dtype of an object's recorded dtype text (as catalog_dtype gives it)."""
    text = _canonical(text, what)
    descr: Any = ast.literal_eval(text) if text.startswith("[") else text
    return np.lib.format.descr_to_dtype(descr)


def _canonical(text: str, what: str) -> str:
    try:
        return _core.canonical_dtype(text)
    except CsdError as e:
        raise InvalidArgument(f"{what}: {e}") from None


def byte_view(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes as a flat uint8 array, no copy: what crosses into libcsd
    for any dtype (the buffer protocol refuses some, such as datetime64)."""
    return a.reshape(-1).view(np.uint8) if a.nbytes else np.empty(0, dtype=np.uint8)


def as_buffer(a: np.ndarray) -> "Buffer":
    """The array as what the bindings take (numpy's type stubs give ndarray the buffer
    protocol only from Python 3.12 on); no conversion."""
    return cast("Buffer", a)


class SlmArray:
    """An array that lives in SLM: a device allocation with a dtype and shape. Programs
    take it without moving data; .numpy() brings it to the host (a view, no copy, on the
    in-process device). A context manager (leaving the block frees it); len() is its first
    dimension; DLPack consumers (numpy.from_dlpack, torch.from_dlpack) take it as a host
    array: a view of SLM where SLM is host memory (the in-process device), else a copy."""

    def __init__(self, dev: "Device", buf: Any, dtype: Any, shape: Sequence[int]) -> None:
        self.device, self.buffer = dev, buf
        self.dtype: np.dtype = np.dtype(dtype)
        self.shape: Tuple[int, ...] = tuple(int(d) for d in shape)

    @property
    def nbytes(self) -> int:
        """Size of the array's elements in bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def offset(self) -> int:
        """Byte offset of the array in SLM."""
        return int(self.buffer.offset)

    @property
    def freed(self) -> bool:
        """Whether the allocation was freed."""
        return bool(self.buffer.freed)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d SlmArray")
        return self.shape[0]

    def range(self, nbytes: Optional[int] = None) -> Tuple[int, int]:
        """(offset, bytes) of the array in SLM, as programs take their ranges."""
        return (self.offset, self.nbytes if nbytes is None else nbytes)

    def __enter__(self) -> "SlmArray":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.freed:
            self.free()

    def _host(self) -> np.ndarray:
        """A view of SLM where it is host memory, else a copy of the contents."""
        try:
            return self.numpy(copy=False)
        except CsdError:
            return self.numpy()

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack capsule of the contents on the CPU (see the class)."""
        return self._host().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """(kDLCPU, 0): DLPack consumers receive host memory."""
        return (1, 0)

    def numpy(self, copy: bool = True) -> np.ndarray:
        """The contents as a numpy array (copy=False: a view of SLM, in-process device only)."""
        if not copy:
            view = self.device._dev.slm_host_view(self.offset, self.nbytes)
            if view is None:
                raise CsdError("SLM is not host memory on this transport: use numpy(copy=True)")
            return np.frombuffer(view, dtype=self.dtype).reshape(self.shape)
        out = np.empty(self.shape, dtype=self.dtype)
        if self.nbytes:
            self.device._dev.slm_read_into(self.offset, as_buffer(byte_view(out)))
        return out

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def free(self) -> None:
        """Frees the allocation (once; later uses of the array are errors)."""
        self.buffer.free()

    def __repr__(self) -> str:
        return f"SlmArray(offset={self.offset}, dtype={self.dtype}, shape={self.shape})"
