#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Streaming inference as a user runs it (issue 44, docs/perf.md): a Hugging Face transformers
Llama with random weights (no download: the config is chosen here), saved as safetensors
shards, whose decoder layers exceed the GPU budget given (--budget-layers of --layers), run
for a prefill of --prompt tokens and --decode greedy decode steps, by each way of getting the
weights onto the GPU:

  resident          every weight on the GPU (the reference: every other row's tokens and
                    logits are compared with its)
  layer loader      nvme_csd.gpu.LayerLoader: the checkpoint imported into the drive's object
                    store; the budget's last layers resident, the others streamed through a
                    ring of GPU buffers ahead of the layer that computes, CRC-32C checked;
                    embeddings, final norm and head landed once by store.get(device="cuda").
                    "p2p": the in-process device as a simulated peer-to-peer drive (its
                    namespace registered with CUDA); "pipeline": the pinned pipeline, the path
                    of any drive; "<preset>": the pipeline with the drive's timing model on
  safe_open+.cuda() the budget's last layers resident; each other layer read by
                    safetensors.safe_open(...).get_tensor(name).cuda() before its forward
  mmap+.cuda()      the same from np.memmap of the safetensors file, torch.from_numpy(...).cuda()
  accelerate map    accelerate.dispatch_model with the same budget: the device_map puts the
                    streamed layers on "cpu" (what from_pretrained(device_map=..., max_memory=...)
                    does)
  cpu_offload       accelerate.cpu_offload: every weight kept on the CPU, moved per module
  disk_offload      accelerate.disk_offload: every weight in memory-mapped files on disk

