# SPDX-License-Identifier: MIT
"""Land data from the drive in GPU memory as torch CUDA tensors: SLM arrays and stored
objects go through libcsd's pinned-buffer pipeline (or registered SLM) straight into a
tensor's memory, with no extra copy, objects checked against their CRC-32C; `last_report`
says which path ran, how many bytes and how long."""

import numpy as np

from . import _core
from .arrays import numpy_dtype
from .errors import CsdError, InvalidParameters

last_report = None  # (path, bytes, seconds) of the latest transfer


def available():
    """Whether this build has the GPU part and a CUDA device is present."""
    return bool(_core.has_gpu_part) and _core.gpu_available()


def _require():
    if not _core.has_gpu_part:
        raise CsdError("this nvme_csd was built without CUDA (no /usr/local/cuda at build time)")
    if not _core.gpu_available():
        raise CsdError("no CUDA device")
    import torch
    return torch


def _torch_dtype(torch, dtype):
    if dtype.fields is not None:
        raise InvalidParameters(f"a structured dtype ({dtype}) has no torch equivalent: get it with device='cpu'")
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def configure(dev, *, chunk_mib=8, buffers=4, readers=12):
    """Sets dev's pipeline into GPU memory: bytes per step, pinned buffers in flight, and
    threads filling a buffer in parallel (the defaults shown: libcsd's, picked from the sweep in
    docs/perf.md)."""
    _require()
    _core.gpu_configure(dev._dev, int(chunk_mib) << 20, int(buffers), int(readers))


def slm_to_cuda(dev, slm_array, *, direct=True, device="cuda"):
    """An SlmArray's contents as a new torch CUDA tensor (same dtype and shape)."""
    global last_report
    torch = _require()
    out = torch.empty(slm_array.shape, dtype=_torch_dtype(torch, slm_array.dtype), device=device)
    stream = torch.cuda.current_stream(out.device).cuda_stream
    last_report = _core.gpu_slm_to_gpu(dev._dev, slm_array.offset, slm_array.nbytes, out.data_ptr(), stream, direct)
    return out


def object_to_cuda(dev, name, *, device="cuda"):
    """A stored tensor (or blob, as uint8) as a new torch CUDA tensor, checked against its
    CRC-32C (landed again if another writer replaced it meanwhile)."""
    torch = _require()
    from .store import land

    def alloc(info):
        dtype = numpy_dtype(info["dtype"], f"store[{name!r}]") if info["dtype"] else np.dtype(np.uint8)
        shape = info["shape"] if info["dtype"] else [info["bytes"]]
        return torch.empty(shape, dtype=_torch_dtype(torch, dtype), device=device)

    def into(out):
        global last_report
        stream = torch.cuda.current_stream(out.device).cuda_stream
        path, nbytes, seconds, generation = _core.gpu_object_to_gpu(dev._dev, name, out.data_ptr(),
                                                                    out.numel() * out.element_size(), stream)
        last_report = (path, nbytes, seconds)
        return generation

    return land(dev.store, name, alloc, into)[1]


def to_device(array, device):
    """A host array on a torch device (the fallback for data already in host memory)."""
    import torch
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


# ---------------------------------------------------------------------------------------
# A model's layers streamed from the drive into GPU memory (csd::gpu::LayerLoader)

# The layer index in the tensor names checkpoints use: "model.layers.3.mlp.up_proj.weight"
# (Llama, Mistral, Qwen), "transformer.h.3.attn..." (GPT-2), "encoder.layer.3..." (BERT),
# "blocks.3..." (many others).
LAYER_PATTERN = r"(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d+)\."

# Where import_safetensors records the dtypes numpy has no name for (bfloat16, float8): their
# tensors are stored as unsigned integers of the same width, and this JSON blob maps each such
# name to its torch dtype.
TORCH_DTYPES = "__torch_dtypes__"


