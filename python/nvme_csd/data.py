# SPDX-License-Identifier: MIT
"""Stored objects as a PyTorch data source (needs torch): StoreDataset, a map-style
torch.utils.data.Dataset over named objects, and Prefetcher, an iterator that lands the
next `depth` objects in GPU memory on a side CUDA stream (libcsd's pinned pipeline) while
the caller computes on the current one, so that a training step need not wait for data.

    ds = StoreDataset(dev, [f"batch{i}" for i in range(100)])
    for x in Prefetcher(ds, depth=2, device="cuda"):
        loss = model(x).sum(); loss.backward(); opt.step()
"""

import concurrent.futures

import torch
import torch.utils.data

from . import gpu


class StoreDataset(torch.utils.data.Dataset):
    """Item i is the stored object names[i] as a torch tensor on `device` ('cpu' or a CUDA
    device: then landed by the pipeline), passed through transform when one is given."""

    def __init__(self, dev, names, *, device="cpu", transform=None):
        self.dev, self.names, self.device, self.transform = dev, list(names), device, transform

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return self.load(i, self.device)

    def load(self, i, device):
        """Object i as a tensor on device (transformed)."""
        x = self.dev.store.read_object(self.names[i], device=str(device))
        if not isinstance(x, torch.Tensor):
            x = torch.from_numpy(x) if not isinstance(x, bytes) else torch.frombuffer(bytearray(x), dtype=torch.uint8)
        return self.transform(x) if self.transform else x


class Prefetcher:
    """Iterates over a StoreDataset in order (or in the order of `indices`), keeping the next
    `depth` items loading on a worker thread; on CUDA each lands on a side stream and the
    consumer's stream waits for it (no host synchronisation). Usable as a DataLoader
    replacement for data already on the drive. len() is the number of items."""

    def __init__(self, dataset, *, depth=2, device="cuda", indices=None):
        if depth < 1:
            raise ValueError("Prefetcher: depth must be at least 1")
        self.dataset, self.depth, self.device = dataset, depth, torch.device(device)
        self.indices = list(range(len(dataset))) if indices is None else list(indices)
        if self.device.type == "cuda" and not (gpu.available() and torch.cuda.is_available()):
            raise RuntimeError("Prefetcher: no CUDA device (or nvme_csd was built without its GPU part)")

    def __len__(self):
        return len(self.indices)

    def _load(self, i, stream):
        if stream is None:
            return self.dataset.load(i, self.device), None
        with torch.cuda.stream(stream):
            x = self.dataset.load(i, self.device)
            done = torch.cuda.Event()
            done.record(stream)
        return x, done

    def __iter__(self):
        cuda = self.device.type == "cuda"
        streams = [torch.cuda.Stream(self.device) for _ in range(self.depth)] if cuda else [None] * self.depth
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.depth) as pool:
            pending = [pool.submit(self._load, i, streams[k % self.depth])
                       for k, i in enumerate(self.indices[:self.depth])]
            for k in range(len(self.indices)):
                x, done = pending.pop(0).result()
                nxt = k + self.depth
                if nxt < len(self.indices):
                    pending.append(pool.submit(self._load, self.indices[nxt], streams[nxt % self.depth]))
                if done is not None:
                    current = torch.cuda.current_stream(self.device)
                    current.wait_event(done)
                    x.record_stream(current)  # its memory is not reused before current is done with it
                yield x
