# SPDX-License-Identifier: MIT
"""Several drives used as one (csd::DriveSet, docs/drive-set.md): objects placed by name
(a whole object on drive fnv1a64(name) % N), tensors striped by rows over every drive or
replicated on each, and filter / reduce / gemm fanned out to the drives that hold the
data, combined on the host. A drive's failure raises an error naming the drive."""

from typing import Any, Dict, Iterable, List, Tuple, Union

import numpy as np

from . import _core
from .arrays import as_numpy, byte_view, catalog_dtype, code_of, field_type_code, numpy_dtype
from .errors import DeviceClosed, InvalidArgument
from .wire import CMP_OPS, REDUCE_OPS


class DriveSet:
    """Drives opened together; see open_many. A context manager."""

    def __init__(self, paths: Iterable[str], *, uring: bool = False, front_end: str = "auto",
                 read_only: bool = False) -> None:
        self.paths = list(paths)
        self._open_set: Any = _core.DriveSet(self.paths, uring, front_end, read_only)

    @property
    def _set(self) -> Any:
        """The open drives; DeviceClosed once close() has run."""
        if self._open_set is None:
            raise DeviceClosed("the drive set was closed")
        return self._open_set

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._open_set is None

    def __len__(self) -> int:
        return self._set.size()

    def __enter__(self) -> "DriveSet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Releases every drive; later calls raise DeviceClosed."""
        self._open_set = None

    def bus(self) -> Tuple[int, int, int]:
        """(commands, bytes to the drives, bytes from the drives) moved by this set, summed."""
        return self._set.bus()

    def stats(self, i: int) -> Dict[str, Any]:
        """Drive i's statistics log page as a dict (Device.stats): its own counters, e.g.
        its model_delay_ns for the time its work took on the timing model."""
        if not 0 <= i < len(self):
            raise IndexError(f"drive {i} of a set of {len(self)}")
        return self._set.statistics(int(i))

    def model_clock_ns(self, i: int) -> int:
        """Drive i's timing-model clock in ns (Device.model_clock_ns: virtual with exact=on)."""
        if not 0 <= i < len(self):
            raise IndexError(f"drive {i} of a set of {len(self)}")
        return self._set.model_clock_ns(int(i))

    def home(self, name: str) -> int:
        """The index of the drive a whole object named `name` lives on."""
        return self._set.home(name)

    def format(self, *, force: bool = False) -> None:
        """Creates an empty store on every drive (existing objects are lost). Raises
        FormatRefused, writing no drive, where one holds a partition table, a filesystem or
        volume signature or a store, unless force."""
        self._set.format(force)

    def put(self, name: str, value: Any, *, placement: str = "home") -> None:
        """Stores an array (or bytes) whole on its home drive; placement="striped" splits a
        tensor's rows over every drive, "replicated" stores it whole on each."""
        if placement not in ("home", "striped", "replicated"):
            raise InvalidArgument(f"put: placement must be home, striped or replicated, not {placement!r}")
        if isinstance(value, (bytes, bytearray, memoryview)):
            if placement == "striped":
                raise InvalidArgument("put: only tensors can be striped")
            self._set.put(name, value, "", [], placement)
            return
        a = as_numpy(value, name=f"put({name!r})")
        dtype = catalog_dtype(a.dtype, f"put({name!r})")  # first: it refuses object arrays
        self._set.put(name, byte_view(a), dtype, list(a.shape), placement)

    def get(self, name: str) -> Union[np.ndarray, bytes]:
        """The object: a numpy array for tensors, with the dtype it was put with (a striped
        one's blocks in drive order), bytes for blobs."""
        info = self._set.stat(name)
        raw = self._set.get(name)
        if not info["dtype"]:
            return raw
        out = np.empty(info["shape"], dtype=numpy_dtype(info["dtype"], f"get({name!r})"))
        if len(raw) != out.nbytes:
            raise InvalidArgument(f"get({name!r}): {len(raw)} bytes, but its dtype and shape describe {out.nbytes}")
        byte_view(out)[:] = np.frombuffer(raw, dtype=np.uint8)
        return out

    def stat(self, name: str) -> Dict[str, Any]:
        """The object's catalog entry (a striped one's rows summed)."""
        return self._set.stat(name)

    def striped(self, name: str) -> bool:
        """Whether an object is striped over the drives."""
        return self._set.striped(name)

    def list(self) -> List[str]:
        """Every object once, by name."""
        return self._set.list()

    def remove(self, name: str) -> None:
        """Removes an object from every drive that holds part or a copy of it."""
        self._set.remove(name)

    def filter(self, src: str, dst: str, *, record_size: int, field_offset: int, field_type: Any, op: str,
               lo: Union[int, float], hi: Union[int, float] = 0) -> int:
        """filter of a striped table into the striped object dst, on every drive at once;
        returns the number of matching records."""
        code = field_type_code(field_type, "filter")
        return self._set.filter(src, dst, record_size, field_offset, code, code_of(CMP_OPS, op, "filter"),
                                float(lo), float(hi), int(lo), int(hi))

    def reduce(self, name: str, op: str) -> Union[int, float]:
        """sum, min, max, mean, argmax or argmin of a whole striped f32/f64 tensor, each drive
        reducing its block (argmax/argmin: the flat index, an int)."""
        v = self._set.reduce(name, code_of(REDUCE_OPS, op, "reduce"))
        return int(v) if op in ("argmax", "argmin") else v

    def gemm(self, a: str, b: str, c: str) -> None:
        """c = a @ b for a striped 2-D f32 a and a replicated f32 b; c is stored striped."""
        self._set.gemm(a, b, c)


def open_many(paths: Iterable[str], *, uring: bool = False, front_end: str = "auto",
              read_only: bool = False) -> DriveSet:
    """Opens several drives as one DriveSet (each path as nvme_csd.open takes it; read_only
    as nvme_csd.open's: writes raise ReadOnly)."""
    return DriveSet(paths, uring=uring, front_end=front_end, read_only=read_only)
