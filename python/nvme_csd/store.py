# SPDX-License-Identifier: MIT
"""The object store as a mapping: dev.store["w"] = array; dev.store["w"] -> array."""

import errno
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Tuple, TypeVar, Union

import numpy as np

from .arrays import SlmArray, _is_torch, as_numpy, byte_view, catalog_dtype, numpy_dtype
from .errors import CsdError, InvalidArgumentType, NotFound
from .progress import ProgressArg, reporter
from .wire import CMP_OPS, FIELD_TYPES

if TYPE_CHECKING:
    from .device import Device

T = TypeVar("T")
Value = Union[np.ndarray, bytes]  # what the store gives back: an array for tensors, bytes for blobs
_MISSING: Any = object()


def land(store: "Store", name: str, alloc: Callable[[Dict[str, Any]], T], into: Callable[[T], int],
         attempts: int = 4) -> Tuple[Dict[str, Any], T]:
    """Lands object `name` into a buffer that alloc(entry) makes for its catalog entry (dtype,
    shape, bytes); into(buffer) runs the store's checked read into it and returns the
    generation of the version that landed. Another writer may replace the object between
    the stat and the read: then the buffer was made for another version, and both are done
    again. Returns (entry, buffer)."""
    for _ in range(attempts):
        info = store.stat(name)
        out = alloc(info)
        if not info["bytes"] or not getattr(out, "nbytes", 0):
            return info, out
        try:
            landed = into(out)
        except CsdError as e:
            if e.errno != errno.ENOSPC:  # ENOSPC: replaced by a larger version since the stat
                raise
            continue
        if landed == info["generation"]:
            return info, out
    raise CsdError(f"object {name!r} was replaced by another writer during each of {attempts} reads; try again",
                   errno=errno.EAGAIN)


