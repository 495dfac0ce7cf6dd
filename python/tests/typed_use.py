# SPDX-License-Identifier: MIT
"""Not a test module: code using nvme_csd as its users would, which test_api.py has mypy
check against the package's annotations and _core's stubs (a wrong annotation or a
missing export fails there). Never run."""
from typing import Dict, Tuple

import numpy as np

import nvme_csd


def use(path: str) -> Tuple[int, Dict[str, object]]:
    """Calls the public API with the types it is documented to take."""
    with nvme_csd.open(path, front_end="auto") as dev:
        dev.store["w"] = np.ones((4, 4), dtype=np.float32)
        dev.store.update({"b": b"bytes"})
        names = sorted(dev.store.keys())
        w = dev.store.get("w", progress=True)
        with dev.to_slm(np.arange(8, dtype=np.float32)) as s:
            n = len(s) + s.ndim
            host = np.from_dlpack(s)
        try:
            dev.execute("gemm", [(0, 16)])
        except nvme_csd.InvalidProgramIndex as e:
            n += e.code
        except nvme_csd.InvalidArgument as e:   # a ValueError
            n += len(str(e))
        crc: int = dev.checksum(b"abc")
        a, b = dev.execute(2, [(0, 8)])
        return n + crc + a + b + int(host.sum()), {"names": names, "w": w, "caps": dev.caps}


def use_many(paths: Tuple[str, str]) -> int:
    """The DriveSet side."""
    with nvme_csd.open_many(paths) as ds:
        ds.put("t", np.zeros(4), placement="striped")
        return ds.home("t") + len(ds)
