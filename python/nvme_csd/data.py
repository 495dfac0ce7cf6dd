# SPDX-License-Identifier: MIT
"""Stored objects as a PyTorch data source (needs torch): StoreDataset, a map-style
torch.utils.data.Dataset over named objects, and Prefetcher, an iterator that lands the
next `depth` items (or batches) in GPU memory on a side CUDA stream (libcsd's pinned
pipeline) while the caller computes on the current one, so that a training step need not
wait for data.

    ds = StoreDataset("/dev/ng0n1", [f"batch{i}" for i in range(100)])
    for x in Prefetcher(ds, depth=2, device="cuda"):
        loss = model(x).sum(); loss.backward(); opt.step()

A StoreDataset holds the drive's path, not an open device: each process that reads it (a
DataLoader worker, forked or spawned, a DistributedDataParallel rank) opens the drive itself
on first use, with the same transport (ioctl or io_uring) and front end, so that it pickles
and no io_uring ring or file crosses a fork. Inside DataLoader workers items are read on the
CPU whatever `device` says (CUDA is never touched there): the DataLoader's pin_memory and
the training loop move them, as with any other dataset.
"""

import concurrent.futures
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import torch
import torch.utils.data

from . import gpu
from .device import Device
from .device import open as open_device

Item = Any  # a tensor, or what transform / collate_fn make of it


class StoreDataset(torch.utils.data.Dataset):
    """Item i is the stored object names[i] as a torch tensor on `device` ('cpu' or a CUDA
    device: then landed by the pipeline; CPU in DataLoader workers), passed through
    transform when one is given. `drive` is an open Device (used as it is in the process
    that made the dataset; other processes open its path again) or a path as nvme_csd.open
    takes it, with uring / front_end / queue_depth as there."""

    def __init__(self, drive: Union[Device, str], names: Iterable[str], *, device: Union[str, torch.device] = "cpu",
                 transform: Optional[Callable[[torch.Tensor], Any]] = None, uring: Optional[bool] = None,
                 front_end: Optional[str] = None, queue_depth: int = 64) -> None:
        if isinstance(drive, Device):
            self.path = drive.path
            uring = drive.transport == "uring" if uring is None else uring
            front_end = drive.front_end if front_end is None else front_end
        else:
            self.path = os.fspath(drive)
        self.open_options: Dict[str, Any] = {"uring": bool(uring), "queue_depth": queue_depth,
                                             "front_end": front_end or "auto"}
        self.names, self.device, self.transform = list(names), str(device), transform
        self._dev: Optional[Device] = drive if isinstance(drive, Device) else None
        self._pid = os.getpid()
        self._owned = False
        self._inherited: Optional[Device] = None

    @property
    def dev(self) -> Device:
        """This process's Device: the one given, in the process that made the dataset; else
        opened on first use (in each DataLoader worker, each rank)."""
        if self._dev is None or self._pid != os.getpid():
            # A forked child keeps the parent's Device object untouched (it may hold an
            # io_uring ring, which does not survive fork) and opens the drive again.
            self._inherited = self._dev
            self._dev = open_device(self.path, **self.open_options)
            self._pid, self._owned = os.getpid(), True
        return self._dev

    def close(self) -> None:
        """Closes the Device this dataset opened itself (one it was given stays open)."""
        if self._owned and self._dev is not None and self._pid == os.getpid():
            self._dev.close()
        self._dev, self._owned = None, False

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_dev=None, _owned=False, _inherited=None)  # the receiving process opens its own
        return state

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> Item:
        return self.load(i, self.device)

    def load(self, i: int, device: Union[str, torch.device]) -> Item:
        """Object i as a tensor on device (transformed); on the CPU inside DataLoader workers."""
        device = str(device)
        if torch.utils.data.get_worker_info() is not None:
            device = "cpu"  # CUDA is never initialised in a worker: the main process moves the batch
        x = self.dev.store.read_object(self.names[i], device=device)
        if not isinstance(x, torch.Tensor):
            x = torch.from_numpy(x) if not isinstance(x, bytes) else torch.frombuffer(bytearray(x), dtype=torch.uint8)
        return self.transform(x) if self.transform else x


