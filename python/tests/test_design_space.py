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
