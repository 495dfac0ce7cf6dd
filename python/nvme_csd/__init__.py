# SPDX-License-Identifier: MIT
"""nvme_csd: drive a computational-storage NVMe device from Python.

    import nvme_csd
    with nvme_csd.open("/dev/ng0n1") as dev:          # or "emu:/tmp/ns.img?slm=64M"
        dev.store["w"] = weights                       # kept on the drive
        y = dev.gemm(x, dev.store["w"])               # computed in the drive
"""

from .device import Device, SlmArray, open  # noqa: F401  (open mirrors builtins.open)
from .drive_set import DriveSet, open_many  # noqa: F401
from .errors import (AbortRequested, CsdError, DataTransferError, DeviceClosed, InternalError,  # noqa: F401
                     InvalidDescriptor, InvalidField, InvalidOpcode, InvalidParameters, InvalidProgram,
                     InvalidProgramImage, LbaOutOfRange, NotFound, OutputOverflow, ProgramFault,
                     HopLimitExceeded, ProgramLoadBytesExceeded, ProgramSlotInUse, SlmOutOfBounds)
from .program import Program  # noqa: F401
from .store import Store  # noqa: F401

__version__ = "0.1.0"
