# SPDX-License-Identifier: MIT
"""The object store as a mapping: dev.store["w"] = array; dev.store["w"] -> array."""

import errno

import numpy as np

from .arrays import SlmArray, _is_torch, as_numpy, byte_view, catalog_dtype, numpy_dtype
from .errors import CsdError, InvalidParameters, NotFound
from .wire import CMP_OPS, FIELD_TYPES


def land(store, name, alloc, into, attempts=4):
    """Lands object `name` into a buffer that alloc(entry) makes for its catalog entry (dtype,
    shape, bytes); into(buffer) runs the store's checked read into it and returns the
    generation of the version that landed. Another writer may replace the object between
    the stat and the read: then the buffer was made for another version, and both are done
    again. Returns (entry, buffer)."""
    for _ in range(attempts):
        info = store.stat(name)
        out = alloc(info)
        if not info["bytes"] or not out.nbytes:
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


class Store:
    """Named objects kept on the drive's namespace. Tensors keep dtype (structured ones
    included) and shape; bytes-like values are stored as blobs and come back as bytes. Every assignment and deletion is
    durable when it returns."""

    def __init__(self, device):
        self._device = device

    @property
    def _dev(self):
        return self._device._dev

    def format(self):
        """Creates an empty store over the whole namespace (existing objects are lost)."""
        self._dev.store_format()

    def __setitem__(self, name, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            self._dev.store_put(name, value, "", [])
            return
        if not (isinstance(value, np.ndarray) or _is_torch(value) or hasattr(value, "__dlpack__")):
            raise InvalidParameters(f"store[{name!r}]: store arrays, tensors or bytes, not {type(value).__name__}")
        a = as_numpy(value, name=f"store[{name!r}]")
        dtype = catalog_dtype(a.dtype, f"store[{name!r}]")  # first: it refuses object arrays
        self._dev.store_put(name, byte_view(a), dtype, list(a.shape))

    def put(self, name, value):
        """Same as store[name] = value."""
        self[name] = value

    def __getitem__(self, name):
        return self.get(name)

    def get(self, name, *, device="cpu"):
        """The object: a numpy array for tensors, bytes for blobs, checked against its
        CRC-32C (read again if another writer replaced it meanwhile); device='cuda' gives a
        torch CUDA tensor landed by the GPU pipeline, checked the same way (no host copy in
        Python)."""
        if device != "cpu":
            from . import gpu
            return gpu.object_to_cuda(self._device, name, device=device)

        def alloc(info):
            if info["dtype"]:
                return np.empty(info["shape"], dtype=numpy_dtype(info["dtype"], f"store[{name!r}]"))
            return np.empty(info["bytes"], dtype=np.uint8)

        info, out = land(self, name, alloc, lambda out: self._dev.store_get_into(name, byte_view(out)))
        return out if info["dtype"] else out.tobytes()

    def read(self, name, offset, length):
        """length bytes of an object from offset (a ranged read), as bytes."""
        out = np.empty(length, dtype=np.uint8)
        if length:
            self._dev.store_read_into(name, offset, out)
        return out.tobytes()

    def stat(self, name):
        """The catalog entry: name, dtype, shape, bytes, crc32c, generation."""
        try:
            return self._dev.store_stat(name)
        except NotFound:
            raise NotFound(f"no object {name!r} in the store") from None

    def load(self, name):
        """Loads an object into SLM (SLM Load, nothing crosses the bus): an SlmArray."""
        info = self.stat(name)
        buf = self._dev.store_load(name)
        if info["dtype"]:
            return SlmArray(self._device, buf, numpy_dtype(info["dtype"], f"store.load({name!r})"), info["shape"])
        return SlmArray(self._device, buf, np.uint8, (info["bytes"],))

    def filter(self, src, dst, *, record_size, field_offset, field_type, op, lo, hi=0, indices=False):
        """filter object src into object dst inside the drive; returns the match count."""
        code = FIELD_TYPES[np.dtype(field_type)]
        matches, _ = self._dev.store_filter(src, dst, record_size, field_offset, code, CMP_OPS[op],
                                            float(lo), float(hi), int(lo), int(hi), indices)
        return matches

    def __delitem__(self, name):
        if not self._dev.store_exists(name):
            raise NotFound(f"no object {name!r} in the store")
        self._dev.store_remove(name)

    @property
    def generation(self):
        """The store's generation: it grows by one with every committed change."""
        return self._dev.store_generation()

    def reservations(self):
        """Space reserved by puts in progress, or left by writers that died mid-put."""
        return self._dev.store_reservations()

    def reclaim(self, older_than=3600):
        """Frees reservations at least older_than seconds old; returns how many."""
        return self._dev.store_reclaim(int(older_than))

    def __contains__(self, name):
        return self._dev.store_exists(name)

    def __iter__(self):
        return iter([o["name"] for o in self._dev.store_list()])

    def __len__(self):
        return len(self._dev.store_list())

    def keys(self):
        return list(self)

    def items(self):
        return [(k, self[k]) for k in self]

    def prefetch(self, names, *, depth=2, device="cpu"):
        """Iterates over objects, reading up to `depth` ahead on worker threads (double
        buffering by default): usable as a PyTorch data source."""
        names = list(names)
        pending = [self._device.submit(self.get, n, device=device) for n in names[:depth]]
        for i, _ in enumerate(names):
            item = pending.pop(0).result()
            if i + depth < len(names):
                pending.append(self._device.submit(self.get, names[i + depth], device=device))
            yield item
