# SPDX-License-Identifier: MIT
"""nvme_csd.nn: torch modules whose weights live on the drive.

    bag = nvme_csd.nn.EmbeddingBag(1000, 64, device=dev, table_lba=2048, mode="sum")
    y = bag(indices, offsets)          # pooled inside the drive (embedding_bag, 0Ch)

The table's rows are stored on the NVM namespace from table_lba; the drive reads only the
blocks that hold the rows a batch names and returns only the pooled rows. Training: the
backward pass accumulates the gradients of the touched rows on the host (sparse), and
apply_gradients(lr) writes the updated rows back to the drive.
"""

import numpy as np
import torch

from .device import Device
from .wire import MEDIA_MAX_STAGE

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_MODES = {"sum": 0, "mean": 1, "max": 2}


def _raw(t):
    """A tensor's elements as numpy of the same width (bf16 and f16 as uint16)."""
    t = t.detach().contiguous().cpu()
    return t.view(torch.int16).numpy() if t.element_size() == 2 else t.numpy()


class EmbeddingBag(torch.nn.Module):
    """torch.nn.EmbeddingBag with its table on the drive (device: an open nvme_csd.Device
    on the vendor front end). forward(input, offsets, per_sample_weights) equals
    torch.nn.functional.embedding_bag's (accumulation in f32, in index order). Unless
    force=True, the table is not written to a namespace that holds a partition table, a
    filesystem or volume signature or an object store (CsdError, errno EEXIST)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, *, device,
                 table_lba=0, dtype=torch.float32, force=False, _freeze=False):
        super().__init__()
        if not isinstance(device, Device):
            raise TypeError("device is an nvme_csd.Device")
        if mode not in _MODES or dtype not in _DTYPES:
            raise ValueError(f"mode is one of {sorted(_MODES)}, dtype one of {list(_DTYPES)}")
        if max_norm is not None:  # norm_type matters only with it, as in torch
            raise NotImplementedError("max_norm: renormalising the table's rows in place at each forward is not "
                                      "supported with the table on the drive")
        if scale_grad_by_freq:
            raise NotImplementedError("scale_grad_by_freq is not supported (the gradients are not scaled)")
        if padding_idx is not None:  # torch's rule: within the table, negative from its end
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("padding_idx must be within num_embeddings")
            padding_idx = padding_idx + num_embeddings if padding_idx < 0 else padding_idx
        self.padding_idx, self.sparse, self.max_norm, self.norm_type = padding_idx, bool(sparse), None, norm_type
        self.scale_grad_by_freq = False
        self.dev, self.num_embeddings, self.embedding_dim = device, int(num_embeddings), int(embedding_dim)
        self.table_lba, self.mode, self.include_last_offset, self.dtype = int(table_lba), mode, include_last_offset, dtype
        self.frozen = _freeze
        self.block = device.namespace["lba_size"]
        self.row_bytes = self.embedding_dim * torch.empty((), dtype=dtype).element_size()
        self.blocks = -(-self.num_embeddings * self.row_bytes // self.block)
        if self.table_lba + self.blocks > device.namespace["lba_count"]:
            raise ValueError("the table does not fit on the namespace from table_lba")
        if _weight is None:
            _weight = torch.empty(self.num_embeddings, self.embedding_dim).normal_()  # torch's initialisation
            if padding_idx is not None:
                _weight[padding_idx] = 0  # as torch: the padding row starts as zeros
        if not force:  # a real drive treated with care, as the store's format: docs/store.md
            _core_programs().refuse_raw_write(self.dev._dev, "EmbeddingBag's table", self.table_lba, self.blocks,
                                              "nvme_csd.nn.EmbeddingBag(..., force=True)")
        self._store(torch.as_tensor(_weight).to(dtype))
        self._grad = {}  # row -> accumulated f32 gradient (the touched rows only)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None, *, device,
                        table_lba=0, force=False):
        """A module whose table is embeddings (2-D, stored on the drive as they are)."""
        if embeddings.dim() != 2:
            raise ValueError("embeddings is 2-D")
        rows, dim = embeddings.shape
        return cls(rows, dim, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                   padding_idx, device=device, table_lba=table_lba, dtype=embeddings.dtype, force=force, _freeze=freeze)

    # ---------------------------------------------------------------- the table on the drive
    def _store(self, weight):
        if tuple(weight.shape) != (self.num_embeddings, self.embedding_dim):
            raise ValueError(f"the table is {self.num_embeddings} x {self.embedding_dim}")
        data = np.zeros(self.blocks * self.block, dtype=np.uint8)  # the last block's tail: zeros
        raw = _raw(weight).reshape(-1).view(np.uint8)
        data[:raw.size] = raw
        _core_programs().write_blocks(self.dev._dev, self.table_lba, data)

    @property
    def weight(self):
        """The whole table, read back from the drive."""
        data = np.empty(self.blocks * self.block, dtype=np.uint8)
        _core_programs().read_blocks_into(self.dev._dev, self.table_lba, data)
        return self._from_raw(data[:self.num_embeddings * self.row_bytes], (self.num_embeddings, self.embedding_dim))

    def _from_raw(self, raw, shape):
        width = np.uint16 if self.dtype != torch.float32 else np.float32
        t = torch.from_numpy(np.ascontiguousarray(raw).view(width).copy().reshape(shape))
        return t.view(self.dtype) if self.dtype != torch.float32 else t

    def rows(self, index):
        """The rows at index (1-D), gathered by the drive (gather, 0Bh)."""
        index = torch.as_tensor(index, dtype=torch.int64).reshape(-1)
        if index.numel() == 0:
            return torch.empty(0, self.embedding_dim, dtype=self.dtype)
        if int(index.min()) < 0 or int(index.max()) >= self.num_embeddings:
            raise IndexError("an index past the table")
        at = self.table_lba * self.block + index.numpy().astype(np.uint64) * self.row_bytes
        entries = np.zeros(index.numel(), dtype=[("lba", "<u8"), ("offset", "<u4"), ("length", "<u4")])
        entries["lba"], entries["offset"], entries["length"] = at // self.block, at % self.block, self.row_bytes
        e = self.dev.to_slm(entries.view(np.uint8))
        out = self.dev.alloc(index.numel() * self.row_bytes)
        try:
            _core_programs().gather(self.dev._dev, e.range(), index.numel(), out.range())
            return self._from_raw(out.numpy(), (index.numel(), self.embedding_dim))
        finally:
            e.free()
            out.free()

    # ---------------------------------------------------------------- forward, backward
    def _bags(self, input, offsets):
        input = torch.as_tensor(input)
        if input.dim() == 2:  # as torch: fixed-length bags, offsets made here
            if offsets is not None:
                raise ValueError("offsets is None for 2-D input")
            offsets = torch.arange(0, input.numel(), input.size(1), dtype=input.dtype)
            input = input.reshape(-1)
        elif input.dim() != 1 or offsets is None:
            raise ValueError("input is 1-D with offsets, or 2-D")
        offsets = torch.as_tensor(offsets)
        if input.dtype not in (torch.int64, torch.int32) or offsets.dtype != input.dtype:
            raise TypeError("input and offsets are both int64 or both int32")
        return input.contiguous(), offsets.contiguous()

    def _drop_padding(self, input, offsets, per_sample_weights):
        """The bags without the entries equal to padding_idx (as torch leaves them out: mean
        divides by the others, a bag of padding only is zeros): indices, offsets and weights
        filtered on the host before the Execute."""
        if self.padding_idx is None:
            return input, offsets, per_sample_weights
        keep = input != self.padding_idx
        if bool(keep.all()):
            return input, offsets, per_sample_weights
        before = torch.cat([torch.zeros(1, dtype=torch.int64), keep.cumsum(0)])  # kept entries before each
        o = offsets.to(torch.int64).clamp(0, input.numel())  # out-of-range offsets: refused as before below
        new_offsets = torch.where(offsets == o, before[o], offsets.to(torch.int64)).to(offsets.dtype)
        if per_sample_weights is not None:
            w = torch.as_tensor(per_sample_weights).reshape(-1)
            if w.numel() == input.numel():
                per_sample_weights = w[keep]
        return input[keep].contiguous(), new_offsets.contiguous(), per_sample_weights

    def _check(self, input, offsets, per_sample_weights):
        """torch's checks of a batch, made whatever the batch (an empty one included)."""
        if per_sample_weights is not None and self.mode != "sum":
            raise ValueError("per_sample_weights only with mode 'sum' (as torch)")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1-D tensor (as torch)")
        if self.include_last_offset and offsets.numel() < 1:
            raise ValueError("include_last_offset: offsets has at least one element (as torch)")
        if offsets.numel():
            if int(offsets[0]) != 0:
                raise ValueError("offsets[0] has to be 0 (as torch)")
            if int(offsets[-1]) > input.numel():
                raise ValueError("offsets[-1] can not be greater than input's length (as torch)")
            if offsets.numel() > 1 and bool((offsets[1:] < offsets[:-1]).any()):
                raise ValueError("offsets are non-decreasing")

    def _blocks(self, rows):
        """The distinct blocks of the table that the rows (int64 numpy) lie in, sorted."""
        start = self.table_lba * self.block + rows.astype(np.uint64) * np.uint64(self.row_bytes)
        first = start // np.uint64(self.block)
        last = (start + np.uint64(self.row_bytes - 1)) // np.uint64(self.block)
        span = int((last - first).max()) + 1 if rows.size else 0
        blocks = (first[:, None] + np.arange(span, dtype=np.uint64)[None, :])
        blocks = np.where(blocks <= last[:, None], blocks, first[:, None])  # a row's own blocks only
        return np.unique(blocks)

    def _pool(self, input, offsets, per_sample_weights):
        """The pooled bags, in as many Executes as the drive's per-Execute read limit needs
        (CSD_MEDIA_MAX_STAGE bytes of distinct blocks): whole bags per Execute, and a bag
        that alone exceeds it pooled on the host from its rows (read by the drive's gather),
        in the drive's order and precision."""
        num_bags = offsets.numel() - (1 if self.include_last_offset else 0)
        if num_bags <= 0:
            return torch.empty(0, self.embedding_dim, dtype=self.dtype)
        if input.numel() == 0:  # the drive takes no empty index range: every bag is empty
            return torch.zeros(num_bags, self.embedding_dim, dtype=self.dtype)
        limit = MEDIA_MAX_STAGE // self.block
        idx = input.numpy().astype(np.int64)
        if self._blocks(np.unique(idx)).size <= limit:
            return self._pool_drive(input, offsets, per_sample_weights, num_bags)
        o = offsets.numpy().astype(np.int64)
        bounds = list(o[:num_bags]) + [int(o[num_bags]) if self.include_last_offset else idx.size]
        w = None if per_sample_weights is None else torch.as_tensor(per_sample_weights).reshape(-1)
        parts, b = [], 0
        while b < num_bags:
            # the most whole bags from b whose rows' blocks fit one Execute (each bag's blocks
            # looked at once: the work grows with the batch, not with bags x blocks)
            e, seen = b, set()
            while e < num_bags:
                new = set(self._blocks(np.unique(idx[bounds[e]:bounds[e + 1]])).tolist()) - seen
                if len(seen) + len(new) > limit:
                    break
                seen |= new
                e += 1
            if e == b:  # this bag alone reads more than one Execute may: pooled on the host
                lo, hi = bounds[b], bounds[b + 1]
                parts.append(self._pool_host(input[lo:hi], None if w is None else w[lo:hi]))
                b += 1
                continue
            lo, hi = bounds[b], bounds[e]
            sub_offsets = torch.as_tensor(np.asarray(bounds[b:e + (1 if self.include_last_offset else 0)]) - lo,
                                          dtype=offsets.dtype)
            if hi == lo:
                parts.append(torch.zeros(e - b, self.embedding_dim, dtype=self.dtype))
            else:
                parts.append(self._pool_drive(input[lo:hi].contiguous(), sub_offsets.contiguous(),
                                              None if w is None else w[lo:hi], e - b))
            b = e
        return torch.cat(parts)

    def _pool_host(self, input, per_sample_weights):
        """One bag pooled on the host as the drive pools it (f32, index order, then the
        table's dtype), its rows read in pieces the drive's gather may read."""
        acc = torch.zeros(self.embedding_dim, dtype=torch.float32)
        if self.mode == "max":
            acc.fill_(float("-inf"))
        room = min(MEDIA_MAX_STAGE, self.dev.caps["slm_size"] // 4)  # rows and their entries in SLM
        step = max(1, room // (2 * max(self.row_bytes, self.block)))
        n = input.numel()
        for lo in range(0, n, step):
            rows = self.rows(input[lo:lo + step]).float()
            for k in range(rows.shape[0]):
                if self.mode == "max":  # as the drive: a NaN is taken, then kept (v > NaN is false)
                    acc = torch.where(torch.isnan(rows[k]) | (rows[k] > acc), rows[k], acc)
                elif per_sample_weights is not None:
                    wk = torch.as_tensor(per_sample_weights[lo + k]).to(self.dtype).float()
                    acc = acc + wk * rows[k]
                else:
                    acc = acc + rows[k]
        if self.mode == "mean":
            acc = acc / n
        return acc.to(self.dtype).reshape(1, -1)

    def _pool_drive(self, input, offsets, per_sample_weights, num_bags):
        """num_bags bags pooled by the drive in one Execute (embedding_bag, 0Ch)."""
        out_bytes = num_bags * self.row_bytes
        temps = [self.dev.to_slm(input.numpy()), self.dev.to_slm(offsets.numpy())]
        weights = (0, 0)
        if per_sample_weights is not None:
            w = torch.as_tensor(per_sample_weights).to(self.dtype).reshape(-1)
            if w.numel() != input.numel():
                raise ValueError("one per-sample weight per index")
            temps.append(self.dev.to_slm(_raw(w)))
            weights = temps[-1].range()
        out = self.dev.alloc(out_bytes)
        temps.append(out)
        try:
            _core_programs().embedding_bag(self.dev._dev, temps[0].range(), temps[1].range(), weights, out.range(),
                                           self.table_lba, self.num_embeddings, self.embedding_dim,
                                           _DTYPES[self.dtype], _MODES[self.mode], input.dtype == torch.int32,
                                           num_bags, self.include_last_offset)
            return self._from_raw(out.numpy(), (num_bags, self.embedding_dim))
        finally:
            for t in temps:
                t.free()

    def forward(self, input, offsets=None, per_sample_weights=None):
        input, offsets = self._bags(input, offsets)
        if per_sample_weights is not None and torch.as_tensor(per_sample_weights).numel() != input.numel():
            raise ValueError("one per-sample weight per index")  # before any command, longer or shorter
        self._check(input, offsets, per_sample_weights)  # torch's checks, an empty batch's too
        input, offsets, per_sample_weights = self._drop_padding(input, offsets, per_sample_weights)
        if self.training and not self.frozen and torch.is_grad_enabled():
            anchor = torch.zeros((), requires_grad=True)  # autograd reaches _Backward through it
            return _Backward.apply(self, input, offsets, per_sample_weights, anchor)
        return self._pool(input, offsets, per_sample_weights)

    def _accumulate(self, input, offsets, per_sample_weights, grad_out):
        """The gradients of the touched rows, as torch's dense backward gives them, added to _grad."""
        n = input.numel()
        num_bags = grad_out.shape[0]
        bounds = offsets.tolist()[:num_bags] + [offsets[num_bags].item() if self.include_last_offset else n]
        g = grad_out.float()
        rows = self.rows(input).float() if self.mode == "max" else None
        for b in range(num_bags):
            lo, hi = bounds[b], bounds[b + 1]
            if hi <= lo:
                continue
            if self.mode == "max":
                win = rows[lo:hi].argmax(dim=0)  # first maximum per element
                for i in range(lo, hi):
                    mask = (win == i - lo).float()
                    if mask.any():
                        self._add(int(input[i]), g[b] * mask)
                continue
            scale = 1.0 / (hi - lo) if self.mode == "mean" else 1.0
            for i in range(lo, hi):
                w = float(per_sample_weights[i]) if per_sample_weights is not None else 1.0
                self._add(int(input[i]), g[b] * (w * scale))

    def _add(self, row, grad):
        self._grad[row] = self._grad[row] + grad if row in self._grad else grad.clone()

    @property
    def grad(self):
        """The accumulated gradient of the table as a sparse COO tensor (touched rows only)."""
        rows = sorted(self._grad)
        values = torch.stack([self._grad[r] for r in rows]) if rows else torch.empty(0, self.embedding_dim)
        return torch.sparse_coo_tensor(torch.tensor([rows], dtype=torch.int64), values,
                                       (self.num_embeddings, self.embedding_dim), check_invariants=True)

    def zero_grad(self, set_to_none=True):
        self._grad = {}
        super().zero_grad(set_to_none)

    def apply_gradients(self, lr):
        """SGD on the touched rows: row -= lr * grad (in f32, stored in the table's dtype),
        written back to the drive block by block; the gradients are then cleared."""
        if not self._grad:
            return
        touched = sorted(self._grad)
        new = self.rows(touched).float() - lr * torch.stack([self._grad[r] for r in touched])
        raw = _raw(new.to(self.dtype)).reshape(len(touched), -1).view(np.uint8)
        # the blocks that hold them, read, patched and written back run by run
        base = self.table_lba * self.block
        spans = [(base + r * self.row_bytes, k) for k, r in enumerate(touched)]
        i = 0
        while i < len(spans):
            run_lo = spans[i][0] // self.block
            j = i
            run_hi = (spans[i][0] + self.row_bytes - 1) // self.block
            while j + 1 < len(spans) and spans[j + 1][0] // self.block <= run_hi + 1:
                j += 1
                run_hi = max(run_hi, (spans[j][0] + self.row_bytes - 1) // self.block)
            data = np.empty((run_hi - run_lo + 1) * self.block, dtype=np.uint8)
            _core_programs().read_blocks_into(self.dev._dev, run_lo, data)
            for at, k in spans[i:j + 1]:
                o = at - run_lo * self.block
                data[o:o + self.row_bytes] = raw[k]
            _core_programs().write_blocks(self.dev._dev, run_lo, data)
            i = j + 1
        self._grad = {}


class _Backward(torch.autograd.Function):
    """forward: the drive's pooling; backward: the touched rows' gradients into the module."""

    @staticmethod
    def forward(ctx, module, input, offsets, per_sample_weights, anchor):
        ctx.module, ctx.input, ctx.offsets, ctx.psw = module, input, offsets, per_sample_weights
        return module._pool(input, offsets, per_sample_weights)

    @staticmethod
    def backward(ctx, grad_out):
        ctx.module._accumulate(ctx.input, ctx.offsets, ctx.psw, grad_out)
        return None, None, None, None, torch.zeros(())


def _core_programs():
    from . import _core
    return _core.programs
