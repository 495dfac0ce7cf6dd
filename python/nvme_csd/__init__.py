# SPDX-License-Identifier: MIT
"""nvme_csd: drive a computational-storage NVMe device from Python.

    import nvme_csd
    with nvme_csd.open("/dev/ng0n1") as dev:          # or "emu:/tmp/ns.img?slm=64M"
        dev.store["w"] = weights                       # kept on the drive
        y = dev.gemm(x, dev.store["w"])               # computed in the drive
"""

from . import errors
from .device import Device, SlmArray, open
from .drive_set import DriveSet, open_many
from .errors import *  # noqa: F401,F403  (every exception class: errors.__all__)
from .program import Program
from .store import Store

__version__ = "0.1.0"
__all__ = ["Device", "DriveSet", "Program", "SlmArray", "Store", "open", "open_many", *errors.__all__]