def group_layers(names, pattern=LAYER_PATTERN):
    """(layers, others): the tensor names grouped by the layer index that pattern's first group
    finds in them, layer 0 first (each layer's names in the order given), and the names with
    none. InvalidArgument for duplicates, no layer at all, or indexes that are not 0..N-1."""
    import re
    from .errors import InvalidArgument, InvalidArgumentType
    if isinstance(names, (str, bytes)):
        raise InvalidArgumentType("group_layers: give a list of tensor names, not one string")
    rx = re.compile(pattern)
    if rx.groups < 1:
        raise InvalidArgument(f"group_layers: pattern {pattern!r} has no group to capture the layer index")
    seen, by_index, others = set(), {}, []
    for n in names:
        if not isinstance(n, str):
            raise InvalidArgumentType(f"group_layers: tensor names are strings, not {type(n).__name__}")
        if n in seen:
            raise InvalidArgument(f"group_layers: tensor {n!r} named twice")
        seen.add(n)
        m = rx.search(n)
        if m:
            by_index.setdefault(int(m.group(1)), []).append(n)
        else:
            others.append(n)
    if not by_index:
        raise InvalidArgument(f"group_layers: no name has a layer index ({pattern!r}); "
                              f"for example {sorted(seen)[:3]}")
    missing = sorted(set(range(max(by_index) + 1)) - set(by_index))
    if missing:
        raise InvalidArgument(f"group_layers: layers 0..{max(by_index)} expected, but none has tensors "
                              f"for layer(s) {missing[:8]}")
    return [by_index[i] for i in range(len(by_index))], others


def _positive_int(value, what):
    """value if it is an int of at least 1 (InvalidArgumentType / InvalidArgument otherwise)."""
    from .errors import InvalidArgument, InvalidArgumentType
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{what} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidArgument(f"{what} must be at least 1, not {value}")
    return value


def plan_budget(layer_bytes, *, budget_bytes=None, budget_layers=None, ring=2, resident=None):
    """How a GPU budget is spent on layers of layer_bytes each: a dict of `ring` (buffers the
    streamed layers go through, each as large as the largest of them), `resident` (indexes of
    the layers landed once, to stay: by default the last ones), `streamed` (the others) and
    `bytes` (GPU memory taken). The budget is budget_bytes (ring buffers and resident layers
    together) or budget_layers (layers held at once); at least one layer must fit."""
    from .errors import InvalidArgument, InvalidArgumentType
    sizes = [int(b) for b in layer_bytes]
    n = len(sizes)
    if not n:
        raise InvalidArgument("plan_budget: no layers")
    if (budget_bytes is None) == (budget_layers is None):
        raise InvalidArgument("give one budget: budget_bytes or budget_layers")
    ring = _positive_int(ring, "ring")
    if resident is not None:
        if isinstance(resident, (str, bytes)) or not hasattr(resident, "__iter__"):
            raise InvalidArgumentType("resident: a list of layer indexes")
        resident = list(resident)
        bad = [r for r in resident if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < n]
        if bad:
            raise InvalidArgument(f"resident layers {bad} are not layer indexes 0..{n - 1}")
        if len(set(resident)) != len(resident):
            raise InvalidArgument(f"a resident layer is named twice: {resident}")

    def spent(res, ring):
        """The plan with resident layers res and a ring of `ring` buffers."""
        streamed = [i for i in range(n) if i not in set(res)]
        ring = ring if streamed else 0
        taken = sum(sizes[i] for i in res) + ring * max((sizes[i] for i in streamed), default=0)
        return {"ring": ring, "resident": sorted(res), "streamed": streamed, "bytes": taken}

    if budget_layers is not None:
        held = _positive_int(budget_layers, "budget_layers")
        if resident is None:
            if held >= n:
                return spent(list(range(n)), 0)
            ring = min(ring, held)
            return spent(list(range(n - (held - ring), n)), ring)
        if len(resident) < n and len(resident) + min(ring, held) > held:
            raise InvalidArgument(f"{len(resident)} resident layers and a ring of {min(ring, held)} exceed the "
                                  f"budget of {held} layers")
        if len(resident) == n and held < n:
            raise InvalidArgument(f"{n} resident layers exceed the budget of {held} layers")
        return spent(resident, min(ring, held))
    budget = _positive_int(budget_bytes, "budget_bytes")
    if resident is None:
        if budget >= sum(sizes):
            return spent(list(range(n)), 0)
        if budget < max(sizes):
            raise InvalidArgument(f"a budget of {budget} bytes holds no layer: the largest takes {max(sizes)}")
        # the ring first (its buffers hold the largest layer), then the last layers while they fit
        best = spent([], 1)
        for r in range(1, ring + 1):
            for k in range(n):
                plan = spent(list(range(n - k, n)), r)
                if plan["bytes"] > budget:
                    break
                if plan["ring"] == r:
                    best = plan
        return best
    plan = spent(resident, ring)
    if plan["bytes"] > budget:
        raise InvalidArgument(f"resident layers {plan['resident']} and a ring of {plan['ring']} take "
                              f"{plan['bytes']} bytes, more than the budget of {budget}")
    return plan


