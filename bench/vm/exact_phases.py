# SPDX-License-Identifier: MIT
"""Guest side of bench/run-exact-cost.sh: the workloads whose wall-clock cost exact mode is
measured on, each between two marker lines the host timestamps as they arrive (the guest's
own clock may be the held or instruction-counted one, so the host's is the measure)."""
import struct
import subprocess
import sys

sys.path.insert(0, "/csd/tests")
from csd_guest import execute, slm_read, slm_write, stats  # noqa: E402


def phase(name, fn):
    print(f"@@PHASE begin {name}", flush=True)
    fn()
    print(f"@@PHASE end {name}", flush=True)


def fio(iodepth, ios):
    subprocess.run(["fio", "--name=x", "--filename=/dev/nvme0n1", "--direct=1", "--ioengine=io_uring",
                    "--rw=randread", "--bs=4k", f"--iodepth={iodepth}", "--size=64M",
                    f"--number_ios={ios}", "--output=/dev/null"], check=True)


def slm(n):
    buf = b"x" * (512 << 10)
    for _ in range(n):
        assert slm_write(0, buf).status == 0
        assert slm_read(0, len(buf)).status == 0


def gemm(n):
    m = 256
    params = struct.pack("<4I2f", m, m, m, 0, 1.0, 0.0)
    ranges = [(0, m * m * 4), (1 << 20, m * m * 4), (2 << 20, m * m * 4)]
    for _ in range(n):
        assert execute(0x02, ranges, params).status == 0


phase("fio 4 KiB QD1 x400", lambda: fio(1, 400))
phase("fio 4 KiB QD32 x4000", lambda: fio(32, 4000))
phase("SLM Write+Read 512 KiB x40", lambda: slm(40))
phase("gemm 256^3 x20", lambda: gemm(20))
s = stats()
print(f"@@STATS overruns {s['model_overruns']} holds {s['model_holds']} hold_ms {s['model_hold_ns'] / 1e6:.0f}", flush=True)
