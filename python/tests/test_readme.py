# SPDX-License-Identifier: MIT
"""The README's examples as written (issue 43 item 6): its host recipes (the ```sh blocks
marked '<!-- host recipe -->', the first ten minutes on emu:) run in one shell from the
top of the tree, each one's output equal to the ```text block after it; every ```cpp block
compiled against this tree's libcsd and run; every ```python block run. Host only: the
guest's recipes are tests/vm/guest/csd-recipes.sh's."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
README = (TOP / "README.md").read_text() if (TOP / "README.md").is_file() else ""
sys.path.insert(0, str(TOP / "tests"))
import markdown_recipes  # noqa: E402  (the README's blocks, read as tests/fresh/ and the guest read them)

MB = Path(os.environ.get("CSD_MESON_BUILD", TOP / "build" / "meson"))
pytestmark = pytest.mark.skipif(not README or not (MB / "host").is_dir() or bool(os.environ.get("CSD_TEST_DEVICE")),
                                reason="host only, in a built tree (the README and build/meson)")


def blocks(kind):
    """The README's ```KIND blocks' bodies."""
    return [body for k, body, _ in markdown_recipes.blocks(README) if k == kind]


def test_the_first_ten_minutes_run_as_written():
    recipes = markdown_recipes.recipes(README, ["<!-- host recipe -->"])
    assert recipes, "the README has no host recipe"
    for body, want in recipes:
        env = {k: v for k, v in os.environ.items() if k not in ("CSD_DEVICE", "VIRTUAL_ENV")}
        out = subprocess.run(["sh", "-c", body], cwd=TOP, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=300).stdout
        if want is not None:
            assert markdown_recipes.agrees(out, want), f"the recipe printed:\n{out}"


def test_the_cpp_examples_compile_and_run(tmp_path):
    cpp = blocks("cpp")
    assert cpp, "the README has no C++ example"
    for i, body in enumerate(cpp):
        src, exe = tmp_path / f"example{i}.cc", tmp_path / f"example{i}"
        src.write_text(body)
        subprocess.run(["c++", "-std=c++17", "-I", str(TOP / "host" / "include"), "-I", str(TOP / "host" / "store" / "include"), "-I", str(TOP / "spec"), str(src),
                        "-o", str(exe), f"-L{MB / 'host'}", "-lcsd", f"-Wl,-rpath,{MB / 'host'}"],
                       check=True, capture_output=True, text=True)
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        if "records -> object hot" in body:
            assert out.stdout.strip() == "499 of 1000 records -> object hot", out.stdout


# Run before a block: reports on stderr the kinds of the arrays each gemm multiplied, so the
# test sees whether the example's inputs were in the drive already (SlmArray) or host arrays.
SPY = """
import sys, nvme_csd
_gemm = nvme_csd.Device.gemm
def _spy(self, a, b, *args, **kw):
    print("gemm of", type(a).__name__, type(b).__name__, file=sys.stderr)
    return _gemm(self, a, b, *args, **kw)
nvme_csd.Device.gemm = _spy
"""


def test_the_python_examples_run_in_the_drive():
    py = blocks("python")
    assert py, "the README has no Python example"
    for body in py:
        out = subprocess.run([sys.executable, "-c", SPY + body], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(256, 256) 1", "the Python five lines printed " + out.stdout
    assert "gemm of SlmArray SlmArray" in out.stderr, "the five lines' gemm moved its inputs across the bus: " + out.stderr


def test_the_program_files_the_docs_name_exist():
    """Every build/... or examples/... eBPF object README.md and docs/python.md name is there
    after the build (docs/python.md once named examples/bpf/threshold.o, which is not)."""
    named = set()
    for doc in (TOP / "README.md", TOP / "docs" / "python.md"):
        named |= set(re.findall(r"((?:build/meson/)?examples/bpf/\w+\.o)\b", doc.read_text()))
    assert named
    missing = [n for n in sorted(named) if not (TOP / n).exists()]
    assert not missing, f"named but not built: {missing}"
