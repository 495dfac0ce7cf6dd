# SPDX-License-Identifier: MIT
"""The Device: capabilities, statistics, SLM buffers and the ten programs, callable with
numpy arrays, torch CPU tensors, anything with __dlpack__ or the buffer protocol, or SLM
buffers (which stay in the drive)."""

import concurrent.futures
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .arrays import SlmArray, _is_torch, as_buffer, as_numpy, byte_view, code_of  # noqa: F401  (part of this module's API)
from .errors import CsdError, InvalidArgument
from .store import Store
from .wire import (CHECKSUM_ALGOS, CMP_OPS, CODECS, CONVERT, EW_OPS, FIELD_TYPES,  # noqa: F401
                   FIRST_UNARY_EW_OP, PROGRAM_IDS, REDUCE_DTYPES, REDUCE_OPS, STATUS_CODES)

ArrayLike = Any  # numpy arrays, torch CPU tensors, DLPack and buffer-protocol objects, SlmArrays
Shape = Union[int, Sequence[int]]

if TYPE_CHECKING:
    from .program import Program

_P = _core.programs  # libcsd's typed program calls: they lay out each program's parameters


class Device:
    """A computational-storage device (see nvme_csd.open)."""

    def __init__(self, path: str, uring: bool = False, queue_depth: int = 64, front_end: str = "auto",
                 read_only: bool = False) -> None:
        self._dev = _core.Device(path, uring, queue_depth, front_end, read_only)
        self.path = path
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.store = Store(self)

    # ---------------------------------------------------------------- basics
    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the device; later calls raise DeviceClosed. Safe while other threads'
        calls are under way: futures not yet started are cancelled, the Executes in flight
        are asked to stop (a chase between two hops; their callers get AbortRequested),
        and the device is freed once the calls under way have ended."""
        if self._pool:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._dev.close()
        if self._pool:
            self._pool.shutdown(wait=True)

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._dev.closed

    @property
    def caps(self) -> Dict[str, Any]:
        """The capabilities log: slm_size, compute_units, max_desc_len, max_ranges, programs."""
        return self._dev.capabilities()

    @property
    def programs(self) -> List[str]:
        """Names of the device's programs."""
        return [name for _, name, _ in self._dev.capabilities()["programs"]]

    @property
    def stats(self) -> Dict[str, Any]:
        """The statistics log page as a dict; on a drive that speaks only the standard
        (no C1h) 'available' is False and every counter None (unknown, not zero)."""
        return self._dev.statistics()

    @property
    def read_only(self) -> bool:
        """Whether it was opened with read_only=True: what would change the namespace's data
        (store puts, deletes, format, reclaim, SLM Store, a Write) raises ReadOnly."""
        return self._dev.read_only

    @property
    def transport(self) -> str:
        """The backend commands go through: 'ioctl', 'uring', 'kmod' or 'inproc'."""
        return self._dev.transport

    @property
    def front_end(self) -> str:
        """The command set this Device speaks: 'vendor', 'nvme-cs' or 'host' (host mode)."""
        return self._dev.front_end

    @property
    def speaks(self) -> str:
        """The computational storage the drive speaks: 'vendor', 'standard' or 'none'."""
        return self._dev.speaks

    @property
    def where(self) -> str:
        """Where this Device's programs run: 'device' (an offload) or 'host' (host mode:
        a drive without computational storage; the device core runs in this process over
        the bytes read from the drive, with the drive's results)."""
        return self._dev.where

    @property
    def model_clock_ns(self) -> int:
        """The timing model's clock in ns: with ``exact=on`` in an ``emu:`` path the in-process
        device's virtual clock, where each command takes the model's time whatever this host's
        speed or load (docs/timing-model.md); the host's clock without; 0 for a drive elsewhere."""
        return self._dev.model_clock_ns

    @property
    def offload(self) -> bool:
        """True when programs run on the drive, False in host mode (see where)."""
        return self._dev.where == "device"

    @property
    def namespace(self) -> Dict[str, Any]:
        """The namespace the device stores on: its size and block size."""
        return self._dev.namespace()

    def read(self, slm_array: SlmArray, *, device: str = "cpu") -> Any:
        """An SlmArray's contents: numpy on the CPU, or a torch tensor on device='cuda'
        landed through the pinned pipeline (registered SLM on the in-process device)."""
        if device == "cpu":
            return slm_array.numpy()
        from . import gpu
        return gpu.slm_to_cuda(self, slm_array, device=device)

    def bus(self) -> Tuple[int, int, int]:
        """(commands, bytes to the device, bytes from the device) moved by this Device."""
        return self._dev.bus()

    # ---------------------------------------------------------------- SLM
    def alloc(self, shape: Shape, dtype: Any = np.uint8, align: int = 4096) -> SlmArray:
        """Allocates an SlmArray of the given shape and dtype in SLM."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return SlmArray(self, self._dev.slm_alloc(max(nbytes, 4), align), dtype, shape)

    def to_slm(self, x: ArrayLike, dtype: Any = None) -> SlmArray:
        """Copies an array (numpy, torch, DLPack, buffer) into a new SlmArray."""
        if isinstance(x, SlmArray):
            return x
        a = as_numpy(x, dtype)
        s = self.alloc(a.shape, a.dtype)
        if a.nbytes:
            self._dev.slm_write(s.offset, as_buffer(byte_view(a)))
        return s

    def _result(self, s: SlmArray, like: Any) -> Any:
        """Brings an SlmArray home as numpy, or as torch when the input was torch."""
        out = s.numpy()
        s.free()
        if _is_torch(like):
            import torch
            return torch.from_numpy(out)
        return out

    def load_program(self, image: Union[str, "os.PathLike[str]", bytes], record_size: int, *,
                     slot: int = 0) -> "Program":
        """Loads a program of your own (an eBPF object from clang -O2 -target bpf -c, as a
        path or bytes) for records of record_size bytes; returns a Program that runs
        .filter/.map/.reduce over structured arrays. InvalidProgramImage if the drive's
        verifier refuses it (e.dw0: the refused instruction)."""
        from .program import Program, read_image
        return Program(self, self._dev.program_load(read_image(image), int(record_size), int(slot)),
                       int(record_size))

    def execute(self, program: Union[str, int], ranges: Iterable[Tuple[int, int]],
                params: bytes = b"") -> Tuple[int, int]:
        """Runs a program by name or id on SLM ranges [(offset, length), ...]; returns (dw0, dw1)."""
        if isinstance(program, str) and program not in PROGRAM_IDS:
            raise InvalidArgument(f"no program named {program!r}; known: {sorted(PROGRAM_IDS)}")
        pid = PROGRAM_IDS[program] if isinstance(program, str) else int(program)
        return self._dev.execute(pid, [(int(o), int(n)) for o, n in ranges], bytes(params))

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "concurrent.futures.Future[Any]":
        """Runs fn(*args) on a worker thread; returns a concurrent.futures.Future. Device
        calls release the GIL, so several in flight keep the compute units busy."""
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, self.caps["compute_units"] * 2))
        return self._pool.submit(fn, *args, **kwargs)

    # ---------------------------------------------------------------- programs
    def gemm(self, a: ArrayLike, b: ArrayLike, c: Optional[ArrayLike] = None, *, trans_a: bool = False,
             trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0) -> Any:
        """alpha * op(a) @ op(b) + beta * c in float32, inside the drive."""
        A, B = self.to_slm(a, np.float32), self.to_slm(b, np.float32)
        if len(A.shape) != 2 or len(B.shape) != 2:
            raise InvalidArgument("gemm: a and b must be 2-D")
        m, k = (A.shape[1], A.shape[0]) if trans_a else A.shape
        k2, n = (B.shape[1], B.shape[0]) if trans_b else B.shape
        if k != k2:
            raise InvalidArgument(f"gemm: shapes {A.shape} and {B.shape} do not multiply"
                                    f"{' (with transposes)' if trans_a or trans_b else ''}")
        C = self.to_slm(c, np.float32) if c is not None else self.alloc((m, n), np.float32)
        if C.shape != (m, n):
            raise InvalidArgument(f"gemm: c has shape {C.shape}, expected {(m, n)}")
        _P.gemm(self._dev, A.range(), B.range(), C.range(), m, n, k, bool(trans_a), bool(trans_b), alpha, beta)
        for src, arr in ((a, A), (b, B)):
            if not isinstance(src, SlmArray):
                arr.free()
        return C if isinstance(c, SlmArray) or (isinstance(a, SlmArray) and isinstance(b, SlmArray)) \
            else self._result(C, a)

    def gemm_async(self, a: ArrayLike, b: ArrayLike, **kw: Any) -> "concurrent.futures.Future[Any]":
        """gemm on a worker thread: a Future of the result."""
        return self.submit(self.gemm, a, b, **kw)

    def elementwise(self, op: str, x: ArrayLike, y: Optional[ArrayLike] = None, *, a: float = 0.0, b: float = 0.0,
                    out: Optional[SlmArray] = None) -> Any:
        """out = x op y (add sub mul div max min) or op(x) (relu sigmoid tanh gelu axpb exp abs)."""
        code = code_of(EW_OPS, op, "elementwise")
        X = self.to_slm(x, np.float32)
        n = int(np.prod(X.shape, dtype=np.int64))
        Y = None
        if code < FIRST_UNARY_EW_OP:
            if y is None:
                raise InvalidArgument(f"elementwise {op} needs y")
            Y = self.to_slm(y, np.float32)
            if Y.shape != X.shape:
                raise InvalidArgument(f"elementwise {op}: shapes {X.shape} and {Y.shape} differ")
        O = out if isinstance(out, SlmArray) else self.alloc(X.shape, np.float32)
        if Y is not None:
            _P.elementwise(self._dev, code, X.range(), Y.range(), O.range(), n)
        else:
            _P.elementwise(self._dev, code, X.range(), O.range(), n, a, b)
        return self._finish(O, x, out, [(x, X), (y, Y)])

    def _finish(self, O: SlmArray, like: Any, out: Any, temps: Sequence[Tuple[Any, Optional[SlmArray]]]) -> Any:
        for src, arr in temps:
            if arr is not None and not isinstance(src, SlmArray):
                arr.free()
        if isinstance(out, SlmArray) or isinstance(like, SlmArray):
            return O
        return self._result(O, like)

    def softmax(self, x: ArrayLike, out: Optional[SlmArray] = None) -> Any:
        """Row-wise softmax of a 2-D float32 array."""
        X = self.to_slm(x, np.float32)
        rows, cols = (1, X.shape[0]) if len(X.shape) == 1 else (int(np.prod(X.shape[:-1])), X.shape[-1])
        O = out if isinstance(out, SlmArray) else self.alloc(X.shape, np.float32)
        _P.softmax(self._dev, X.range(), O.range(), rows, cols)
        return self._finish(O, x, out, [(x, X)])

    def reduce(self, x: ArrayLike, op: str = "sum") -> Any:
        """One result per row of a 2-D array (1-D: one result): sum min max mean (float64
        for floats, int64 for integer sums/min/max), argmax argmin (int64)."""
        code = code_of(REDUCE_OPS, op, "reduce")
        X = self.to_slm(x)
        if X.dtype not in REDUCE_DTYPES:
            raise InvalidArgument(f"reduce: dtype {X.dtype} not one of float32 float64 int32 int64")
        rows, cols = (1, X.shape[0]) if len(X.shape) == 1 else (int(np.prod(X.shape[:-1])), X.shape[-1])
        out_dtype = np.int64 if op in ("argmax", "argmin") or (X.dtype.kind == "i" and op != "mean") \
            else np.float64
        O = self.alloc((rows,), out_dtype)
        _P.reduce(self._dev, code, REDUCE_DTYPES[X.dtype], X.range(), O.range(), rows, cols)
        return self._finish(O, x, None, [(x, X)])

    def filter(self, records: ArrayLike, field: str, op: str, lo: Union[int, float], hi: Union[int, float] = 0, *,
               indices: bool = False, device: str = "cpu") -> Any:
        """Records (a structured numpy array) whose `field` compares true with lo (and hi
        for 'between'); returns the matching records, or their indices (uint32).
        device='cuda': the result goes from SLM straight to a torch CUDA tensor (records
        as uint8 rows of the record size, indices as int32)."""
        r = as_numpy(records, name="records") if not isinstance(records, SlmArray) else None
        dt = r.dtype if r is not None else records.dtype
        if dt.fields is None or field not in dt.fields:
            raise InvalidArgument(f"filter: records must be a structured array with a field {field!r}")
        ftype, foff = dt.fields[field][0], dt.fields[field][1]
        if ftype not in FIELD_TYPES:
            raise InvalidArgument(f"filter: field {field!r} has dtype {ftype}, not i4 i8 u4 u8 f4 f8")
        cmp = code_of(CMP_OPS, op, "filter")
        R = self.to_slm(r) if r is not None else records
        count = int(np.prod(R.shape, dtype=np.int64))
        code = FIELD_TYPES[ftype]
        if ftype.kind == "f":
            bounds = (float(lo), float(hi), 0, 0)
        else:  # unsigned bounds travel as the two's complement of their 64 bits
            wrap = (lambda v: (int(v) & (2 ** 64 - 1)) - (2 ** 64 if int(v) & 2 ** 63 else 0)) \
                if ftype.kind == "u" else int
            bounds = (0.0, 0.0, wrap(lo), wrap(hi))
        unit = 4 if indices else dt.itemsize
        cap = max(count // 8, 1)
        while True:
            O = self.alloc((cap * unit,), np.uint8)
            try:
                dw0, matches = _P.filter(self._dev, R.range(), O.range(), dt.itemsize, count, foff, code,
                                         cmp, bool(indices), *bounds)
                break
            except CsdError as e:
                O.free()
                if e.code != STATUS_CODES["Output Overflow"]:
                    raise
                cap = max(e.dw1, 1)  # the device said how many matched
        if r is not None:
            R.free()
        if device != "cpu":
            from . import gpu
            n = dw0 // unit
            view = SlmArray(self, O.buffer, np.int32 if indices else np.uint8, (n,) if indices else (n, dt.itemsize))
            try:
                return gpu.slm_to_cuda(self, view, device=device)
            finally:
                O.free()
        res = O.numpy()[:dw0].view(np.uint32 if indices else dt).copy()
        O.free()
        return res

    def convert(self, x: ArrayLike, to: str, *, scale: float = 1.0, zero_point: int = 0,
                src: Optional[str] = None) -> Any:
        """Converts float32 <-> float16/bfloat16 (round to nearest even), int8/uint8 <-> float32
        (quantised with scale and zero_point). bfloat16 is carried as uint16."""
        a = as_numpy(x) if not isinstance(x, SlmArray) else None
        frm = src or (a.dtype.name if a is not None else x.dtype.name)
        if frm == "uint16" and to == "float32":
            frm = "bfloat16"
        key = (frm, to)
        if key not in CONVERT:
            raise InvalidArgument(f"convert: {frm} -> {to} not supported; known: {sorted(CONVERT)}")
        op, _, osize = CONVERT[key]
        X = self.to_slm(a) if a is not None else x
        n = int(np.prod(X.shape, dtype=np.int64))
        out_dtype = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "int8": np.int8}[to]
        O = self.alloc(X.shape, out_dtype)
        _P.convert(self._dev, op, X.range(), O.range(), n, scale, zero_point)
        return self._finish(O, x, None, [(x, X)])

    def checksum(self, data: ArrayLike, algo: str = "crc32c") -> int:
        """CRC-32C or XXH64 (seed 0) of the data, computed in the drive."""
        code = code_of(CHECKSUM_ALGOS, algo, "checksum", "algo")
        D = self.to_slm(data) if not isinstance(data, SlmArray) else data
        if D.nbytes == 0:
            raise InvalidArgument("checksum: empty data")
        value = _P.checksum(self._dev, code, D.range())
        if D is not data:
            D.free()
        return value

    def conv2d(self, x: ArrayLike, w: ArrayLike, bias: Optional[ArrayLike] = None, *,
               stride: Union[int, Tuple[int, int]] = 1, padding: Union[int, Tuple[int, int]] = 0,
               dilation: Union[int, Tuple[int, int]] = 1) -> Any:
        """2-D convolution, NCHW float32 input, KCRS weight, optional bias (K)."""
        pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
        (sh, sw), (ph, pw), (dh, dwl) = pair(stride), pair(padding), pair(dilation)
        X, W = self.to_slm(x, np.float32), self.to_slm(w, np.float32)
        if len(X.shape) != 4 or len(W.shape) != 4 or X.shape[1] != W.shape[1]:
            raise InvalidArgument(f"conv2d: x {X.shape} must be NCHW and w {W.shape} KCRS with equal C")
        n, c, h, wd = X.shape
        k, _, r, s = W.shape
        p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
        q = (wd + 2 * pw - dwl * (s - 1) - 1) // sw + 1
        if p <= 0 or q <= 0:
            raise InvalidArgument("conv2d: the kernel does not fit the padded input")
        Bs = self.to_slm(bias, np.float32) if bias is not None else None
        O = self.alloc((n, k, p, q), np.float32)
        _P.conv2d(self._dev, X.range(), W.range(), Bs.range() if Bs is not None else None, O.range(),
                  (n, c, h, wd, k, r, s), (sh, sw), (ph, pw), (dh, dwl))
        return self._finish(O, x, None, [(x, X), (w, W), (bias, Bs)])

    def decompress(self, data: ArrayLike, out_size: int, codec: str = "zstd") -> bytes:
        """Decompresses zstd frames or an LZ4 frame inside the drive; out_size is an upper
        bound of the result's size. Returns bytes."""
        code = code_of(CODECS, codec, "decompress", "codec")
        D = self.to_slm(data)
        O = self.alloc((max(int(out_size), 4),), np.uint8)
        try:
            n = _P.decompress(self._dev, code, D.range(), O.range())
            return O.numpy()[:n].tobytes()
        finally:
            D.free()
            O.free()


def open(path: str, *, uring: bool = False, queue_depth: int = 64, front_end: str = "auto",  # noqa: A001 (mirrors builtins.open)
         read_only: bool = False) -> Device:
    """Opens a CSD: '/dev/ngXnY' or '/dev/nvmeXnY' (uring=True for io_uring passthrough),
    or 'emu:FILE?slm=64M&lba=512&cu=2&size=256M' for the in-process device ('&nvme-cs=1'
    adds the standard front end). front_end: 'vendor', 'nvme-cs' or 'auto' (vendor where the
    drive speaks it; the environment variable CSD_FRONT_END overrides auto). read_only=True
    opens the node or file read-only (a read-only image, a node this user may only read):
    the store's reads, capabilities, statistics and programs that only read work; what would
    change the namespace's data raises ReadOnly."""
    return Device(path, uring=uring, queue_depth=queue_depth, front_end=front_end, read_only=read_only)
