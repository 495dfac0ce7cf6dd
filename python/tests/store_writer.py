# SPDX-License-Identifier: MIT
"""The writer process of test_device.py's several-process test, in a module of its own: a
writer (a forkserver's child) imports only this (numpy and nvme_csd, which the forkserver
has imported already), not the test module with pytest, which under TCG in a guest made
each writer's start take seconds more."""
import numpy as np

import nvme_csd


def writer(path, uring, w, n):
    """One writer process: its own Device, puts n objects and removes every third."""
    d = nvme_csd.open(path, uring=uring)
    for k in range(n):
        d.store[f"p{w}-{k}"] = np.full(100 + 37 * k + w, w * 100 + k, dtype=np.int32)
        if k >= 2 and (k - 2) % 3 == 2:
            del d.store[f"p{w}-{k - 2}"]
    d.close()
