# SPDX-License-Identifier: MIT
"""Guest test: resets with CSD commands in flight."""
import struct
import subprocess
import threading
import time

from csd_guest import *

c = Checks()
n = 2048  # gemm 2048^3 (17 GFLOP): queued behind one compute unit when the reset comes
# A and B are SLM's zero-filled first bytes: the work, not the values, matters here.
marker = b"keep me across resets".ljust(24, b"\0")
c.status(slm_write(120 << 20, marker), SUCCESS, "SLM Write a marker")
params = struct.pack("<4I2f", n, n, n, 0, 1.0, 0.0)
results = []


def worker(i):
    try:
        if i % 3 == 2:
            r = slm_load(0, 2048, 8 << 20)
        else:
            r = execute(0x02, [(0, n * n * 4), (0, n * n * 4), ((16 + 2 * i) << 20, n * n * 4)], params)
        results.append(r.code)
    except OSError as e:           # the kernel may fail commands it aborted
        results.append(f"errno {e.errno}")


for round_ in range(3):
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    rc = subprocess.run(["nvme", "reset", "/dev/nvme0"]).returncode
    c.ok(rc == 0, f"round {round_}: nvme reset with 12 commands in flight (cu=1)")
    for t in threads:
        t.join(120)
    c.ok(not any(t.is_alive() for t in threads), f"round {round_}: every command came back")

print("statuses seen:", sorted(set(map(str, results))))
c.ok(all(x in (0, 0x007, 0x008, 0x371) or isinstance(x, str) for x in results),
     "each command succeeded or was aborted (07h, 08h or host-aborted 371h)")
# The device still works and SLM kept its bytes across the resets.
c.status(execute(0x08, [(0, 4096)], struct.pack("<I", 0)), SUCCESS, "Execute after the resets")
r = slm_read(120 << 20, 24)
c.ok(r.status == 0 and r.data == marker, "SLM contents survive controller resets")
subprocess.run(["nvme", "ns-rescan", "/dev/nvme0"], check=False)
c.status(slm_read(0, 4), SUCCESS, "SLM Read after a namespace rescan")
c.report()
