# SPDX-License-Identifier: MIT
"""Guest-side benchmark (run by bench/run-vm-bench.sh): an SLM Load of 256 MiB from the
namespace (4 KiB LBAs, one command), and gemm 1024^3 through the passthrough Execute."""
import struct
import sys
import time

sys.path.insert(0, "/csd/tests")
from csd_guest import execute, slm_load  # noqa: E402


def best(f, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        times.append(time.perf_counter() - t0)
        assert r.status == 0, hex(r.status)
    return min(times)


t = best(lambda: slm_load(0, 65536, 0))
print(f"SLM Load 256 MiB (one command, 65536 x 4 KiB LBAs): {t * 1000:.0f} ms, {256 / 1024 / t:.2f} GiB/s")
n = 1024
mb = n * n * 4
params = struct.pack("<4I2f", n, n, n, 0, 1.0, 0.0)
t = best(lambda: execute(0x02, [(0, mb), (mb, mb), (2 * mb, mb)], params))
print(f"gemm 1024^3 Execute from the guest (submit to completion): {t * 1000:.1f} ms, "
      f"{2 * n ** 3 / t / 1e9:.1f} GFLOP/s")
