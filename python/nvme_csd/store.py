# SPDX-License-Identifier: MIT
"""The object store as a mapping: dev.store["w"] = array; dev.store["w"] -> array."""

import errno
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Tuple, TypeVar, Union

import numpy as np

from .arrays import SlmArray, _is_torch, as_numpy, byte_view, catalog_dtype, numpy_dtype
from .errors import CsdError, InvalidArgumentType, NotFound
from .progress import ProgressArg, reporter
from .wire import CHECKSUM_ALGOS, CMP_OPS, CODECS, FIELD_TYPES, PROGRAM_MODES, REDUCE_OPS, _W

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

    # ---------------------------------------------------------------- programs over objects
    # Each runs inside the drive over an object of any size: one larger than the SLM it may use
    # (slm_budget bytes; 0: all that is free) streams through SLM in pieces, the next piece's
    # SLM Load overlapping this one's Execute, and gives exactly what one Execute over the
    # whole would (docs/store.md, "Objects larger than SLM"). progress(done, total) is called
    # after each piece (progress=True: a tqdm bar); an exception it raises (KeyboardInterrupt
    # included) stops the run: nothing is stored, SLM and reserved space are freed, and the
    # exception propagates.

    def filter(self, src: str, dst: str, *, record_size: int, field_offset: int, field_type: Any, op: str,
               lo: Union[int, float], hi: Union[int, float] = 0, indices: bool = False, slm_budget: int = 0,
               progress: ProgressArg = None) -> int:
        """filter object src into object dst inside the drive; returns the match count."""
        code = FIELD_TYPES[np.dtype(field_type)]
        with reporter(progress, f"filter {src}") as cb:
            matches, _ = self._dev.store_filter(src, dst, record_size, field_offset, code, CMP_OPS[op],
                                                float(lo), float(hi), int(lo), int(hi), indices, slm_budget, cb)
        return int(matches)

    def checksum(self, name: str, algo: str = "crc32c", *, slm_budget: int = 0, progress: ProgressArg = None) -> int:
        """The checksum of an object (crc32c or xxh64), computed in the drive. crc32c of any
        size; xxh64 only of an object that fits in SLM whole (InvalidArgument otherwise: its
        digest cannot be combined from its pieces')."""
        with reporter(progress, f"checksum {name}") as cb:
            return int(self._dev.store_checksum(name, CHECKSUM_ALGOS[algo], slm_budget, cb))

    def reduce(self, name: str, op: str, *, whole: bool = False, slm_budget: int = 0,
               progress: ProgressArg = None) -> np.ndarray:
        """One result per row of a tensor of float32/float64/int32/int64 (rows: shape[0] of a
        tensor of two or more dimensions, else one row; whole=True: one row of every element),
        computed in the drive: float64 for float inputs and means, int64 for integer
        sum/min/max, uint64 for argmin/argmax. A row wider than SLM streams too (an int64 mean
        of such a row is InvalidArgument: its exact 128-bit sum cannot come back)."""
        info = self.stat(name)
        with reporter(progress, f"reduce {name}") as cb:
            raw = self._dev.store_reduce(name, REDUCE_OPS[op], slm_budget, cb, whole)
        if op in ("argmax", "argmin"):
            kind = "<u8"
        elif op != "mean" and info["dtype"] in ("<i4", "<i8"):
            kind = "<i8"
        else:
            kind = "<f8"
        return np.frombuffer(raw, dtype=kind).copy()

    def convert(self, src: str, dst: str, op: str, *, scale: float = 1.0, zero_point: int = 0, slm_budget: int = 0,
                progress: ProgressArg = None) -> int:
        """Object dst = object src's elements converted by op (f32_f16, f32_bf16, f16_f32,
        bf16_f32, i8_f32, f32_i8, u8_f32) in the drive, same shape; returns its bytes."""
        with reporter(progress, f"convert {src}") as cb:
            return int(self._dev.store_convert(src, dict(_W["convert_ops"])[op], dst, scale, zero_point,
                                               slm_budget, cb))

    def decompress(self, src: str, dst: str, codec: str = "zstd", *, slm_budget: int = 0,
                   progress: ProgressArg = None) -> int:
        """Object dst = object src's zstd (or lz4) frames decompressed in the drive; returns
        its bytes. A piece is whole frames: a frame larger than the SLM it may use is
        InvalidArgument (a frame cannot be split)."""
        with reporter(progress, f"decompress {src}") as cb:
            return int(self._dev.store_decompress(src, CODECS[codec], dst, slm_budget, cb))

    def gemm(self, a: str, b: str, c: str, *, slm_budget: int = 0, progress: ProgressArg = None) -> None:
        """Object c = a @ b for 2-D float32 tensors, in the drive (tiled by rows of A and C,
        and by rows of depth of B where B does not fit beside them; bits equal to one Execute)."""
        with reporter(progress, f"gemm {c}") as cb:
            self._dev.store_gemm(a, b, c, slm_budget, cb)

    def run_program(self, program: Any, mode: str, src: str, dst: str = "", params: Iterable[int] = (), *,
                    slm_budget: int = 0, progress: ProgressArg = None) -> Tuple[int, int]:
        """A downloaded program (nvme_csd.Program) over the records of object src: mode
        "filter" (kept records into object dst), "map" (one uint64 per record into dst) or
        "reduce" (the wrapping u64 sum). Returns (matches, bytes) for filter, (records, bytes)
        for map, (records, sum) for reduce."""
        ps = [int(p) & (2 ** 64 - 1) for p in params]
        with reporter(progress, f"program {src}") as cb:
            a, b = self._dev.store_run_program(program.id, program.record_size, PROGRAM_MODES[mode], src, dst, ps,
                                               slm_budget, cb)
        return int(a), int(b)

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
