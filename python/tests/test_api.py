# SPDX-License-Identifier: MIT
"""The Python API as its users expect it: standard exception bases, the standard front
end's statuses exported, Store a MutableMapping, SlmArray a context manager with DLPack,
progress reports on long puts and gets, and the package type-checked (mypy, _core's stubs)."""
import collections.abc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nvme_csd
from nvme_csd import errors

top = Path(__file__).resolve().parents[2]


def test_host_side_argument_errors_are_value_and_type_errors(dev):
    m = np.ones((4, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="do not multiply") as e:
        dev.gemm(np.ones((4, 5), dtype=np.float32), m)
    assert isinstance(e.value, nvme_csd.InvalidParameters)  # what it raised before, still
    assert not isinstance(e.value, TypeError)
    with pytest.raises(ValueError, match="unknown op"):
        dev.reduce(m, "median")
    with pytest.raises(TypeError, match="store arrays, tensors or bytes"):
        dev.store["x"] = {"not": "an array"}
    with pytest.raises(TypeError, match="expected an array, tensor or buffer"):
        dev.checksum(3.5)
    with pytest.raises(nvme_csd.NvmeStatusError) as e:  # the drive's refusal is no ValueError
        dev.execute("copy", [(dev.caps["slm_size"] - 4, 8), (0, 8)])
    assert isinstance(e.value, nvme_csd.SlmOutOfBounds) and not isinstance(e.value, ValueError)


def test_a_front_end_the_in_process_device_lacks_says_how_to_open_it(tmp_path):
    """front_end="nvme-cs" on an in-process device opened without nvme-cs=on names the
    option that gives it (it asked whether a QEMU device had csd.nvme-cs=on), and the model
    it names carries no Identify padding."""
    with pytest.raises(nvme_csd.CsdError, match=r"does not speak the standard") as e:
        nvme_csd.open(f"emu:{tmp_path}/d.img?size=16M", front_end="nvme-cs")
    assert "emu:FILE?nvme-cs=on" in str(e.value) and "QEMU" not in str(e.value), e.value
    assert "model 'nvme-csd in-process device')" in str(e.value), e.value
    with nvme_csd.open(f"emu:{tmp_path}/d.img?nvme-cs=on", front_end="nvme-cs") as d:
        assert d.front_end == "nvme-cs"


def test_drive_statuses_form_a_class_hierarchy():
    assert issubclass(nvme_csd.InvalidOpcode, nvme_csd.GenericCommandStatus)
    assert issubclass(nvme_csd.InvalidProgram, nvme_csd.CommandSpecificStatus)
    assert issubclass(nvme_csd.GenericCommandStatus, nvme_csd.NvmeStatusError)
    assert issubclass(nvme_csd.NvmeStatusError, nvme_csd.CsdError)
    for cls in errors.VENDOR_ERRORS + errors.NVME_CS_ERRORS:
        assert cls.status_code >> 8 == (0 if issubclass(cls, nvme_csd.GenericCommandStatus) else 1), cls
        e = errors.make_error("x", cls.status_code | 0x4000, 0, 0, 0)  # with Do Not Retry
        assert type(e) is cls and e.status_name == cls.status_name and e.code == cls.status_code
        assert cls.__doc__ and cls.status_name in cls.__doc__
    assert isinstance(errors.make_error("x", 0x1FF, 0, 0, 0), nvme_csd.NvmeStatusError)  # unnamed status
    assert isinstance(errors.make_error("x", 0, 22, 0, 0), ValueError)  # libcsd's own EINVAL


def test_standard_front_end_statuses_are_exported():
    from nvme_csd.wire import NVME_CS_STATUS_CODES
    for name, code in NVME_CS_STATUS_CODES.items():
        cls = getattr(nvme_csd, name.title().replace(" ", ""))
        assert cls.status_code == code and cls in errors.NVME_CS_ERRORS
    assert len(errors.NVME_CS_ERRORS) == len(NVME_CS_STATUS_CODES)
    assert issubclass(nvme_csd.InvalidProgramIndex, nvme_csd.InvalidProgram)
    assert issubclass(nvme_csd.ProgramTooBig, nvme_csd.InvalidProgramImage)
    public = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)
              and v.__module__ == errors.__name__}
    assert set(errors.__all__) == public
    assert all(getattr(nvme_csd, n) is getattr(errors, n) for n in errors.__all__)


def test_store_is_a_mutable_mapping(dev):
    s = dev.store
    assert isinstance(s, collections.abc.MutableMapping)
    a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.ones(5, dtype=np.float64)
    s.update({"a": a, "b": b}, blob=b"xyz")
    assert isinstance(s.keys(), collections.abc.KeysView) and set(s.keys()) == {"a", "b", "blob"}
    assert sorted(s) == sorted(s.keys())
    assert {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in s.items()} == \
        {"a": a.tolist(), "b": b.tolist(), "blob": b"xyz"}
    assert sorted(len(v) for v in s.values()) == [2, 3, 5]
    assert s.get("missing") is None and s.get("missing", 7) == 7
    assert np.array_equal(s.get("a"), a)
    assert s.pop("blob") == b"xyz" and "blob" not in s
    assert s.pop("blob", None) is None
    with pytest.raises(KeyError):
        s.pop("blob")
    assert np.array_equal(s.setdefault("a", b), a)
    assert s == s and s != {"a": a}   # equality is identity: comparing would read every object
    s.clear()
    assert len(s) == 0 and list(s.keys()) == []


