# SPDX-License-Identifier: MIT
"""The layer loader (nvme_csd.gpu.LayerLoader): grouping of tensor names into layers, the GPU
budget, the import of safetensors files and the errors on bad input run anywhere; the
landings themselves (byte for byte, into a model's layers, a damaged tensor) only with a GPU."""
import errno
import os

import numpy as np
import pytest

import nvme_csd
from nvme_csd import gpu

torch = pytest.importorskip("torch")
needs_gpu = pytest.mark.skipif(not (gpu.available() and torch.cuda.is_available()), reason="no GPU here")

LLAMA = [f"model.layers.{i}.{t}" for i in range(3) for t in
         ("self_attn.q_proj.weight", "mlp.up_proj.weight", "input_layernorm.weight")]


def test_group_layers_by_the_index_in_the_names():
    names = ["model.embed_tokens.weight", *reversed(LLAMA), "model.norm.weight", "lm_head.weight"]
    layers, others = gpu.group_layers(names)
    assert len(layers) == 3
    assert layers[0] == ["model.layers.0.input_layernorm.weight", "model.layers.0.mlp.up_proj.weight",
                         "model.layers.0.self_attn.q_proj.weight"]  # the order given, within a layer
    assert others == ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    # GPT-2 and BERT name their layers otherwise; 10 and 1 are not confused
    gpt2 = [f"transformer.h.{i}.attn.c_attn.weight" for i in range(11)]
    assert [g[0] for g in gpu.group_layers(gpt2)[0]][1] == "transformer.h.1.attn.c_attn.weight"
    assert len(gpu.group_layers(["encoder.layer.0.x", "encoder.layer.1.x"])[0]) == 2
    # a pattern of one's own
    assert gpu.group_layers(["stage0/w", "stage1/w"], pattern=r"stage(\d+)/")[0] == [["stage0/w"], ["stage1/w"]]


@pytest.mark.parametrize("names, match", [
    (["model.layers.0.w", "model.layers.2.w"], r"layer\(s\) \[1\]"),
    (["model.layers.1.w"], r"layer\(s\) \[0\]"),
    (["model.layers.0.w", "model.layers.0.w"], "named twice"),
    (["embed.weight", "lm_head.weight"], "no name has a layer index"),
])
def test_group_layers_refuses_bad_names(names, match):
    with pytest.raises(nvme_csd.InvalidArgument, match=match):
        gpu.group_layers(names)


def test_group_layers_refuses_what_is_no_list_of_names():
    with pytest.raises(nvme_csd.InvalidArgumentType):
        gpu.group_layers("model.layers.0.w")
    with pytest.raises(nvme_csd.InvalidArgumentType):
        gpu.group_layers(["model.layers.0.w", 3])
    with pytest.raises(nvme_csd.InvalidArgument, match="no group"):
        gpu.group_layers(["a"], pattern="layers")


def test_budget_in_layers():
    sizes = [100] * 32
    p = gpu.plan_budget(sizes, budget_layers=8)
    assert p["ring"] == 2 and p["resident"] == list(range(26, 32)) and p["streamed"] == list(range(26))
    assert p["bytes"] == 800
    assert gpu.plan_budget(sizes, budget_layers=8, ring=3)["resident"] == list(range(27, 32))
    assert gpu.plan_budget(sizes, budget_layers=1)["ring"] == 1  # the ring shrinks to the budget
    everything = gpu.plan_budget(sizes, budget_layers=40)
    assert everything["ring"] == 0 and everything["streamed"] == [] and everything["bytes"] == 3200
    chosen = gpu.plan_budget(sizes, budget_layers=4, resident=[0, 5])
    assert chosen["resident"] == [0, 5] and chosen["ring"] == 2 and 5 not in chosen["streamed"]


def test_budget_in_bytes():
    sizes = [100, 100, 120, 100, 100]
    p = gpu.plan_budget(sizes, budget_bytes=450)  # a ring of two of the largest (240), two layers resident
    assert p["ring"] == 2 and p["resident"] == [3, 4] and p["bytes"] == 440 <= 450
    assert p["streamed"] == [0, 1, 2]
    assert gpu.plan_budget(sizes, budget_bytes=130) == {"ring": 1, "resident": [], "streamed": [0, 1, 2, 3, 4],
                                                        "bytes": 120}
    assert gpu.plan_budget(sizes, budget_bytes=520)["streamed"] == []
    # the resident layers given, and the budget checked against them
    assert gpu.plan_budget(sizes, budget_bytes=440, resident=[2])["bytes"] == 120 + 2 * 100
    with pytest.raises(nvme_csd.InvalidArgument, match="more than the budget"):
        gpu.plan_budget(sizes, budget_bytes=300, resident=[0, 1])


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, nvme_csd.InvalidArgument, "one budget"),
    ({"budget_bytes": 100, "budget_layers": 1}, nvme_csd.InvalidArgument, "one budget"),
    ({"budget_bytes": 99}, nvme_csd.InvalidArgument, "holds no layer"),
    ({"budget_bytes": 0}, nvme_csd.InvalidArgument, "at least 1"),
    ({"budget_layers": 0}, nvme_csd.InvalidArgument, "at least 1"),
    ({"budget_layers": 2.5}, nvme_csd.InvalidArgumentType, "must be an int"),
    ({"budget_layers": True}, nvme_csd.InvalidArgumentType, "must be an int"),
    ({"budget_layers": 2, "ring": 0}, nvme_csd.InvalidArgument, "ring must be at least 1"),
    ({"budget_layers": 3, "resident": [0, 1]}, nvme_csd.InvalidArgument, "exceed the budget"),
    ({"budget_layers": 3, "resident": [4]}, nvme_csd.InvalidArgument, "not layer indexes"),
    ({"budget_layers": 3, "resident": [1, 1]}, nvme_csd.InvalidArgument, "named twice"),
    ({"budget_layers": 3, "resident": "01"}, nvme_csd.InvalidArgumentType, "list of layer indexes"),
])
def test_budget_refuses_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        gpu.plan_budget([100, 100, 100, 100], **kwargs)


