# SPDX-License-Identifier: MIT
"""Guest test: namespaces detached, formatted and given metadata under waiting commands."""
import struct
import subprocess
import threading
import time

from csd_guest import *

c = Checks()
N = 2048  # gemm 2048^3 (17 GFLOP) keeps the one compute unit busy for a while
GEMM = struct.pack("<4I2f", N, N, N, 0, 1.0, 0.0)
INVALID_NS = 0x00B


def nvme(*args):
    r = subprocess.run(["nvme", *args], capture_output=True, text=True)
    print("$ nvme", " ".join(args), "->", r.returncode, (r.stdout + r.stderr).strip()[:200], flush=True)
    # a format of a namespace the kernel cannot read afterwards (metadata) succeeds, yet
    # nvme-cli's partition table re-read fails: exit 1 after "Success formatting"
    return 0 if "Success formatting" in r.stdout + r.stderr else r.returncode


def gather_at(lba):
    """A gather of one block at lba into SLM 64 MiB (its entry at SLM 60 MiB)."""
    ent = 60 << 20
    slm_write(ent, struct.pack("<QII", lba, 0, 512))
    return execute(0x0B, [(ent, 16), (64 << 20, 512)], struct.pack("<II", 1, 0))


def busy_then(what, waiting, change):
    """Keeps the unit busy with gemms, queues `waiting` (callables) behind them, runs change()
    while they wait; returns the waiting ones' results (a status code or 'errno N')."""
    results = {}

    def run(name, fn):
        try:
            results[name] = fn().code
        except OSError as e:  # the kernel may fail what it cannot deliver any more
            results[name] = f"errno {e.errno}"

    threads = [threading.Thread(target=run, args=(f"gemm{i}", lambda i=i: execute(
        0x02, [(0, N * N * 4), (0, N * N * 4), ((16 + 16 * (i % 2)) << 20, N * N * 4)], GEMM))) for i in range(4)]
    threads += [threading.Thread(target=run, args=(n, f)) for n, f in waiting.items()]
    for t in threads:
        t.start()
        time.sleep(0.05)
    time.sleep(0.5)
    change()
    for t in threads:
        t.join(240)
    c.ok(not any(t.is_alive() for t in threads), f"{what}: every command came back")
    print(f"{what}: {results}", flush=True)
    return results


ctrl = cntlid()
slm_write(0, b"\x11" * 512)
c.status(gather_at(3), SUCCESS, "a gather before any change")

# 1. detach NSID 1 while a gather and an embedding_bag wait for the unit
emb = struct.pack("<QQ6I", 0, 4, 4, 0, 0, 0, 1, 0)  # 4 rows of dim 4 f32 at LBA 0, one bag


def embedding_bag():
    slm_write(61 << 20, struct.pack("<qq", 1, 0))
    return execute(0x0C, [(61 << 20, 8), ((61 << 20) + 8, 8), (0, 0), (65 << 20, 16)], emb)


res = busy_then("detach", {"gather": lambda: gather_at(3), "embedding_bag": embedding_bag},
                lambda: nvme("detach-ns", "/dev/nvme0", f"--namespace-id=1", f"--controllers={ctrl}"))
for name in ("gather", "embedding_bag"):
    c.ok(res.get(name) in (INVALID_NS, SUCCESS) or str(res.get(name)).startswith("errno"),
         f"a waiting {name} across a detach: Invalid Namespace or Format, or done first ({res.get(name)})")
c.ok(wait_for("/dev/ng0n1", False), "the guest saw the namespace go")
c.ok(nvme("attach-ns", "/dev/nvme0", "--namespace-id=1", f"--controllers={ctrl}") == 0, "attach NSID 1 again")
nvme("ns-rescan", "/dev/nvme0")
c.ok(wait_for("/dev/ng0n1", True), "the namespace is back")
c.status(gather_at(3), SUCCESS, "QEMU is alive and the drive gathers after the detach")

# 2. format to 4 KiB blocks with a gather queued: Linux drains the controller's I/O queues
# before it sends a Format (it changes every namespace), so here the gather ends first; a
# command that waits across a format is proven by the core's tests (test_controller.cc,
# NamespaceChanges), which reach the state Linux will not. This checks the drive afterwards.
res = busy_then("format 4 KiB", {"gather": lambda: gather_at(3)},
                lambda: nvme("format", "/dev/nvme0n1", "--lbaf=4", "--force"))
c.ok(res.get("gather") in (INVALID_NS, SUCCESS) or str(res.get("gather")).startswith("errno"),
     f"a waiting gather across a format: Invalid Namespace or Format, or done first ({res.get('gather')})")
c.status(gather_at(3), SUCCESS, "the drive gathers after the format (4 KiB blocks)")

# 3. metadata / protection information: the command set refuses to move namespace bytes
if nvme("format", "/dev/nvme0n1", "--lbaf=1", "--pi=1", "--force") == 0:
    time.sleep(1)
    c.status(slm_load(0, 1, 0), INVALID_NS, "SLM Load of a PI-formatted namespace")
    c.status(slm_store(0, 1, 0), INVALID_NS, "SLM Store of a PI-formatted namespace")
    caw = passthru(0x8D, cdw={10: 0, 12: 0}, write=bytes(1024))
    c.status(caw, INVALID_NS, "Compare and Write of a PI-formatted namespace")
    c.status(gather_at(3), INVALID_NS, "gather of a PI-formatted namespace")
    c.ok(nvme("format", "/dev/nvme0n1", "--lbaf=0", "--force") == 0, "format back to 512 B, no metadata")
    time.sleep(1)
else:
    c.ok(False, "nvme format --lbaf=1 --pi=1 (512 + 8, PI type 1)")
c.status(slm_load(0, 1, 0), SUCCESS, "SLM Load after formatting back")
c.report()
