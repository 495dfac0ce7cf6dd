# SPDX-License-Identifier: MIT
"""The module links none of the device core's runtimes (BLAS, zstd, lz4, xxHash, DPDK's
eBPF): libcsd loads libcsd-emu.so, the in-process device, on the first emu: path only."""
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from nvme_csd import _core

RUNTIMES = re.compile(r"lib(openblas|zstd|lz4|xxhash|rte_[a-z]+)\.so")


@pytest.mark.skipif(shutil.which("ldd") is None, reason="no ldd")
def test_extension_links_no_core_runtime():
    out = subprocess.run(["ldd", _core.__file__], capture_output=True, text=True, check=True).stdout
    assert "libcsd.so" in out
    assert not RUNTIMES.search(out), out


def test_emu_library_loaded_on_first_emu_path(tmp_path):
    # In a fresh interpreter: nothing of the core after import; libcsd-emu.so and a working
    # device after the first emu: open. (numpy's own BLAS is not the core's, so only the
    # core's other runtimes are looked for before the open.)
    code = textwrap.dedent(f"""
        import re, numpy as np, nvme_csd
        def maps():
            return open("/proc/self/maps").read()
        before = maps()
        assert "libcsd.so" in before, "libcsd.so not loaded"
        bad = re.findall(r"lib(?:zstd|lz4|xxhash|rte_[a-z]+|csd-emu)\\.so[.0-9]*", before)
        assert not bad, "loaded before any emu: path: " + " ".join(sorted(set(bad)))
        with nvme_csd.open("emu:{tmp_path}/ns.img?size=16M&slm=8M") as d:
            assert d.transport == "inproc"
            assert d.checksum(np.arange(1024, dtype=np.uint8)) == d.checksum(np.arange(1024, dtype=np.uint8))
        assert "libcsd-emu.so" in maps()
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