def test_layout_aligns_every_tensor():
    assert gpu.plan_layout([10, 300, 1]) == ([0, 256, 768], 769)
    assert gpu.plan_layout([10, 3], align=4096) == ([0, 4096], 4099)
    with pytest.raises(nvme_csd.InvalidArgument):
        gpu.plan_layout([1], align=100)


def safetensors_file(tmp_path, tensors):
    """tensors saved by the safetensors package: what a checkpoint is."""
    st = pytest.importorskip("safetensors.torch")
    path = tmp_path / "model.safetensors"
    st.save_file(tensors, str(path))
    return path


def llama_tensors(layers=3, hidden=64, dtype=torch.float16, seed=0):
    """A Llama-like state dict: per layer a projection, an MLP weight and a norm."""
    g = torch.Generator().manual_seed(seed)
    t = {"model.embed_tokens.weight": torch.randn(100, hidden, generator=g).to(dtype)}
    for i in range(layers):
        t[f"model.layers.{i}.self_attn.q_proj.weight"] = torch.randn(hidden, hidden, generator=g).to(dtype)
        t[f"model.layers.{i}.mlp.up_proj.weight"] = torch.randn(2 * hidden, hidden, generator=g).to(dtype)
        t[f"model.layers.{i}.input_layernorm.weight"] = torch.randn(hidden, generator=g).to(dtype)
    return t


def test_import_safetensors_keeps_names_dtypes_and_shapes(dev, tmp_path):
    tensors = llama_tensors()
    tensors["counts"] = torch.arange(10, dtype=torch.int64)
    names = gpu.import_safetensors(dev, safetensors_file(tmp_path, tensors), prefix="m/")
    assert sorted(names) == sorted("m/" + k for k in tensors)
    for k, t in tensors.items():
        got = dev.store["m/" + k]
        assert got.dtype == t.numpy().dtype and got.shape == tuple(t.shape)
        assert np.array_equal(got, t.numpy())
    assert gpu.TORCH_DTYPES not in dev.store  # every dtype had a numpy name


