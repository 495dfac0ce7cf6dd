# SPDX-License-Identifier: MIT
"""Exceptions: every failure of the device or the library is a CsdError.

    CsdError
    ├── NvmeStatusError               the drive completed the command with an NVMe status
    │   ├── GenericCommandStatus      status code type 0 (InvalidOpcode, InvalidField, ...)
    │   ├── CommandSpecificStatus     status code type 1 (InvalidProgram, OutputOverflow, ...)
    │   │   └── InvalidParameters ─┬─ InvalidArgument      (also a ValueError)   the host's
    │   │                          └─ InvalidArgumentType  (also a TypeError)    own checks
    │   └── MediaError                status code type 2
    ├── NotFound                      (also a KeyError) no such object in the store
    ├── FormatRefused                 format() found a partition table, filesystem or store
    ├── ReadOnly                      a write on a device opened with read_only=True
    └── DeviceClosed

NVMe statuses get a class each, carrying the status code and its name. The standard front
end's statuses (front_end="nvme-cs") get theirs too (nvme_csd.InvalidProgramIndex, ...),
under the vendor class of the same meaning where there is one (Invalid Program Index is an
InvalidProgram), so that code catching the vendor classes works on either front end.
Arguments refused on the host, before anything reaches the drive, raise InvalidArgument
(a ValueError) or InvalidArgumentType (a TypeError); both stay InvalidParameters, which is
what such errors raised before."""

import errno as _errno
from typing import Dict, Optional, Tuple, Type

from .wire import NVME_CS_STATUS_CODES, STATUS_CODES


