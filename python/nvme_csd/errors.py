# SPDX-License-Identifier: MIT
"""Exceptions: every failure of the device or the library is a CsdError; NVMe statuses
get a subclass each, carrying the status code and its name. The standard front end's
statuses (front_end="nvme-cs") get theirs too, under the vendor class of the same meaning
where there is one (Invalid Program Index is an InvalidProgram), so that code catching the
vendor classes works on either front end."""

import errno as _errno

from .wire import NVME_CS_STATUS_CODES, STATUS_CODES


class CsdError(Exception):
    """A libcsd failure: `status` (NVMe status field, 0 if none), `status_name`, `errno`,
    and the completion's `dw0` / `dw1` (filter's Output Overflow: bytes needed, matches)."""

    status_name = None

    def __init__(self, message, status=0, errno=0, dw0=0, dw1=0):
        super().__init__(message)
        self.status = status
        self.errno = errno
        self.dw0 = dw0
        self.dw1 = dw1

    @property
    def code(self):
        """Status code type and status code, without the Do Not Retry bit."""
        return self.status & 0x7FF


def _status_class(class_name, status_name):
    code = STATUS_CODES[status_name]
    return type(class_name, (CsdError,), {"status_name": status_name, "status_code": code,
                                          "__doc__": f"NVMe status {status_name} ({code:#05x})."})


InvalidOpcode = _status_class("InvalidOpcode", "Invalid Command Opcode")
InvalidField = _status_class("InvalidField", "Invalid Field in Command")
DataTransferError = _status_class("DataTransferError", "Data Transfer Error")
InternalError = _status_class("InternalError", "Internal Error")
AbortRequested = _status_class("AbortRequested", "Command Abort Requested")
LbaOutOfRange = _status_class("LbaOutOfRange", "LBA Out of Range")
InvalidProgram = _status_class("InvalidProgram", "Invalid Program")
InvalidDescriptor = _status_class("InvalidDescriptor", "Invalid Descriptor")
SlmOutOfBounds = _status_class("SlmOutOfBounds", "SLM Range Out of Bounds")
InvalidParameters = _status_class("InvalidParameters", "Invalid Parameters")
OutputOverflow = _status_class("OutputOverflow", "Output Overflow")
ProgramFault = _status_class("ProgramFault", "Program Fault")
InvalidProgramImage = _status_class("InvalidProgramImage", "Invalid Program Image")
ProgramSlotInUse = _status_class("ProgramSlotInUse", "Program Slot In Use")
ProgramLoadBytesExceeded = _status_class("ProgramLoadBytesExceeded", "Program Load Bytes Exceeded")
HopLimitExceeded = _status_class("HopLimitExceeded", "Hop Limit Exceeded")

_BY_CODE = {c.status_code: c for c in (InvalidOpcode, InvalidField, DataTransferError, InternalError,
                                       AbortRequested, LbaOutOfRange, InvalidProgram, InvalidDescriptor,
                                       SlmOutOfBounds, InvalidParameters, OutputOverflow, ProgramFault,
                                       InvalidProgramImage, ProgramSlotInUse, ProgramLoadBytesExceeded,
                                       HopLimitExceeded)}

# The standard front end's statuses: a class each, named after the status ("Program Not
# Activated" -> ProgramNotActivated), under the vendor class of the same meaning.
_NVME_CS_BASES = {"Invalid Program Index": InvalidProgram, "No Program": InvalidProgram,
                  "Invalid Memory Range Set": SlmOutOfBounds, "Program Too Big": InvalidProgramImage,
                  "Invalid Program Data": InvalidProgramImage, "Program In Use": ProgramSlotInUse}
for _name, _code in NVME_CS_STATUS_CODES.items():
    _cls = type(_name.title().replace(" ", ""), (_NVME_CS_BASES.get(_name, CsdError),),
                {"status_name": _name, "status_code": _code,
                 "__doc__": f"NVMe status {_name} ({_code:#05x}), standard front end."})
    globals()[_cls.__name__] = _cls
    _BY_CODE[_code] = _cls


class NotFound(CsdError, KeyError):
    """No such object in the store (also a KeyError, as a mapping should raise)."""

    def __str__(self):
        return Exception.__str__(self)


class DeviceClosed(CsdError):
    """The device was closed."""


def make_error(message, status, errnum, dw0, dw1):
    """Builds the exception for a libcsd error (called by the C++ bindings)."""
    if status:
        cls = _BY_CODE.get(status & 0x7FF, CsdError)
    elif errnum == _errno.ENOENT:
        cls = NotFound
    elif errnum == _errno.EBADF:
        cls = DeviceClosed
    else:
        cls = CsdError
    return cls(message, status, errnum, dw0, dw1)