def test_import_safetensors_records_bfloat16(dev, tmp_path):
    t = torch.randn(8, 16).to(torch.bfloat16)
    seen = []
    gpu.import_safetensors(dev, safetensors_file(tmp_path, {"w": t, "b": torch.ones(3)}),
                           progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    stored = dev.store["w"]
    assert stored.dtype == np.uint16 and stored.shape == (8, 16)
    assert torch.equal(torch.from_numpy(stored.view(np.int16)).view(torch.bfloat16), t)  # the bits, unchanged
    assert gpu._torch_dtypes(dev) == {"w": "bfloat16"}


def test_import_safetensors_of_a_folder_and_its_errors(dev, tmp_path):
    with pytest.raises(nvme_csd.InvalidArgument, match="no \\*.safetensors"):
        gpu.import_safetensors(dev, tmp_path)
    safetensors_file(tmp_path, {"a": torch.zeros(2)})
    assert gpu.import_safetensors(dev, tmp_path) == ["a"]
    with pytest.raises(Exception):
        gpu.import_safetensors(dev, tmp_path / "missing.safetensors")


def test_loader_refuses_bad_input_before_touching_the_gpu(dev, tmp_path):
    gpu.import_safetensors(dev, safetensors_file(tmp_path, llama_tensors()))
    with pytest.raises(nvme_csd.InvalidArgument, match="holds no layer"):
        gpu.LayerLoader(dev, "model.layers.", budget_bytes=1000)
    with pytest.raises(nvme_csd.InvalidArgument, match="one budget"):
        gpu.LayerLoader(dev, "model.layers.")
    with pytest.raises(nvme_csd.InvalidArgument, match="starts with"):
        gpu.LayerLoader(dev, "nothing.", budget_layers=2)
    with pytest.raises(nvme_csd.NotFound):
        gpu.LayerLoader(dev, [["model.layers.0.mlp.up_proj.weight", "model.layers.0.nothing"]], budget_layers=1)
    with pytest.raises(nvme_csd.InvalidArgumentType):
        gpu.LayerLoader(dev, [["model.layers.0.mlp.up_proj.weight"], []], budget_layers=1)
    with pytest.raises(nvme_csd.InvalidArgumentType):
        gpu.LayerLoader(dev, 3, budget_layers=1)
    with pytest.raises(nvme_csd.InvalidArgument, match="CUDA memory"):
        gpu.LayerLoader(dev, "model.layers.", budget_layers=2, device="cpu")
    with pytest.raises(nvme_csd.InvalidArgumentType, match="progress"):
        gpu.LayerLoader(dev, "model.layers.", budget_layers=2, progress=5)
    with pytest.raises(nvme_csd.InvalidArgument, match="lanes"):
        gpu.LayerLoader(dev, "model.layers.", budget_layers=2, lanes=0)


@pytest.mark.skipif(gpu.available(), reason="a GPU is here")
def test_loader_without_a_gpu_says_so(dev, tmp_path):
    gpu.import_safetensors(dev, safetensors_file(tmp_path, llama_tensors()))
    with pytest.raises(nvme_csd.CsdError, match="CUDA"):
        gpu.LayerLoader(dev, "model.layers.", budget_layers=2)


@needs_gpu
@pytest.mark.parametrize("direct, lanes", [(True, None), (False, None), (True, 3)])
def test_loader_lands_every_layer_byte_for_byte(dev, tmp_path, direct, lanes):
    tensors = llama_tensors(layers=5, hidden=96, dtype=torch.bfloat16)
    gpu.import_safetensors(dev, safetensors_file(tmp_path, tensors))
    seen = []
    with gpu.LayerLoader(dev, "model.layers.", budget_layers=3, direct=direct, lanes=lanes,
                         progress=lambda d, t: seen.append((d, t))) as loader:
        assert loader.lanes == (lanes or 1)
        assert loader.ring == 2 and loader.resident == [4] and loader.streamed == [0, 1, 2, 3]
        for _ in range(3):
            for i in range(len(loader)):
                with loader.layer(i) as got:
                    assert sorted(got) == sorted(loader.names[i])
                    for name, t in got.items():
                        assert t.is_cuda and t.dtype == torch.bfloat16 and t.shape == tensors[name].shape
                        assert torch.equal(t.cpu(), tensors[name]), name
        assert seen[:5] == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
        t = loader.timings()
        assert t[0]["resident"] and t[0]["layer"] == 4
        streamed = [x for x in t if not x["resident"]]
        assert [x["layer"] for x in streamed[:12]] == [0, 1, 2, 3] * 3
        p2p = "ns-registered (simulated peer-to-peer drive)"
        want = p2p if direct and not os.environ.get("CSD_TEST_DEVICE") else "pinned-pipeline"
        if lanes == 3:  # the first lane direct, the others the pipeline: which lands first varies
            assert all(want in x["path"] and "pinned-pipeline" in x["path"] for x in t)
        else:
            assert {x["path"] for x in t} == {want}
        s = loader.summary()
        assert s["layers"] >= 12 and s["restarts"] == 0 and s["bytes"] >= 12 * min(loader.layer_bytes)


@needs_gpu
def test_loader_streams_a_models_layers_with_the_resident_outputs(dev, tmp_path):
    hidden, n = 64, 6
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.GELU())
                                  for _ in range(n)]).cuda().half()
    x = torch.randn(4, hidden, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        want = model(x)
    state = {f"layers.{k}": v.cpu() for k, v in model.state_dict().items()}  # layers.3.0.weight
    gpu.import_safetensors(dev, safetensors_file(tmp_path, state))
    with gpu.LayerLoader(dev, "layers.", budget_layers=3) as loader:
        loader.attach(list(model))
        assert model[0][0].weight.device.type == "meta"  # given back until its forward
        with torch.no_grad():
            for _ in range(3):
                assert torch.equal(model(x), want)
        # a forward that fails half way, holding layer 3: the next one gives it back and starts
        # the stream again from layer 0
        model[3].register_forward_pre_hook(lambda *a: (_ for _ in ()).throw(RuntimeError("stop")))
        with pytest.raises(RuntimeError, match="stop"):
            model(x)
        assert loader._held == [3]
        model[3]._forward_pre_hooks.popitem()
        with torch.no_grad():
            assert torch.equal(model(x), want)
        assert loader.summary()["restarts"] >= 1


@needs_gpu
def test_loader_fails_a_damaged_layer_with_eio(dev, tmp_path):
    if os.environ.get("CSD_TEST_DEVICE"):
        pytest.skip("changes the in-process device's file")
    from test_device import flip_bit_in_file
    tensors = llama_tensors(layers=3, hidden=128, dtype=torch.float32)
    gpu.import_safetensors(dev, safetensors_file(tmp_path, tensors))
    w = tensors["model.layers.1.mlp.up_proj.weight"].numpy().tobytes()
    flip_bit_in_file(tmp_path / "ns.img", w[4096:4096 + 64])
    with gpu.LayerLoader(dev, "model.layers.", budget_layers=2) as loader:
        with loader.layer(0):
            pass
        with pytest.raises(nvme_csd.CsdError) as e:
            loader.acquire(1)
        assert e.value.errno == errno.EIO