def test_slm_array_is_a_context_manager_with_dlpack(dev):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with dev.to_slm(x) as s:
        assert len(s) == 3 and s.ndim == 2 and s.size == 12 and s.shape == (3, 4)
        assert s.__dlpack_device__() == (1, 0)
        assert np.array_equal(np.from_dlpack(s), x)
        torch = pytest.importorskip("torch")
        assert torch.equal(torch.from_dlpack(s), torch.from_numpy(x))
    assert s.freed
    with pytest.raises(TypeError):
        len(dev.alloc((), np.float32))


def test_progress_reports_on_long_puts_and_gets(dev):
    big = np.arange(9 << 18, dtype=np.int32)  # 9 MiB: libcsd reports every 4 MiB
    seen = []
    dev.store.put("big", big, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (big.nbytes, big.nbytes) and len(seen) >= 3
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    got = []
    assert np.array_equal(dev.store.get("big", progress=lambda d, t: got.append((d, t))), big)
    assert got and got[-1] == (big.nbytes, big.nbytes)

    def stop(done, total):
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):   # the callback's error cancels the put
        dev.store.put("big2", big, progress=stop)
    assert "big2" not in dev.store
    with pytest.raises(TypeError, match="progress must be"):
        dev.store.put("big3", big, progress="yes")


def test_progress_true_draws_a_tqdm_bar(dev, capsys):
    pytest.importorskip("tqdm")
    dev.store.put("big", np.zeros(9 << 18, dtype=np.int32), progress=True)
    dev.store.get("big", progress=True)
    err = capsys.readouterr().err
    assert "put big" in err and "get big" in err and "100%" in err and "9.00M" in err


def test_progress_true_without_tqdm_prints_lines(dev, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)   # import tqdm.auto fails
    dev.store.put("big", np.zeros(5 << 18, dtype=np.int32), progress=True)
    err = capsys.readouterr().err
    assert "put big: 100% (5242880 of 5242880 bytes)" in err


def test_the_package_is_typed_and_passes_mypy():
    pytest.importorskip("mypy")
    pkg = Path(nvme_csd.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_core" / "__init__.pyi").exists()
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(top / "python" / "pyproject.toml"),
                        "--cache-dir", str(top / "build" / "mypy-cache"), str(top / "python" / "nvme_csd"),
                        str(top / "python" / "tests" / "typed_use.py")],
                       capture_output=True, text=True, cwd=top / "python")
    assert r.returncode == 0, r.stdout + r.stderr


def test_core_stubs_match_the_module(tmp_path):
    """The committed stubs of _core are what pybind11-stubgen makes of the built module
    (python/gen-stubs.sh regenerates them)."""
    pytest.importorskip("pybind11_stubgen")
    env = dict(os.environ, CSD_STUBS_OUT=str(tmp_path))
    r = subprocess.run(["bash", str(top / "python" / "gen-stubs.sh")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    made = {p.relative_to(tmp_path): p.read_text() for p in tmp_path.rglob("*.pyi")}
    committed = {p.relative_to(top / "python" / "nvme_csd" / "_core"): p.read_text()
                 for p in (top / "python" / "nvme_csd" / "_core").rglob("*.pyi")}
    assert made and made == committed, "stale stubs: run python/gen-stubs.sh and commit python/nvme_csd/_core"


def test_the_signatures_docs_python_md_prints_are_the_real_ones():
    """Each call docs/python.md writes as a signature takes its arguments as written: the
    names before a `*` positionally in that order, those after it by keyword, and every
    default it prints is the real one (it printed keyword-only ones as positional:
    dev.load_program("x.o", 16, 0x100) was a TypeError)."""
    import inspect
    import re
    if not (top / "docs" / "python.md").is_file():
        pytest.skip("no docs/python.md beside the tests (the guest's copy)")
    doc = (top / "docs" / "python.md").read_text()
    from nvme_csd import program, store
    try:
        from nvme_csd import data  # needs torch
        torch_only = {"StoreDataset": data.StoreDataset, "Prefetcher": data.Prefetcher}
    except ImportError:
        torch_only = {"StoreDataset": None, "Prefetcher": None}
    calls = {"nvme_csd.open": nvme_csd.open, "gemm": nvme_csd.Device.gemm, "elementwise": nvme_csd.Device.elementwise,
             "filter": nvme_csd.Device.filter, "convert": nvme_csd.Device.convert, "conv2d": nvme_csd.Device.conv2d,
             "dev.load_program": nvme_csd.Device.load_program, "prefetch": store.Store.prefetch,
             "prog.chase": program.Program.chase, "nvme_csd.data.StoreDataset": torch_only["StoreDataset"],
             "Prefetcher": torch_only["Prefetcher"]}
    for name, fn in calls.items():
        written = re.search(r"`" + re.escape(name) + r"\(([^`]*)\)`", doc)
        assert written, f"docs/python.md writes no signature of {name}"
        if fn is None:
            continue
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        names = [p.name for p in params]
        positional = [p for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        keyword_only, at = False, 0
        for arg in (a.strip() for a in " ".join(written.group(1).split()).split(",")):
            if arg in ("*", "..."):
                keyword_only = keyword_only or arg == "*"
                continue
            pname, _, default = arg.partition("=")
            if not keyword_only:  # taken positionally, in this order
                assert at < len(positional), f"{name}: {pname} cannot be given positionally"
                real = positional[at]
                at += 1
                if pname not in ("path_or_bytes", "ds"):  # named for what it takes
                    assert real.name == pname, f"{name}: argument {at} is {real.name}, the doc says {pname}"
            else:
                assert pname in names, f"{name} takes no {pname}"
                real = params[names.index(pname)]
            if default and real.default is not inspect.Parameter.empty:
                assert repr(real.default) == default.replace('"', "'"), \
                    f"{name}: {pname} defaults to {real.default!r}, the doc says {default}"
