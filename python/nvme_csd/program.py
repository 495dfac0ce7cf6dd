# SPDX-License-Identifier: MIT
"""Programs of your own in the drive (command set §8): an eBPF object compiled by clang,
loaded into a slot, run once per record over fixed-size records (a structured numpy
array, or its SLM copy) as filter, map or reduce, or over blocks of the namespace it
chases from one to the next (chase)."""

import os
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .arrays import SlmArray, as_buffer, as_numpy
from .errors import InvalidArgument
from .wire import MAX_CHASE_HOPS, MAX_PROGRAM_PARAMS, PROGRAM_MODES

if TYPE_CHECKING:
    from .device import Device


class Program:
    """A loaded program (see Device.load_program). Unloaded by close(), by leaving a `with`
    block, or when garbage-collected, unless keep() was called."""

    def __init__(self, device: "Device", slot: int, record_size: int) -> None:
        self.device, self.id, self.record_size = device, slot, record_size
        self._kept = False
        self._loaded = True

    @property
    def name(self) -> Optional[str]:
        """The entry function's name, as the drive lists it."""
        return next((n for i, n, _ in self.device._dev.capabilities()["programs"] if i == self.id), None)

    def keep(self) -> "Program":
        """Leaves the program loaded after this object goes."""
        self._kept = True
        return self

    def close(self) -> None:
        """Unloads the program (Program Unload)."""
        if self._loaded:
            self._loaded = False
            self.device._dev.program_unload(self.id)

    unload = close

    def __enter__(self) -> "Program":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self._loaded and not self._kept:
            try:
                self.close()
            except Exception:  # the device may be closed already
                pass

    def __repr__(self) -> str:
        return f"Program(slot={self.id:#06x}, record_size={self.record_size})"

    # ---------------------------------------------------------------- running
    def _records(self, records: Any) -> Tuple[SlmArray, int, bool]:
        """(SlmArray of the records, record count, whether it is a temporary)."""
        if isinstance(records, SlmArray):
            if records.nbytes % self.record_size:
                raise InvalidArgument(f"{records.nbytes} bytes is not a whole number of "
                                        f"{self.record_size}-byte records")
            return records, records.nbytes // self.record_size, False
        a = as_numpy(records, name="records")
        if a.dtype.fields is not None or a.ndim == 1:
            if a.dtype.itemsize != self.record_size:
                raise InvalidArgument(f"records of {a.dtype.itemsize} bytes; the program was loaded "
                                        f"for {self.record_size}-byte records")
            count = a.shape[0] if a.ndim else 1
        elif a.ndim == 2 and a.shape[1] * a.dtype.itemsize == self.record_size:
            count = a.shape[0]
        else:
            raise InvalidArgument(f"records: a structured array of {self.record_size}-byte records, "
                                    f"or rows of {self.record_size} bytes (got {a.dtype}, shape {a.shape})")
        return self.device.to_slm(a), count, True

    def _run(self, mode: str, R: SlmArray, count: int, params: Sequence[int],
             out_range: Tuple[int, int]) -> Tuple[int, int]:
        params = [int(p) & (2 ** 64 - 1) for p in params]
        if len(params) > MAX_PROGRAM_PARAMS:
            raise InvalidArgument(f"at most {MAX_PROGRAM_PARAMS} params, got {len(params)}")
        return _core.programs.downloaded(self.device._dev, self.id, PROGRAM_MODES[mode], R.range(), out_range,
                                         count, params)

    def filter(self, records: Any, params: Sequence[int] = ()) -> np.ndarray:
        """The records for which the program returns non-zero, in order (same dtype)."""
        R, count, temp = self._records(records)
        O = self.device.alloc(max(count * self.record_size, 4))  # room for every record
        try:
            nbytes, matches = self._run("filter", R, count, params, O.range())
            data = np.empty(nbytes, dtype=np.uint8)
            if nbytes:
                self.device._dev.slm_read_into(O.offset, as_buffer(data))
        finally:
            O.free()
            if temp:
                R.free()
        dtype = getattr(records, "dtype", None)
        if dtype is not None and np.dtype(dtype).itemsize == self.record_size:
            return data.view(dtype)
        return data.reshape(matches, self.record_size)

    def map(self, records: Any, params: Sequence[int] = ()) -> np.ndarray:
        """One uint64 per record: the program's return value."""
        R, count, temp = self._records(records)
        O = self.device.alloc((count,), np.uint64)
        self._run("map", R, count, params, O.range())
        if temp:
            R.free()
        out = O.numpy()
        O.free()
        return out

    def reduce(self, records: Any, params: Sequence[int] = ()) -> int:
        """The sum of the program's return values (a u64 that wraps), as a Python int."""
        R, count, temp = self._records(records)
        dw0, dw1 = self._run("reduce", R, count, params, (0, 0))
        if temp:
            R.free()
        return dw0 | dw1 << 32


    def chase(self, start_lba: int, params: Sequence[int] = (), max_hops: Optional[int] = None) -> Tuple[int, int]:
        """Pointer chasing in the drive (mode 3, 1.2): the drive reads the block at start_lba,
        calls the program on its first record_size bytes and follows the LBA it answers,
        until it answers "done" (bit 63). The program sees params[0] = start_lba and
        params[1:] = params. Returns (value, hops). max_hops (default: the drive's cap, 64)
        blocks read without an answer: HopLimitExceeded, whose dw0/dw1 are the next LBA."""
        start, params, hops = self._chase_args(start_lba, params, max_hops)
        return _core.programs.chase(self.device._dev, self.id, self.record_size, start, params, hops)

    def chase_value(self, start_lba: int, params: Sequence[int] = (), max_hops: Optional[int] = None) -> int:
        """The same chase as one command: its value, from the completion (chase also reads
        the hop count back from device memory, a second command)."""
        start, params, hops = self._chase_args(start_lba, params, max_hops)
        return _core.programs.chase_value(self.device._dev, self.id, self.record_size, start, params, hops)

    @staticmethod
    def _chase_args(start_lba: int, params: Sequence[int],
                    max_hops: Optional[int]) -> Tuple[int, List[int], int]:
        """A chase's start LBA (64-bit), params (64-bit, at most MAX_PROGRAM_PARAMS - 1) and
        hop limit (32-bit; the drive checks it against its cap), checked."""
        start = int(start_lba)
        if not 0 <= start < 2 ** 64:
            raise InvalidArgument(f"start_lba {start} is not an LBA (0 .. 2^64 - 1)")
        params = [int(p) & (2 ** 64 - 1) for p in params]
        if len(params) > MAX_PROGRAM_PARAMS - 1:
            raise InvalidArgument(f"at most {MAX_PROGRAM_PARAMS - 1} params besides the start LBA, got {len(params)}")
        hops = MAX_CHASE_HOPS if max_hops is None else int(max_hops)
        if not 0 <= hops < 2 ** 32:
            raise InvalidArgument(f"max_hops {hops} is not a hop limit (1 .. {MAX_CHASE_HOPS} on this drive)")
        return start, params, hops


def read_image(image: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]) -> bytes:
    """The bytes of a program image given as a path or as bytes."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    with open(os.fspath(image), "rb") as f:
        return f.read()