PCIe bound: the weight bytes a row streams per forward step over the pinned ceiling measured in
the same run (cudaMemcpy of 1 GiB from pinned memory): steps/s, so decode tok/s (batch 1) and
prefill tok/s (--prompt tokens a step); a row with a timing model: over the drive's media read
rate where that is lower. target = min(bound, resident). Resident and the loader's untimed rows:
the fastest of 3 and 2 runs; the others one run. Page cache warm for
every source (the safetensors files, the drive's namespace file, the offload folder).
Prints a Markdown table, writes results.json and (with matplotlib) a plot to --out.
Usage: stream_llama.py [--layers 32 --hidden 4096 --intermediate 11008 --prompt 2048 --decode 8
       --budget-layers 8 --ring 2 --models gen4x4-8core,gen5x4-accel --work DIR --out DIR]
"""
import argparse
import gc
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

DEV = os.environ.get("CSD_BENCH_DEVICE", "cuda")  # "cpu": a smoke run of the baselines without a GPU
DTYPE = torch.float16
# np.memmap of a checkpoint opened read-only, as users map it: torch warns that it is not writable
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


# The media read rate of the timing model's presets (docs/timing-model.md, Presets): a drive row's
# bound is its streamed bytes over the lower of this and the pinned ceiling.
DRIVE_READ_GBPS = {"gen3x4-4core": 3.2, "gen4x4-8core": 6.8, "gen5x4-accel": 13.0, "ll-nand-gen5": 13.0}


def sync():
    """Waits for the GPU (nothing on the CPU)."""
    if DEV == "cuda":
        torch.cuda.synchronize()


def gib(n):
    """Bytes in GiB."""
    return n / (1 << 30)


def make_config(a):
    """The Llama configuration measured (Llama-2-7B's shape at 32 / 4096 / 11008)."""
    from transformers import LlamaConfig
    return LlamaConfig(hidden_size=a.hidden, intermediate_size=a.intermediate, num_hidden_layers=a.layers,
                       num_attention_heads=a.heads, num_key_value_heads=a.heads, vocab_size=a.vocab,
                       max_position_embeddings=max(4096, a.prompt + a.decode + 16), tie_word_embeddings=False,
                       attn_implementation="sdpa")


def empty_model(config):
    """The model with its parameters on the meta device (no memory) and its buffers on DEV."""
    from accelerate import init_empty_weights
    from transformers import LlamaForCausalLM
    old = torch.get_default_dtype()
    torch.set_default_dtype(DTYPE)
    try:
        with init_empty_weights():
            m = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(old)
    for mod in m.modules():
        for k, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[k] = b.to(DEV)
    return m.eval()


def set_tensor(model, name, t):
    """Makes t the model's parameter `name` (no copy)."""
    owner, _, attr = name.rpartition(".")
    mod = model.get_submodule(owner)
    mod._parameters[attr] = torch.nn.Parameter(t, requires_grad=False)


def layer_names(names):
    """{layer index: [names]} and the names outside the decoder layers."""
    from nvme_csd.gpu import group_layers
    return group_layers(names)


@torch.no_grad()
def run(model, ids, steps):
    """Prefill of ids, then `steps` greedy decode steps: (prefill s, decode s, tokens, prefill logits)."""
    sync()
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    logits = out.logits[:, -1].float()
    tok = logits.argmax(-1, keepdim=True)
    sync()
    t1 = time.perf_counter()
    past, toks = out.past_key_values, [int(tok)]
    for _ in range(steps):
        out = model(input_ids=tok, past_key_values=past, use_cache=True, logits_to_keep=1)
        past = out.past_key_values
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        toks.append(int(tok))  # a host sync per token, as a generation loop has
    sync()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, toks, logits.cpu()


def measure(name, model, ids, steps, streamed_bytes, warm=True, extra=None, repeat=1):
    """One row: a short warm-up prefill, then the timed run (the fastest of `repeat`)."""
    if warm:
        run(model, ids[:, :16], 0)
    pre, dec, toks, logits = min((run(model, ids, steps) for _ in range(repeat)), key=lambda r: r[0] + r[1])
    row = {"method": name, "prefill_s": pre, "decode_s": dec, "prefill_tps": ids.shape[1] / pre,
           "decode_tps": steps / dec if steps else 0.0, "tokens": toks, "streamed_bytes": streamed_bytes,
           "gpu_weight_bytes": extra.pop("gpu_weight_bytes", None) if extra else None}
    if extra:
        row.update(extra)
    print(f"# {name}: prefill {row['prefill_tps']:.1f} tok/s, decode {row['decode_tps']:.3f} tok/s "
          f"({gib(streamed_bytes):.2f} GiB streamed per step)", flush=True)
    return row, logits


def pinned_ceiling():
    """GB/s of cudaMemcpy from pinned host memory into GPU memory, 1 GiB, median of 5."""
    if DEV != "cuda":
        return 0.0
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8).pin_memory()
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(6):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return n / statistics.median(times[1:]) / 1e9


def save_checkpoint(model, folder, per_shard):
    """The model's weights as safetensors shards of per_shard layers each (and one for the rest),
    the way checkpoints come: {name: file}."""
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    sd = model.state_dict()
    layers, others = layer_names(list(sd))
    shards = [others] + [sum(layers[i:i + per_shard], []) for i in range(0, len(layers), per_shard)]
    where = {}
    for k, names in enumerate(shards):
        path = os.path.join(folder, f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors")
        save_file({n: sd[n].detach().to("cpu").contiguous() for n in names}, path)
        where.update({n: path for n in names})
    return where


def read_header(path):
    """A safetensors file's header: {name: (dtype, shape, start, end)} with absolute offsets."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], 8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
            for k, v in h.items()}


class HookStreamer:
    """What a user writes without the project: the budget's last layers moved to the GPU once,
    every other layer fetched before its forward (fetch(name) -> a CPU tensor, then .cuda())
    and dropped after it."""

    def __init__(self, model, layers, resident, fetch):
        """Hooks model's layers: layers[i] names layer i's tensors, fetch(name) reads one."""
        self.handles = []
        mods = model.model.layers
        for i, names in enumerate(layers):
            rel = [(n, n.split(f"layers.{i}.", 1)[1]) for n in names]
            if i in resident:
                for n, r in rel:
                    set_tensor(mods[i], r, fetch(n).to(DEV))
                continue

            def pre(mod, args, rel=rel):
                """Reads the layer's tensors onto the GPU before its forward."""
                for n, r in rel:
                    set_tensor(mod, r, fetch(n).to(DEV))

            def post(mod, args, out, rel=rel):
                """Drops them after it."""
                for n, r in rel:
                    t = mod.get_parameter(r)
                    set_tensor(mod, r, torch.empty(t.shape, dtype=t.dtype, device="meta"))

            self.handles += [mods[i].register_forward_pre_hook(pre), mods[i].register_forward_hook(post)]


def main():
    """Builds the model, saves and imports it, measures every row, prints the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=11008)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--prompt", type=int, default=2048)
    p.add_argument("--decode", type=int, default=8, help="decode steps timed (each one token)")
    p.add_argument("--slow-decode", type=int, default=None, help="decode steps for the rows below 2 tok/s")
    p.add_argument("--budget-layers", type=int, default=8)
    p.add_argument("--ring", type=int, default=2)
    p.add_argument("--models", default="gen4x4-8core,gen5x4-accel", help="timing-model presets ('' for none)")
    p.add_argument("--skip", default="", help="comma-separated methods to leave out")
    p.add_argument("--work", default=None)
    p.add_argument("--out", default=os.environ.get("OUT") or "build/gpu-out")
    a = p.parse_args()
    slow_decode = a.decode if a.slow_decode is None else a.slow_decode
    skip = set(filter(None, a.skip.split(",")))
    os.makedirs(a.out, exist_ok=True)
    work = a.work or tempfile.mkdtemp(prefix="csd-llama-")
    os.makedirs(work, exist_ok=True)
    import accelerate
    import transformers
    import nvme_csd
    from nvme_csd import gpu

    config = make_config(a)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    old = torch.get_default_dtype()
    torch.set_default_dtype(DTYPE)
    with torch.device(DEV):
        model = transformers.LlamaForCausalLM(config).eval()
    torch.set_default_dtype(old)
    total = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    print(f"# Llama {a.layers} layers, hidden {a.hidden}, intermediate {a.intermediate}, vocab {a.vocab}, fp16: "
          f"{gib(total):.2f} GiB of weights, made in {time.perf_counter() - t0:.1f} s", flush=True)
    ckpt = os.path.join(work, "checkpoint")
    t0 = time.perf_counter()
    where = save_checkpoint(model, ckpt, per_shard=4)
    print(f"# saved as {len(set(where.values()))} safetensors shards in {time.perf_counter() - t0:.1f} s", flush=True)
    names = list(model.state_dict())
    layers, others = layer_names(names)
    layer_bytes = [sum(model.state_dict()[n].numel() * 2 for n in g) for g in layers]
    other_bytes = sum(model.state_dict()[n].numel() * 2 for n in others)
    plan = gpu.plan_budget(layer_bytes, budget_layers=a.budget_layers, ring=a.ring)
    resident = set(plan["resident"])
    streamed_layers = sum(layer_bytes[i] for i in plan["streamed"])
    ceiling = pinned_ceiling()
    print(f"# budget: {a.budget_layers} of {a.layers} layers ({plan['ring']} ring buffers + "
          f"{len(resident)} resident: {gib(plan['bytes']):.2f} GiB) + embeddings, norm and head "
          f"({gib(other_bytes):.2f} GiB); streamed per step: {gib(streamed_layers):.2f} GiB; "
          f"pinned ceiling {ceiling:.1f} GB/s", flush=True)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, a.vocab, (1, a.prompt), generator=g).to(DEV)

    del model
    gc.collect()
    if DEV == "cuda":
        torch.cuda.empty_cache()
    rows = []
    # the reference: every weight on the GPU, the model made as the other rows make theirs (its
    # rotary buffers computed on the CPU, the weights read from the checkpoint); the first run,
    # untimed, warms every kernel the rows use (the same shapes for all)
    from safetensors import safe_open
    model = empty_model(config)
    for n in names:
        with safe_open(where[n], framework="pt") as f:
            set_tensor(model, n, f.get_tensor(n).to(DEV))
    run(model, ids, 2)
    ref_row, ref_logits = measure("resident", model, ids, a.decode, 0, extra={"gpu_weight_bytes": total}, repeat=3)
    rows.append(ref_row)
    del model
    gc.collect()
    if DEV == "cuda":
        torch.cuda.empty_cache()

    def compare(row, logits):
        """Adds row to the table with its tokens and logits compared with the resident run's."""
        n = min(len(row["tokens"]), len(ref_row["tokens"]))
        row["tokens_equal"] = row["tokens"][:n] == ref_row["tokens"][:n]
        row["max_logit_diff"] = float((logits - ref_logits).abs().max())
        rows.append(row)

    def others_from_safetensors(m):
        """Embeddings, final norm and head from the checkpoint onto the GPU."""
        from safetensors import safe_open
        for n in others:
            with safe_open(where[n], framework="pt") as f:
                set_tensor(m, n, f.get_tensor(n).to(DEV))

    # --- the layer loader: the checkpoint in the drive's object store
    loader_rows = [("layer loader, p2p (simulated)", "", True), ("layer loader, pipeline", "", False)]
    loader_rows += [(f"layer loader, {m} model", m, False) for m in filter(None, a.models.split(","))]
    if gpu.available() and not all(r[0] in skip for r in loader_rows):
        img = os.path.join(work, "ns.img")
        size_mib = int(total * 1.15) // (1 << 20) + 512
        spec = f"emu:{img}?size={size_mib}M&slm=64M"
        with nvme_csd.open(spec) as dev:
            dev.store.format()
            t0 = time.perf_counter()
            stored = gpu.import_safetensors(dev, ckpt)
            print(f"# imported {len(stored)} tensors into the drive's object store in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        for name, preset, direct in loader_rows:
            if name in skip:
                continue
            with nvme_csd.open(spec + (f"&model={preset}" if preset else "")) as dev:
                m = empty_model(config)
                for n in others:
                    set_tensor(m, n, dev.store.get(n, device="cuda"))
                steps = a.decode if not preset else slow_decode
                with gpu.LayerLoader(dev, layers, budget_layers=a.budget_layers, ring=a.ring,
                                     direct=direct) as loader:
                    loader.attach(m.model.layers)
                    run(m, ids[:, :16], 0)  # warm-up: the resident layers land, the namespace is registered
                    loader.clear_timings()
                    row, logits = measure(name, m, ids, steps, streamed_layers, warm=False,
                                          extra={"gpu_weight_bytes": loader.budget_bytes + other_bytes},
                                          repeat=1 if preset else 2)
                    if preset:
                        row["drive_gbps"] = DRIVE_READ_GBPS[preset]
                    s = loader.summary()
                    t = [x for x in loader.timings() if not x["resident"]]
                    row["loader"] = {"paths": s["paths"], "landed_layers": s["layers"],
                                     "landing_gbps": s["gbps"], "stall_s": s["stall_s"],
                                     "median_land_ms": 1e3 * statistics.median(x["land"] for x in t),
                                     "median_wait_ms": 1e3 * statistics.median(x["wait"] for x in t),
                                     "restarts": s["restarts"], "lanes": loader.lanes}
                    print(f"#   per layer: median landing {row['loader']['median_land_ms']:.2f} ms "
                          f"({s['gbps']:.1f} GB/s while landing, path {', '.join(s['paths'])}), consumer "
                          f"stalled {s['stall_s']:.2f} s in all, {s['layers']} layers landed", flush=True)
                compare(row, logits)
                del m
                gc.collect()
                torch.cuda.empty_cache()

    # --- what users do today
    headers = {f: read_header(f) for f in set(where.values())}
    np_dtype = {"F16": np.float16, "BF16": np.uint16, "F32": np.float32}
    if "safe_open+.cuda()" not in skip:
        from safetensors import safe_open
        handles = {f: safe_open(f, framework="pt") for f in headers}
        m = empty_model(config)
        others_from_safetensors(m)
        HookStreamer(m, layers, resident, lambda n: handles[where[n]].get_tensor(n))
        row, logits = measure("safe_open+.cuda()", m, ids, a.decode, streamed_layers,
                              extra={"gpu_weight_bytes": plan["bytes"] + other_bytes})
        compare(row, logits)
        del m, handles
        gc.collect()
    if "mmap+.cuda()" not in skip:
        maps = {f: np.memmap(f, dtype=np.uint8, mode="r") for f in headers}

        def from_mmap(n):
            """Tensor n as a CPU tensor over the memory-mapped checkpoint."""
            dtype, shape, s, e = headers[where[n]][n]
            return torch.from_numpy(maps[where[n]][s:e].view(np_dtype[dtype]).reshape(shape))
        m = empty_model(config)
        others_from_safetensors(m)
        HookStreamer(m, layers, resident, from_mmap)
        row, logits = measure("mmap+.cuda()", m, ids, a.decode, streamed_layers,
                              extra={"gpu_weight_bytes": plan["bytes"] + other_bytes})
        compare(row, logits)
        del m, maps
        gc.collect()

    def cpu_state_dict():
        """The whole checkpoint in CPU memory (what from_pretrained gives before dispatching)."""
        from safetensors.torch import load_file
        sd = {}
        for f in headers:
            sd.update(load_file(f))
        return sd

    if "accelerate map" not in skip:
        sd = cpu_state_dict()
        m = empty_model(config)
        m.load_state_dict(sd, assign=True, strict=False)  # the weights on the CPU, as from_pretrained leaves them
        gpu_id = 0 if DEV == "cuda" else "cpu"
        device_map = {n: gpu_id for n in ("model.embed_tokens", "model.norm", "model.rotary_emb", "lm_head")}
        device_map.update({f"model.layers.{i}": (gpu_id if i in resident else "cpu") for i in range(a.layers)})
        m = accelerate.dispatch_model(m, device_map, main_device=DEV if DEV == "cpu" else 0)
        row, logits = measure("accelerate map", m, ids, slow_decode, streamed_layers,
                              extra={"gpu_weight_bytes": sum(layer_bytes[i] for i in resident) + other_bytes})
        compare(row, logits)
        del m, sd
        gc.collect()
    if "cpu_offload" not in skip:
        sd = cpu_state_dict()
        m = empty_model(config)
        m = accelerate.cpu_offload(m, execution_device=torch.device(DEV), state_dict=sd)
        row, logits = measure("cpu_offload", m, ids, slow_decode, total, extra={"gpu_weight_bytes": 0})
        compare(row, logits)
        del m, sd
        gc.collect()
    if "disk_offload" not in skip:
        from accelerate.utils import offload_state_dict
        folder = os.path.join(work, "offload")
        sd = cpu_state_dict()
        t0 = time.perf_counter()
        offload_state_dict(folder, sd)
        print(f"# offload folder written in {time.perf_counter() - t0:.1f} s", flush=True)
        del sd
        gc.collect()
        m = empty_model(config)
        m = accelerate.disk_offload(m, folder, execution_device=torch.device(DEV))
        row, logits = measure("disk_offload", m, ids, slow_decode, total, extra={"gpu_weight_bytes": 0})
        compare(row, logits)
        del m
        gc.collect()
        shutil.rmtree(folder, ignore_errors=True)

    # --- the table
    resident_row = rows[0]
    for r in rows:
        link = min(ceiling, r.get("drive_gbps", ceiling))
        sps = link / (r["streamed_bytes"] / 1e9) if r["streamed_bytes"] and link else float("inf")
        r["bound_decode_tps"], r["bound_prefill_tps"] = sps, sps * a.prompt
        r["target_decode_tps"] = min(sps, resident_row["decode_tps"])
        r["target_prefill_tps"] = min(sps * a.prompt, resident_row["prefill_tps"])
    print(f"\n{torch.cuda.get_device_name(0) if DEV == 'cuda' else 'CPU'}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}, accelerate {accelerate.__version__}; Llama {a.layers} x "
          f"{a.hidden} (intermediate {a.intermediate}, vocab {a.vocab}), fp16, {gib(total):.2f} GiB; prompt "
          f"{a.prompt} tokens; budget {a.budget_layers} of {a.layers} layers (ring {plan['ring']}); pinned "
          f"ceiling {ceiling:.1f} GB/s\n")
    print("| method | weights on GPU GiB | streamed GiB/step | prefill tok/s | PCIe bound | % of target | "
          "decode tok/s | PCIe bound | % of target | decode steps | tokens = resident | max abs logit diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        bound = r["bound_decode_tps"]
        fmt = (lambda v: "∞" if v == float("inf") else f"{v:,.2f}" if v < 100 else f"{v:,.0f}")
        pct = (lambda v, t: f"{100 * v / t:.0f} %")
        print(f"| {r['method']} | {gib(r['gpu_weight_bytes'] or 0):.2f} | {gib(r['streamed_bytes']):.2f} | "
              f"{fmt(r['prefill_tps'])} | {fmt(r['bound_prefill_tps'])} | "
              f"{pct(r['prefill_tps'], r['target_prefill_tps'])} | {fmt(r['decode_tps'])} | {fmt(bound)} | "
              f"{pct(r['decode_tps'], r['target_decode_tps'])} | {len(r['tokens']) - 1} | "
              f"{'yes' if r.get('tokens_equal', True) else 'NO'} | {r.get('max_logit_diff', 0.0):.3g} |")
    for r in rows:
        if "loader" in r:
            x = r["loader"]
            print(f"- {r['method']} ({x['lanes']} lane{'s' if x['lanes'] > 1 else ''}): {x['landed_layers']} "
                  f"layers landed in the timed runs, median "
                  f"{x['median_land_ms']:.2f} ms a layer ({x['landing_gbps']:.1f} GB/s while landing), median wait "
                  f"for the GPU {x['median_wait_ms']:.2f} ms, consumer stalled {x['stall_s']:.2f} s in all; "
                  f"path {', '.join(x['paths'])}")
    with open(os.path.join(a.out, "stream_llama.json"), "w") as f:
        json.dump({"args": vars(a), "ceiling_gbps": ceiling, "total_bytes": total, "rows": rows}, f, indent=1)
    plot(rows, a, os.path.join(a.out, "stream-llama.png"))
    bad = [r["method"] for r in rows if not r.get("tokens_equal", True)]
    if bad:
        print(f"OUTPUTS DIFFER from the resident run: {bad}")
        return 1
    return 0


def plot(rows, a, path):
    """Prefill and decode tokens/s per method, each against its own PCIe bound (log scale)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# no matplotlib: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5))
    labels = [r["method"] for r in rows]
    for ax, key, title in ((axes[0], "prefill", f"prefill ({a.prompt} tokens)"), (axes[1], "decode", "decode")):
        vals = [r[f"{key}_tps"] for r in rows]
        bounds = [r[f"bound_{key}_tps"] for r in rows]
        xs = range(len(rows))
        ax.bar(xs, vals, color=["#4c72b0" if "loader" in l else "#999999" if l != "resident" else "#55a868"
                                for l in labels])
        for x, b in zip(xs, bounds):
            if b != float("inf"):
                ax.plot([x - 0.4, x + 0.4], [b, b], color="#c44e52", lw=2)
        ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel("tokens/s")
        ax.set_title(f"{title}; red: bound (streamed bytes / pinned ceiling or drive)")
    fig.suptitle(f"Llama {a.layers} x {a.hidden}, fp16, random weights; GPU budget {a.budget_layers} of "
                 f"{a.layers} layers (bench/gpu/stream_llama.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"# plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
