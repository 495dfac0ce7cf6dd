# SPDX-License-Identifier: MIT
"""The object store as a mapping: dev.store["w"] = array; dev.store["w"] -> array."""

import errno
import mmap
import os
import tempfile
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union, cast

import numpy as np

from . import _core
from .arrays import SlmArray, _is_torch, as_numpy, byte_view, catalog_dtype, code_of, field_type_code, numpy_dtype
from .errors import CsdError, InvalidArgument, InvalidArgumentType, NotFound
from .progress import ProgressArg, reporter
from .wire import CHECKSUM_ALGOS, CMP_OPS, CODECS, PROGRAM_MODES, REDUCE_OPS, _W

if TYPE_CHECKING:
    from .device import Device

T = TypeVar("T")
PathArg = Union[str, "os.PathLike[str]"]
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


def _take(view: memoryview, at: List[int], n: int) -> bytes:
    """n bytes of view from at[0] (fewer at its end), moving at[0] past them."""
    out = bytes(view[at[0]:at[0] + n])
    at[0] += len(out)
    return out


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes:
    """n bytes through read (fewer only at the end)."""
    out = b""
    while len(out) < n:
        more = read(n - len(out))
        if not more:
            break
        out += more
    return out


def _npy_header(read: Callable[[int], bytes], label: Any) -> Dict[str, Any]:
    """Reads a .npy header through read(n) (nothing past it), parsed as the store reads
    one: dtype, shape, data_bytes, size. CsdError (EINVAL) naming label if it is none."""
    try:
        head = _read_exactly(read, 10)
        if len(head) == 10 and head[6] != 1:
            head += _read_exactly(read, 2)
        size = _core.npy_header_size(head)
        head += _read_exactly(read, size - len(head))
        return cast(Dict[str, Any], _core.npy_parse_header(head))
    except CsdError as e:
        raise InvalidArgument(f"{label}: {e}", errno=errno.EINVAL) from None