def plan_layout(tensor_bytes, align=256):
    """Where each of a layer's tensors (their sizes in bytes) starts in the layer's buffer, each
    at a multiple of align, and the buffer's size: (offsets, bytes). csd::gpu::plan_layer's."""
    from .errors import InvalidArgument
    if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1):
        raise InvalidArgument(f"align {align!r} is not a power of two")
    offsets, end = [], 0
    for b in tensor_bytes:
        end = (end + align - 1) // align * align
        offsets.append(end)
        end += int(b)
    return offsets, end


def import_safetensors(dev, paths, *, prefix="", progress=None):
    """Stores every tensor of safetensors files (a path, a list of paths, or a folder of
    *.safetensors) in dev's object store under prefix + its name, with its dtype and shape;
    dtypes numpy has no name for (bfloat16, float8) are stored as same-width unsigned integers
    and recorded in the TORCH_DTYPES object. progress(done, total) counts tensors. Returns the
    names stored."""
    import glob
    import json
    import os
    from safetensors import safe_open
    from .errors import InvalidArgument
    if isinstance(paths, (str, os.PathLike)):
        p = os.fspath(paths)
        paths = sorted(glob.glob(os.path.join(p, "*.safetensors"))) if os.path.isdir(p) else [p]
        if not paths:
            raise InvalidArgument(f"import_safetensors: no *.safetensors file in {p}")
    try:
        import torch
    except ImportError:
        torch = None
    keys = []
    for p in paths:
        with safe_open(os.fspath(p), framework="pt" if torch else "numpy") as f:
            keys += [(p, k) for k in f.keys()]
    names = [prefix + k for _, k in keys]
    if len(set(names)) != len(names):
        raise InvalidArgument("import_safetensors: a tensor name appears in more than one file")
    odd = {}
    done = 0
    for p in paths:
        with safe_open(os.fspath(p), framework="pt" if torch else "numpy") as f:
            for k in f.keys():
                t = f.get_tensor(k)
                if torch is not None:
                    t = t.contiguous()
                    try:
                        a = t.numpy()
                    except TypeError:  # no numpy dtype: its bits, and the dtype on the side
                        width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
                        a = t.view(width).numpy()
                        a = a.view(np.dtype(f"u{t.element_size()}"))
                        odd[prefix + k] = str(t.dtype).replace("torch.", "")
                else:
                    a = t
                dev.store.put(prefix + k, a)
                done += 1
                if progress:
                    progress(done, len(keys))
    if odd:
        recorded = _torch_dtypes(dev)
        recorded.update(odd)
        dev.store.put(TORCH_DTYPES, json.dumps(recorded, sort_keys=True).encode())
    return names


def _torch_dtypes(dev):
    """The TORCH_DTYPES record of dev's store ({} when there is none)."""
    import json
    raw = dev.store.get(TORCH_DTYPES)
    return json.loads(raw) if raw else {}