class Store(MutableMapping[str, Any]):
    """Named objects kept on the drive's namespace, as a MutableMapping of names to values
    (keys/values/items views, get, pop, update, setdefault, `in`, len). Tensors keep dtype
    (structured ones included) and shape; bytes-like values are stored as blobs and come
    back as bytes. Every assignment and deletion is durable when it returns. Two stores
    are equal only when they are the same object (comparing would read every object)."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, device: "Device") -> None:
        self._device = device

    @property
    def _dev(self) -> Any:
        return self._device._dev

    def format(self, *, force: bool = False) -> None:
        """Creates an empty store over the whole namespace (existing objects are lost).
        Raises FormatRefused, writing nothing, where the namespace holds a partition table,
        a filesystem or volume signature or a store (the message names it), unless force."""
        self._dev.store_format(force)

    def __setitem__(self, name: str, value: Any) -> None:
        self.put(name, value)

    def put(self, name: str, value: Any, *, progress: ProgressArg = None) -> None:
        """store[name] = value, with progress(done, total) reports as its bytes are
        written (progress=True: a tqdm bar where tqdm is installed; see nvme_csd.progress).
        An exception raised by progress (KeyboardInterrupt included) cancels the put: nothing
        is stored (an older version stays), its reserved space is released, and the
        exception propagates."""
        data: Any
        if isinstance(value, (bytes, bytearray, memoryview)):
            data, dtype, shape = value, "", []
        elif isinstance(value, np.ndarray) or _is_torch(value) or hasattr(value, "__dlpack__"):
            a = as_numpy(value, name=f"store[{name!r}]")
            dtype = catalog_dtype(a.dtype, f"store[{name!r}]")  # first: it refuses object arrays
            data, shape = byte_view(a), list(a.shape)
        else:
            raise InvalidArgumentType(f"store[{name!r}]: store arrays, tensors or bytes, not {type(value).__name__}")
        with reporter(progress, f"put {name}") as cb:
            self._dev.store_put(name, data, dtype, shape, cb)

    def __getitem__(self, name: str) -> Value:
        return self.read_object(name)

    def get(self, name: str, default: Any = None, *, device: str = "cpu", progress: ProgressArg = None) -> Any:
        """The object, or default when there is none (as a mapping's get): see read_object."""
        try:
            return self.read_object(name, device=device, progress=progress)
        except NotFound:
            return default

    def read_object(self, name: str, *, device: str = "cpu", progress: ProgressArg = None) -> Any:
        """The object (NotFound, a KeyError, when there is none): a numpy array for tensors,
        bytes for blobs, checked against its CRC-32C (read again if another writer replaced
        it meanwhile), with progress(done, total) reports as its bytes land (progress=True:
        a tqdm bar where tqdm is installed); device='cuda' gives a torch CUDA tensor landed
        by the GPU pipeline, checked the same way (no host copy in Python)."""
        if device != "cpu":
            from . import gpu
            return gpu.object_to_cuda(self._device, name, device=device)

        def alloc(info: Dict[str, Any]) -> np.ndarray:
            if info["dtype"]:
                return np.empty(info["shape"], dtype=numpy_dtype(info["dtype"], f"store[{name!r}]"))
            return np.empty(info["bytes"], dtype=np.uint8)

        with reporter(progress, f"get {name}") as cb:
            info, out = land(self, name, alloc, lambda out: self._dev.store_get_into(name, byte_view(out), cb))
        return out if info["dtype"] else out.tobytes()

    def read(self, name: str, offset: int, length: int) -> bytes:
        """length bytes of an object from offset (a ranged read), as bytes."""
        out = np.empty(length, dtype=np.uint8)
        if length:
            self._dev.store_read_into(name, offset, out)
        return out.tobytes()

    def stat(self, name: str) -> Dict[str, Any]:
        """The catalog entry: name, dtype, shape, bytes, crc32c, generation."""
        try:
            return self._dev.store_stat(name)
        except NotFound:
            raise NotFound(f"no object {name!r} in the store") from None

    def load(self, name: str) -> SlmArray:
        """Loads an object into SLM (SLM Load, nothing crosses the bus): an SlmArray."""
        info = self.stat(name)
        buf = self._dev.store_load(name)
        if info["dtype"]:
            return SlmArray(self._device, buf, numpy_dtype(info["dtype"], f"store.load({name!r})"), info["shape"])
        return SlmArray(self._device, buf, np.uint8, (info["bytes"],))

    def filter(self, src: str, dst: str, *, record_size: int, field_offset: int, field_type: Any, op: str,
               lo: Union[int, float], hi: Union[int, float] = 0, indices: bool = False) -> int:
        """filter object src into object dst inside the drive; returns the match count."""
        code = FIELD_TYPES[np.dtype(field_type)]
        matches, _ = self._dev.store_filter(src, dst, record_size, field_offset, code, CMP_OPS[op],
                                            float(lo), float(hi), int(lo), int(hi), indices)
        return int(matches)

    def __delitem__(self, name: str) -> None:
        if not self._dev.store_exists(name):
            raise NotFound(f"no object {name!r} in the store")
        self._dev.store_remove(name)

    @property
    def generation(self) -> int:
        """The store's generation: it grows by one with every committed change."""
        return self._dev.store_generation()

    def reservations(self) -> List[Dict[str, Any]]:
        """Space reserved by puts in progress, or left by writers that died mid-put."""
        return self._dev.store_reservations()

    def reclaim(self, older_than: float = 3600) -> int:
        """Frees reservations at least older_than seconds old; returns how many."""
        return self._dev.store_reclaim(int(older_than))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(self._dev.store_exists(name))

    def __iter__(self) -> Iterator[str]:
        return iter([o["name"] for o in self._dev.store_list()])

    def __len__(self) -> int:
        return len(self._dev.store_list())

    def clear(self) -> None:
        """Removes every object (one by one, each durable; format() is faster)."""
        for name in list(self):
            del self[name]

    def __repr__(self) -> str:
        return f"<nvme_csd.Store of {self._device.path!r}>"

    def prefetch(self, names: Iterable[str], *, depth: int = 2, device: str = "cpu") -> Iterator[Any]:
        """Iterates over objects, reading up to `depth` ahead on worker threads (double
        buffering by default): usable as a PyTorch data source."""
        names = list(names)
        pending = [self._device.submit(self.read_object, n, device=device) for n in names[:depth]]
        for i, _ in enumerate(names):
            item = pending.pop(0).result()
            if i + depth < len(names):
                pending.append(self._device.submit(self.read_object, names[i + depth], device=device))
            yield item