def _seekable_fd(f: Any) -> Optional[int]:
    """f's file descriptor where it has one and can seek, else None."""
    try:
        fd = f.fileno()
        if not f.seekable():
            return None
        os.lseek(fd, 0, os.SEEK_CUR)
        return int(fd)
    except (AttributeError, OSError, ValueError):
        return None


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

    def put_file(self, name: str, src: Any, *, npy: Optional[bool] = None, progress: ProgressArg = None) -> None:
        """Streams src into object `name` a few MiB at a time, host memory bounded whatever
        its size, its CRC-32C computed as it goes: src is a path, a binary file object (read
        from its position to its end; a pipe's length need not be known) or a memory map
        (mmap.mmap, numpy.memmap), whose pages are handed back to the kernel as they are
        read. A .npy file (by its name, or npy=True) or a numpy.memmap becomes a tensor with
        its dtype and shape, anything else a blob. Progress and cancellation as put()."""
        with reporter(progress, f"put {name}") as cb:
            if isinstance(src, np.memmap):
                a = np.ascontiguousarray(src) if not src.flags.c_contiguous else src
                dtype = catalog_dtype(a.dtype, f"store[{name!r}]")
                self._dev.store_put_mapped(name, byte_view(a), dtype, list(a.shape), cb)
            elif isinstance(src, mmap.mmap):
                view = memoryview(src)
                dtype, shape, skip = "", [], 0
                if npy:
                    at = [0]

                    def read(n: int) -> bytes:
                        return _take(view, at, n)
                    head = _npy_header(read, repr(src))
                    dtype, shape, skip = head["dtype"], head["shape"], head["size"]
                    if len(view) - skip != head["data_bytes"]:
                        raise InvalidArgument(f"memory map: .npy data is {len(view) - skip} bytes; its header's dtype and "
                                       f"shape describe {head['data_bytes']}", errno=errno.EINVAL)
                self._dev.store_put_mapped(name, view[skip:], dtype, shape, cb)
            elif isinstance(src, (str, os.PathLike)):
                path = os.fspath(src)
                with open(path, "rb", buffering=0) as f:
                    self._put_fileobj(name, f, path, path.endswith(".npy") if npy is None else npy, cb)
            elif hasattr(src, "read"):
                self._put_fileobj(name, src, getattr(src, "name", repr(src)), bool(npy), cb)
            else:
                raise InvalidArgumentType(f"put_file({name!r}): a path, a binary file object or a memory map, "
                                          f"not {type(src).__name__}")

    def _put_fileobj(self, name: str, f: Any, label: Any, npy: bool, cb: Any) -> None:
        """put_file from a binary file object: its descriptor where it has one it can seek
        (positioned after what was read through f), else f.read in chunks."""
        dtype, shape, size = "", [], -1
        if npy:
            head = _npy_header(f.read, label)
            dtype, shape, size = head["dtype"], head["shape"], head["data_bytes"]
        fd = _seekable_fd(f)
        if fd is None:
            self._dev.store_put_reader(name, f.read, size, dtype, shape, cb)
            return
        os.lseek(fd, f.tell(), os.SEEK_SET)
        try:
            self._dev.store_put_fd(name, fd, size, dtype, shape, cb)
        finally:
            f.seek(os.lseek(fd, 0, os.SEEK_CUR))

    def get_file(self, name: str, dst: Any, *, npy: Optional[bool] = None,
                 progress: ProgressArg = None) -> Dict[str, Any]:
        """Streams object `name` into dst a few MiB at a time, host memory bounded whatever
        its size, checked against its CRC-32C at the end: dst is a path (written beside it
        and renamed over it once checked, so a failed get leaves an existing file as it
        was) or a binary file object (written from its position; one that cannot seek
        gets the bytes before the check, and an error after them if they fail it). A .npy
        destination (by its name, or npy=True) gets the tensor's .npy header first. Returns
        the catalog entry of the version written."""
        with reporter(progress, f"get {name}") as cb:
            if isinstance(dst, (str, os.PathLike)):
                path = os.fspath(dst)
                want_npy = path.endswith(".npy") if npy is None else npy
                if os.path.exists(path) and not os.path.isfile(path):  # a FIFO, /dev/null: as it is
                    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
                    try:
                        return self._get_fd(name, fd, want_npy, cb)
                    finally:
                        os.close(fd)
                real = os.path.realpath(path)   # beside a symbolic link's target
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=os.path.basename(real) + ".nvme_csd-")
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, os.stat(real).st_mode & 0o7777 if os.path.exists(real) else 0o666 & ~umask)
                try:
                    info = self._get_fd(name, fd, want_npy, cb)
                    os.close(fd)
                    fd = -1
                    os.replace(tmp, real)
                    return info
                finally:
                    if fd >= 0:
                        os.close(fd)
                    if os.path.exists(tmp):
                        os.unlink(tmp)
            if not hasattr(dst, "write"):
                raise InvalidArgumentType(f"get_file({name!r}): a path or a binary file object, "
                                          f"not {type(dst).__name__}")
            out_fd = _seekable_fd(dst)
            if out_fd is not None:
                dst.flush()
                os.lseek(out_fd, dst.tell(), os.SEEK_SET)
                try:
                    return self._get_fd(name, out_fd, bool(npy), cb)
                finally:
                    dst.seek(os.lseek(out_fd, 0, os.SEEK_CUR))
            return self._get_writer(name, dst, bool(npy), cb)

    def _get_fd(self, name: str, fd: int, npy: bool, cb: Any) -> Dict[str, Any]:
        """get_file into a descriptor (a .npy header first with npy)."""
        if npy and not self.stat(name)["dtype"]:
            raise InvalidArgumentType(f"object {name!r} is a blob, not a tensor: write it to a raw file")
        return cast(Dict[str, Any], self._dev.store_get_fd(name, fd, npy, cb))

    def _get_writer(self, name: str, f: Any, npy: bool, cb: Any) -> Dict[str, Any]:
        """get_file into a file object that cannot seek: through f.write, once."""
        info = self.stat(name)
        if npy:
            if not info["dtype"]:
                raise InvalidArgumentType(f"object {name!r} is a blob, not a tensor: write it to a raw file")
            f.write(_core.npy_header_bytes(info["dtype"], info["shape"]))
        written = [0]

        def write(pos: int, data: memoryview) -> None:
            if pos != written[0]:
                raise CsdError(f"object {name!r} was replaced by another writer while it was written to {f!r}, "
                               "which cannot be rewritten: what was written is not one version of it; get it again",
                               errno=errno.EAGAIN)
            f.write(data)
            written[0] += len(data)

        landed = cast(Dict[str, Any], self._dev.store_get_writer(name, write, cb))
        if npy and (landed["dtype"], landed["shape"]) != (info["dtype"], info["shape"]):
            raise CsdError(f"object {name!r} was replaced by one of another dtype or shape while it was written",
                           errno=errno.EAGAIN)
        return landed

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
        code = field_type_code(field_type, "store.filter")
        cmp = code_of(CMP_OPS, op, "store.filter")
        with reporter(progress, f"filter {src}") as cb:
            matches, _ = self._dev.store_filter(src, dst, record_size, field_offset, code, cmp,
                                                float(lo), float(hi), int(lo), int(hi), indices, slm_budget, cb)
        return int(matches)

    def checksum(self, name: str, algo: str = "crc32c", *, slm_budget: int = 0, progress: ProgressArg = None) -> int:
        """The checksum of an object (crc32c or xxh64), computed in the drive. crc32c of any
        size; xxh64 only of an object that fits in SLM whole (InvalidArgument otherwise: its
        digest cannot be combined from its pieces')."""
        code = code_of(CHECKSUM_ALGOS, algo, "store.checksum", "algo")
        with reporter(progress, f"checksum {name}") as cb:
            return int(self._dev.store_checksum(name, code, slm_budget, cb))

    def reduce(self, name: str, op: str, *, whole: bool = False, slm_budget: int = 0,
               progress: ProgressArg = None) -> np.ndarray:
        """One result per row of a tensor of float32/float64/int32/int64 (rows: shape[0] of a
        tensor of two or more dimensions, else one row; whole=True: one row of every element),
        computed in the drive: float64 for float inputs and means, int64 for integer
        sum/min/max, uint64 for argmin/argmax. A row wider than SLM streams too (an int64 mean
        of such a row is InvalidArgument: its exact 128-bit sum cannot come back)."""
        code = code_of(REDUCE_OPS, op, "store.reduce")
        info = self.stat(name)
        with reporter(progress, f"reduce {name}") as cb:
            raw = self._dev.store_reduce(name, code, slm_budget, cb, whole)
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
        code = code_of(dict(_W["convert_ops"]), op, "store.convert")
        with reporter(progress, f"convert {src}") as cb:
            return int(self._dev.store_convert(src, code, dst, scale, zero_point, slm_budget, cb))

    def decompress(self, src: str, dst: str, codec: str = "zstd", *, slm_budget: int = 0,
                   progress: ProgressArg = None) -> int:
        """Object dst = object src's zstd (or lz4) frames decompressed in the drive; returns
        its bytes. A piece is whole frames: a frame larger than the SLM it may use is
        InvalidArgument (a frame cannot be split)."""
        code = code_of(CODECS, codec, "store.decompress", "codec")
        with reporter(progress, f"decompress {src}") as cb:
            return int(self._dev.store_decompress(src, code, dst, slm_budget, cb))

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
        code = code_of({k: v for k, v in PROGRAM_MODES.items() if k != "chase"}, mode, "store.run_program", "mode")
        ps = [int(p) & (2 ** 64 - 1) for p in params]
        with reporter(progress, f"program {src}") as cb:
            a, b = self._dev.store_run_program(program.id, program.record_size, code, src, dst, ps,
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
