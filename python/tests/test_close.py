# SPDX-License-Identifier: MIT
"""Device.close() while other threads' calls run, in a forked child, from a progress
callback, by `with` and by garbage collection (an outside review of issue 31: close() freed
the Device under a running chase: use-after-free); and what was made from a Device, after
close(): DeviceClosed, no crash. The races run in processes of their own (close_race.py),
each many times."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nvme_csd
from nvme_csd.btree import RECORD_SIZE, BTree

HERE = Path(__file__).resolve().parent
BPF = Path(os.environ.get("CSD_BPF_DIR") or HERE.parents[1] / "build/meson/examples/bpf")
pytestmark = [
    pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")), reason="in-process devices of its own"),
    pytest.mark.skipif(not (BPF / "btree_lookup.o").exists(), reason=f"no example programs in {BPF}"),
]


@pytest.mark.parametrize("scenario,repeats,seconds", [("chase", 20, 600), ("mixed", 8, 600), ("with_and_gc", 5, 600),
                                                      ("forked", 10, 600), ("progress_closes", 10, 600),
                                                      ("progress_closes_with_a_call_waiting_for_slm", 3, 120)])
def test_close_racing_calls(scenario, repeats, seconds, tmp_path):
    r = subprocess.run([sys.executable, str(HERE / "close_race.py"), scenario, str(tmp_path), str(repeats)],
                       capture_output=True, text=True, timeout=seconds)
    assert r.returncode == 0 and r.stdout.startswith("ok"), \
        f"{scenario}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


def test_what_a_device_made_raises_device_closed_after_close(tmp_path):
    torch = pytest.importorskip("torch")
    import nvme_csd.nn
    d = nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M&slm=32M")
    d.store.format()
    d.store["x"] = np.arange(10)
    prog = d.load_program(BPF / "btree_lookup.o", RECORD_SIZE)
    tree = BTree.build(d, {1: 2, 3: 4}, 4096, prog, force=True)  # over the store's free space
    a = d.to_slm(np.arange(16, dtype=np.float32))
    view = a.numpy(copy=False)
    bag = nvme_csd.nn.EmbeddingBag(10, 4, device=d, table_lba=8192, mode="sum")
    d.close()
    d.close()  # twice: nothing more
    assert d.closed
    for call in (lambda: tree[1], lambda: prog.chase(tree.root_lba, [1], 2), lambda: d.store["x"],
                 lambda: list(d.store), lambda: a.numpy(), lambda: a.numpy(copy=False), lambda: d.caps,
                 lambda: d.to_slm(np.zeros(4)), lambda: bag(torch.tensor([1, 2]), torch.tensor([0])),
                 lambda: bag.weight, lambda: bag.rows([1]), lambda: d.transport):
        with pytest.raises(nvme_csd.DeviceClosed):
            call()
    a.free()  # the device's allocator is gone: nothing to free, no error
    del prog  # its __del__ unloads: the device is closed, nothing happens
    assert view[3] == 3  # a zero-copy view made before close() keeps the memory it shows
    view[3] = 7
    assert view[3] == 7


def test_drive_set_closed_while_a_call_runs(tmp_path):
    import threading
    s = nvme_csd.open_many([f"emu:{tmp_path}/d{i}.img?size=64M" for i in range(2)])
    s.format()
    x = np.arange(1 << 18, dtype=np.float32).reshape(-1, 64)
    errors = []

    def work():
        try:
            for i in range(50):
                s.put(f"t{i}", x, placement="striped")
        except nvme_csd.DeviceClosed:
            pass
        except Exception as e:
            errors.append(e)

    th = threading.Thread(target=work)
    th.start()
    s.close()
    th.join(60)
    assert not th.is_alive() and not errors
    with pytest.raises(nvme_csd.DeviceClosed):
        s.get("t0")
