# SPDX-License-Identifier: MIT
"""make demo's design-space table (python/demo/design_space.py) runs, and its in-drive and
classic answers agree, under a timing-model preset."""
import os
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "demo" / "design_space.py"


@pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")),
                    reason="the design-space table runs on the host's in-process device")
def test_design_space_answers_agree(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--scale", "1", "--presets", "gen3x4-4core",
                        "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "design space: in-drive and classic answers agree" in p.stdout
    table = p.stdout.split("== design space")[1]
    assert table.count("gen3x4-4core") == 3      # one row per question


@pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")),
                    reason="the design-space table runs on the host's in-process device")
def test_design_space_plots_its_verdicts_or_says_it_skipped(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "ds.png"
    args = [sys.executable, str(SCRIPT), "--scale", "1", "--presets", "gen3x4-4core", "--dir", str(tmp_path)]
    p = subprocess.run(args + ["--plot", str(png)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"plot: wrote {png}" in p.stdout and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # without matplotlib: the same table, and a line saying the plot was skipped
    fake = tmp_path / "no-matplotlib" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, PYTHONPATH=str(fake.parent))
    png.unlink()
    p = subprocess.run(args + ["--plot", str(png)], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "design space: in-drive and classic answers agree" in p.stdout
    assert f"plot: skipped {png} (matplotlib is not installed" in p.stdout and not png.exists()


@pytest.mark.parametrize("kind", ["design-space", "offload", "landing"])
def test_plots_of_the_recorded_runs(tmp_path, kind):
    """python/demo/plots.py draws each of docs/img's plots from the tables docs/perf.md
    records (the demo's, the design space's, the GPU landing's)."""
    pytest.importorskip("matplotlib")
    top = SCRIPT.parents[2]
    png = tmp_path / f"{kind}.png"
    p = subprocess.run([sys.executable, str(SCRIPT.parent / "plots.py"), kind, str(top / "docs" / "perf.md"),
                        str(png)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000