class Prefetcher:
    """Iterates over a StoreDataset in order, in the order of `indices`, or in the order a
    `sampler` gives each epoch (e.g. a DistributedSampler: call its set_epoch as usual),
    keeping the next `depth` items loading on worker threads; with batch_size, items are
    grouped into batches of that many (the last one shorter unless drop_last) and joined by
    collate_fn (torch's default_collate: a stacked tensor). On CUDA each item or batch lands
    on a side stream and the consumer's stream waits for it (no host synchronisation).
    Usable as a DataLoader replacement for data already on the drive. len() is the number
    of items or batches it yields."""

    def __init__(self, dataset: StoreDataset, *, depth: int = 2, device: Union[str, torch.device] = "cuda",
                 indices: Optional[Sequence[int]] = None, sampler: Optional[Iterable[int]] = None,
                 batch_size: Optional[int] = None, drop_last: bool = False,
                 collate_fn: Optional[Callable[[List[Any]], Any]] = None) -> None:
        if depth < 1:
            raise ValueError("Prefetcher: depth must be at least 1")
        if batch_size is not None and batch_size < 1:
            raise ValueError("Prefetcher: batch_size must be at least 1")
        if indices is not None and sampler is not None:
            raise ValueError("Prefetcher: give indices or a sampler, not both")
        self.dataset, self.depth, self.device = dataset, depth, torch.device(device)
        self.indices = None if indices is None else list(indices)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
        self.collate_fn = collate_fn or torch.utils.data.default_collate
        if self.device.type == "cuda" and not (gpu.available() and torch.cuda.is_available()):
            raise RuntimeError("Prefetcher: no CUDA device (or nvme_csd was built without its GPU part)")

    def _order(self) -> List[int]:
        if self.sampler is not None:
            return [int(i) for i in self.sampler]
        return list(range(len(self.dataset))) if self.indices is None else self.indices

    def _steps(self) -> List[List[int]]:
        """The index groups to yield, one per step (single items: groups of one)."""
        order = self._order()
        if self.batch_size is None:
            return [[i] for i in order]
        b = self.batch_size
        steps = [order[k:k + b] for k in range(0, len(order), b)]
        return steps[:-1] if steps and self.drop_last and len(steps[-1]) < b else steps

    def __len__(self) -> int:
        n = len(self.sampler) if self.sampler is not None else len(self._order())  # type: ignore[arg-type]
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _load(self, group: List[int], stream: Any) -> Tuple[Any, Any]:
        def one() -> Any:
            if self.batch_size is None:
                return self.dataset.load(group[0], self.device)
            return self.collate_fn([self.dataset.load(i, self.device) for i in group])
        if stream is None:
            return one(), None
        with torch.cuda.stream(stream):
            x = one()
            done = torch.cuda.Event()
            done.record(stream)
        return x, done

    def __iter__(self) -> Iterator[Any]:
        steps = self._steps()
        cuda = self.device.type == "cuda"
        streams = [torch.cuda.Stream(self.device) for _ in range(self.depth)] if cuda else [None] * self.depth
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.depth) as pool:
            pending = [pool.submit(self._load, g, streams[k % self.depth]) for k, g in enumerate(steps[:self.depth])]
            for k in range(len(steps)):
                x, done = pending.pop(0).result()
                nxt = k + self.depth
                if nxt < len(steps):
                    pending.append(pool.submit(self._load, steps[nxt], streams[nxt % self.depth]))
                if done is not None:
                    current = torch.cuda.current_stream(self.device)
                    current.wait_event(done)
                    for t in (x if isinstance(x, (list, tuple)) else [x]):
                        if isinstance(t, torch.Tensor):
                            t.record_stream(current)  # its memory is not reused before current is done with it
                yield x