class LayerLoader:
    """A model's layers streamed from dev's object store into GPU memory ahead of the layer
    that computes (csd::gpu::LayerLoader, docs/gpu.md): within a GPU budget (budget_bytes or
    budget_layers) some layers stay resident and the others go through a ring of `ring` GPU
    buffers, each landed by the path store.get(device="cuda") takes (the pinned pipeline, or
    the simulated peer-to-peer drive when direct), CRC-32C checked on the GPU, on a thread of
    the loader's own; `lanes` landings side by side on each layer (default 1: on the pinned
    pipeline one lane lands a layer's tensors as one stream of chunks, faster than several lanes
    of a pipeline a tensor, docs/perf.md; lanes beyond the first take the pinned pipeline). layers: tensor names (grouped by group_layers), a list of each layer's
    names, or a name prefix (every stored name that starts with it). progress(done, total) is
    called at each layer acquired (layers of the current pass). The layers are visited in
    order, pass after pass; acquire() out of order restarts the stream there."""

    def __init__(self, dev, layers, *, budget_bytes=None, budget_layers=None, ring=2, resident=None,
                 device="cuda", direct=True, progress=None, align=256, lanes=None):
        import torch
        from .errors import InvalidArgument, InvalidArgumentType
        if isinstance(layers, str):
            prefix = layers
            layers = [n for n in dev.store if n.startswith(prefix) and n != TORCH_DTYPES]
            if not layers:
                raise InvalidArgument(f"no stored tensor's name starts with {prefix!r}")
        if not isinstance(layers, (list, tuple)) or not layers:
            raise InvalidArgumentType("layers: tensor names, a list of each layer's names, or a name prefix")
        if all(isinstance(n, str) for n in layers):
            layers = group_layers(list(layers))[0]
        elif not all(isinstance(g, (list, tuple)) and g and all(isinstance(n, str) for n in g) for g in layers):
            raise InvalidArgumentType("layers: tensor names, a list of each layer's names (each a non-empty "
                                      "list of strings), or a name prefix")
        if progress is not None and not callable(progress):
            raise InvalidArgumentType("progress must be a callable(done, total) or None")
        self.lanes = _positive_int(lanes, "lanes") if lanes is not None else 1
        self._torch, self.device, self._progress = torch, torch.device(device), progress
        if self.device.type != "cuda":
            raise InvalidArgument(f"device {device!r}: the layer loader lands in CUDA memory")
        self.names = [list(g) for g in layers]
        odd = _torch_dtypes(dev)
        self._meta = {}  # name -> (torch dtype, shape)
        self._plans = []  # per layer: ([(name, offset, bytes)], layer bytes)
        for g in self.names:
            infos = [dev.store.stat(n) for n in g]  # NotFound for a name the store lacks
            for n, info in zip(g, infos):
                if n in odd:
                    dtype = getattr(torch, odd[n])
                elif info["dtype"]:
                    dtype = _torch_dtype(torch, numpy_dtype(info["dtype"], f"store[{n!r}]"))
                else:
                    dtype, info["shape"] = torch.uint8, [info["bytes"]]
                self._meta[n] = (dtype, tuple(info["shape"]))
            offsets, total = plan_layout([i["bytes"] for i in infos], align)
            self._plans.append(([(n, o, i["bytes"]) for n, o, i in zip(g, offsets, infos)], total))
        self.layer_bytes = [b for _, b in self._plans]
        spent = plan_budget(self.layer_bytes, budget_bytes=budget_bytes, budget_layers=budget_layers,
                            ring=ring, resident=resident)
        self.ring, self.resident, self.streamed = spent["ring"], spent["resident"], spent["streamed"]
        self.budget_bytes = spent["bytes"]
        self._loader = None
        _require()
        ring_bytes = max((self.layer_bytes[i] for i in self.streamed), default=0)
        sizes = [self.layer_bytes[i] for i in self.resident] + [ring_bytes] * self.ring
        self._buffers = [torch.empty(max(b, 1), dtype=torch.uint8, device=self.device) for b in sizes]
        self._by_ptr = {b.data_ptr(): b for b in self._buffers}
        self._views = {}
        self._held = []
        self._done = 0
        self._hooks = []
        with torch.cuda.device(self.device):
            self._loader = _core.GpuLayerLoader(dev._dev, [t for t, _ in self._plans], self.layer_bytes,
                                                self.resident, [b.data_ptr() for b in self._buffers], sizes, direct,
                                                self.lanes)

    def __len__(self):
        """The number of layers."""
        return len(self.names)

    def __enter__(self):
        """The loader itself; closed on leaving."""
        return self

    def __exit__(self, *exc):
        """Closes the loader."""
        self.close()

    def _stream(self):
        """The current torch CUDA stream of the loader's device."""
        return self._torch.cuda.current_stream(self.device)

    def acquire(self, layer):
        """Layer `layer`'s tensors, {name: torch CUDA tensor}, once landed and checked (waits for
        it); views of the loader's buffer, valid until release(layer)."""
        if self._loader is None:
            raise CsdError("the layer loader is closed")
        ptr = self._loader.acquire(layer, self._stream().cuda_stream)
        self._held.append(layer)
        key = (ptr, layer)
        views = self._views.get(key)
        if views is None:
            buf = self._by_ptr[ptr]
            views = {}
            for name, offset, nbytes in self._plans[layer][0]:
                dtype, shape = self._meta[name]
                views[name] = buf[offset:offset + nbytes].view(dtype).view(shape)
            self._views[key] = views
        self._done = layer + 1
        if self._progress:
            self._progress(self._done, len(self.names))
        return views

    def release(self, layer):
        """Gives layer `layer` back: its buffer is landed again once the work queued on the
        current stream so far is done (its tensors must not be used after)."""
        if self._loader is None:
            raise CsdError("the layer loader is closed")
        self._loader.release(layer, self._stream().cuda_stream)
        self._held.remove(layer)

    def layer(self, layer):
        """A context manager: acquire(layer) on entry, release(layer) on leaving."""
        import contextlib

        @contextlib.contextmanager
        def held():
            """Holds the layer while the with block runs."""
            views = self.acquire(layer)
            try:
                yield views
            finally:
                self.release(layer)
        return held()

    def attach(self, modules, pattern=LAYER_PATTERN):
        """Streams the parameters of modules[i] (a model's layer modules, e.g. a Hugging Face
        model's model.layers) from layer i: before each layer's forward its parameters become
        the landed tensors, after it they are given back (shape kept, on the meta device). A
        tensor's name within its module is what follows the layer index (pattern). The layers
        must run one at a time; a forward that failed half way gives back the layer it held at
        the next one. Returns self (detach() removes the hooks)."""
        import re
        from .errors import InvalidArgument
        modules = list(modules)
        if len(modules) != len(self.names):
            raise InvalidArgument(f"attach: {len(modules)} modules for {len(self.names)} layers")
        rx = re.compile(pattern)
        self.detach()
        for i, (mod, names) in enumerate(zip(modules, self.names)):
            targets = []
            for n in names:
                m = rx.search(n)
                rel = n[m.end():] if m else n
                owner_path, _, attr = rel.rpartition(".")
                try:
                    owner = mod.get_submodule(owner_path) if owner_path else mod
                except AttributeError:
                    owner = None
                if owner is None or (attr not in owner._parameters and attr not in owner._buffers):
                    raise InvalidArgument(f"attach: layer {i}'s module has no parameter or buffer {rel!r} "
                                          f"(for tensor {n!r})")
                targets.append((owner, attr, n, attr in owner._parameters))
            self._give_back(targets)
            self._hooks.append(mod.register_forward_pre_hook(self._pre_hook(i, targets)))
            self._hooks.append(mod.register_forward_hook(self._post_hook(i, targets)))
        return self

    def _give_back(self, targets):
        """Puts empty meta tensors of the same shape in place of a layer's landed tensors."""
        torch = self._torch
        for owner, attr, name, is_param in targets:
            dtype, shape = self._meta[name]
            empty = torch.empty(shape, dtype=dtype, device="meta")
            if is_param:
                owner._parameters[attr] = torch.nn.Parameter(empty, requires_grad=False)
            else:
                owner._buffers[attr] = empty

    def _pre_hook(self, i, targets):
        """The forward pre-hook of layer i: gives back stale layers, acquires i, binds its tensors."""
        def hook(module, args):
            """Runs before the layer's forward."""
            for stale in list(self._held):  # a forward that stopped half way
                self.release(stale)
            views = self.acquire(i)
            for owner, attr, name, is_param in targets:
                if is_param:
                    owner._parameters[attr] = self._torch.nn.Parameter(views[name], requires_grad=False)
                else:
                    owner._buffers[attr] = views[name]
        return hook

    def _post_hook(self, i, targets):
        """The forward hook of layer i: releases it and gives its tensors back."""
        def hook(module, args, output):
            """Runs after the layer's forward."""
            self.release(i)
            self._give_back(targets)
        return hook

    def detach(self):
        """Removes the hooks attach() added."""
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def timings(self):
        """Every landing so far, oldest first: dicts of layer, pass, buffer, resident, bytes,
        start (seconds from the loader's start), wait (for the GPU to be done with the buffer),
        land (the landing, checked), stall (how long acquire() waited for it; -1: not yet
        acquired) and path."""
        return self._loader.timings()

    def clear_timings(self):
        """Forgets the timings so far (a warm-up's)."""
        self._loader.clear_timings()

    def summary(self):
        """Totals of the streamed landings so far: layers, bytes, seconds landing, GB/s while
        landing, seconds the consumer stalled, and restarts."""
        t = [x for x in self.timings() if not x["resident"]]
        land = sum(x["land"] for x in t)
        nbytes = sum(x["bytes"] for x in t)
        return {"layers": len(t), "bytes": nbytes, "land_s": land, "gbps": nbytes / land / 1e9 if land else 0.0,
                "stall_s": sum(x["stall"] for x in t if x["stall"] > 0), "restarts": self._loader.restarts,
                "paths": sorted({x["path"] for x in t})}

    def close(self):
        """Stops the loader (after the landing under way) and frees its GPU buffers."""
        if self._loader is not None:
            self.detach()
            self._loader.close()
            self._loader = None
            self._views.clear()
            self._buffers.clear()
            self._by_ptr.clear()

    def __del__(self):
        """Closes the loader if it was not."""
        if getattr(self, "_loader", None) is not None:
            self.close()