class CsdError(Exception):
    """A libcsd failure: `status` (NVMe status field, 0 if none), `status_name`, `errno`,
    and the completion's `dw0` / `dw1` (filter's Output Overflow: bytes needed, matches)."""

    status_name: Optional[str] = None
    status_code: int = 0

    def __init__(self, message: str, status: int = 0, errno: int = 0, dw0: int = 0, dw1: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.errno = errno
        self.dw0 = dw0
        self.dw1 = dw1

    @property
    def code(self) -> int:
        """Status code type and status code, without the Do Not Retry bit."""
        return self.status & 0x7FF


class NvmeStatusError(CsdError):
    """The drive completed the command with an NVMe status (its class says which)."""

    @property
    def status_code_type(self) -> int:
        """The status code type (0 generic, 1 command specific, 2 media and data integrity)."""
        return (self.code or self.status_code) >> 8


class GenericCommandStatus(NvmeStatusError):
    """An NVMe generic command status (status code type 0)."""


class CommandSpecificStatus(NvmeStatusError):
    """An NVMe command specific status (status code type 1)."""


class MediaError(NvmeStatusError):
    """An NVMe media and data integrity error (status code type 2)."""


# The vendor command set's statuses (spec/csd_spec.h): a class each. The status codes and
# the docstrings come from the bindings' table below (_named), so none is written twice.

class InvalidOpcode(GenericCommandStatus):
    status_name = "Invalid Command Opcode"


class InvalidField(GenericCommandStatus):
    status_name = "Invalid Field in Command"


class DataTransferError(GenericCommandStatus):
    status_name = "Data Transfer Error"


class InternalError(GenericCommandStatus):
    status_name = "Internal Error"


class AbortRequested(GenericCommandStatus):
    status_name = "Command Abort Requested"


class LbaOutOfRange(GenericCommandStatus):
    status_name = "LBA Out of Range"


class InvalidProgram(CommandSpecificStatus):
    status_name = "Invalid Program"


class InvalidDescriptor(CommandSpecificStatus):
    status_name = "Invalid Descriptor"


class SlmOutOfBounds(CommandSpecificStatus):
    status_name = "SLM Range Out of Bounds"


class InvalidParameters(CommandSpecificStatus):
    status_name = "Invalid Parameters"


class OutputOverflow(CommandSpecificStatus):
    status_name = "Output Overflow"


class ProgramFault(CommandSpecificStatus):
    status_name = "Program Fault"


class InvalidProgramImage(CommandSpecificStatus):
    status_name = "Invalid Program Image"


class ProgramSlotInUse(CommandSpecificStatus):
    status_name = "Program Slot In Use"


class ProgramLoadBytesExceeded(CommandSpecificStatus):
    status_name = "Program Load Bytes Exceeded"


class HopLimitExceeded(CommandSpecificStatus):
    status_name = "Hop Limit Exceeded"


# The standard front end's statuses (spec/nvme_cs.h), named after the status ("Program Not
# Activated" -> ProgramNotActivated), under the vendor class of the same meaning where there
# is one; test_errors.py checks that these are every status the bindings name.


class IncompatibleNamespaceOrFormat(CommandSpecificStatus):
    status_name = "Incompatible Namespace or Format"


class NamespaceNotReachable(CommandSpecificStatus):
    status_name = "Namespace Not Reachable"


class InvalidMemoryNamespace(CommandSpecificStatus):
    status_name = "Invalid Memory Namespace"


class InvalidMemoryRangeSet(SlmOutOfBounds):
    status_name = "Invalid Memory Range Set"


class InvalidMemoryRangeSetIdentifier(CommandSpecificStatus):
    status_name = "Invalid Memory Range Set Identifier"


class InvalidProgramData(InvalidProgramImage):
    status_name = "Invalid Program Data"


class InvalidProgramIndex(InvalidProgram):
    status_name = "Invalid Program Index"


class InvalidProgramType(CommandSpecificStatus):
    status_name = "Invalid Program Type"


class MaximumMemoryRangesExceeded(CommandSpecificStatus):
    status_name = "Maximum Memory Ranges Exceeded"


class MaximumMemoryRangeSetsExceeded(CommandSpecificStatus):
    status_name = "Maximum Memory Range Sets Exceeded"


class MaximumProgramsActivated(CommandSpecificStatus):
    status_name = "Maximum Programs Activated"


class MaximumProgramBytesExceeded(CommandSpecificStatus):
    status_name = "Maximum Program Bytes Exceeded"


class MemoryRangeSetInUse(CommandSpecificStatus):
    status_name = "Memory Range Set In Use"


class NoProgram(InvalidProgram):
    status_name = "No Program"


class OverlappingMemoryRanges(CommandSpecificStatus):
    status_name = "Overlapping Memory Ranges"


class ProgramNotActivated(CommandSpecificStatus):
    status_name = "Program Not Activated"


class ProgramInUse(ProgramSlotInUse):
    status_name = "Program In Use"


class ProgramIndexNotDownloadable(CommandSpecificStatus):
    status_name = "Program Index Not Downloadable"


class ProgramTooBig(InvalidProgramImage):
    status_name = "Program Too Big"


VENDOR_ERRORS: Tuple[Type[NvmeStatusError], ...] = (
    InvalidOpcode, InvalidField, DataTransferError, InternalError, AbortRequested, LbaOutOfRange,
    InvalidProgram, InvalidDescriptor, SlmOutOfBounds, InvalidParameters, OutputOverflow, ProgramFault,
    InvalidProgramImage, ProgramSlotInUse, ProgramLoadBytesExceeded, HopLimitExceeded)
NVME_CS_ERRORS: Tuple[Type[NvmeStatusError], ...] = (
    IncompatibleNamespaceOrFormat, NamespaceNotReachable, InvalidMemoryNamespace, InvalidMemoryRangeSet,
    InvalidMemoryRangeSetIdentifier, InvalidProgramData, InvalidProgramIndex, InvalidProgramType,
    MaximumMemoryRangesExceeded, MaximumMemoryRangeSetsExceeded, MaximumProgramsActivated, MaximumProgramBytesExceeded,
    MemoryRangeSetInUse, NoProgram, OverlappingMemoryRanges, ProgramNotActivated,
    ProgramInUse, ProgramIndexNotDownloadable, ProgramTooBig)


def _named(classes: Tuple[Type[NvmeStatusError], ...], table: Dict[str, int], where: str) -> None:
    """Gives each status class its code from the bindings' table, and its docstring."""
    for cls in classes:
        cls.status_code = table[cls.status_name or ""]
        cls.__doc__ = f"NVMe status {cls.status_name} ({cls.status_code:#05x}){where}."
        _BY_CODE[cls.status_code] = cls


_BY_CODE: Dict[int, Type[CsdError]] = {}
# Every exception, written out for type checkers (test_errors.py checks the list).
__all__ = ["CsdError", "NvmeStatusError", "GenericCommandStatus", "CommandSpecificStatus", "MediaError",
           "InvalidOpcode", "InvalidField", "DataTransferError", "InternalError", "AbortRequested",
           "LbaOutOfRange", "InvalidProgram", "InvalidDescriptor", "SlmOutOfBounds", "InvalidParameters",
           "OutputOverflow", "ProgramFault", "InvalidProgramImage", "ProgramSlotInUse", "ProgramLoadBytesExceeded", "HopLimitExceeded",
           "IncompatibleNamespaceOrFormat", "NamespaceNotReachable", "InvalidMemoryNamespace",
           "InvalidMemoryRangeSet", "InvalidMemoryRangeSetIdentifier", "InvalidProgramData", "InvalidProgramIndex",
           "InvalidProgramType", "MaximumMemoryRangesExceeded", "MaximumMemoryRangeSetsExceeded",
           "MaximumProgramsActivated", "MaximumProgramBytesExceeded", "MemoryRangeSetInUse", "NoProgram",
           "OverlappingMemoryRanges", "ProgramNotActivated", "ProgramInUse", "ProgramIndexNotDownloadable",
           "ProgramTooBig", "InvalidArgument", "InvalidArgumentType", "NotFound", "DeviceClosed", "FormatRefused", "ReadOnly"]
_named(VENDOR_ERRORS, STATUS_CODES, "")
_named(NVME_CS_ERRORS, NVME_CS_STATUS_CODES, ", standard front end")

class InvalidArgument(InvalidParameters, ValueError):
    """An argument refused on the host (a ValueError), before anything reached the drive."""


class InvalidArgumentType(InvalidParameters, TypeError):
    """An argument of the wrong type, refused on the host (a TypeError)."""


class NotFound(CsdError, KeyError):
    """No such object in the store (also a KeyError, as a mapping should raise)."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class DeviceClosed(CsdError):
    """The device was closed."""


class FormatRefused(CsdError):
    """Store.format() found a partition table, a filesystem or volume signature, or a store
    on the namespace (the message names it) and wrote nothing: format(force=True) overwrites it."""


class ReadOnly(CsdError):
    """A write (put, del, format, reclaim, a program that stores its result, SLM Store, NVM
    Write) on a device opened with read_only=True: refused before anything was written."""


def make_error(message: str, status: int, errnum: int, dw0: int, dw1: int) -> CsdError:
    """Builds the exception for a libcsd error (called by the C++ bindings): the drive's
    status picks its class; without one, ENOENT is NotFound, EBADF DeviceClosed, EEXIST
    FormatRefused, EROFS ReadOnly and EINVAL (libcsd refusing an argument on the host)
    InvalidArgument."""
    cls: Type[CsdError]
    if status:
        cls = _BY_CODE.get(status & 0x7FF, NvmeStatusError)
    elif errnum == _errno.ENOENT:
        cls = NotFound
    elif errnum == _errno.EBADF:
        cls = DeviceClosed
    elif errnum == _errno.EEXIST:
        cls = FormatRefused
    elif errnum == _errno.EROFS:
        cls = ReadOnly
    elif errnum == _errno.EINVAL:
        cls = InvalidArgument
    else:
        cls = CsdError
    return cls(message, status, errnum, dw0, dw1)
