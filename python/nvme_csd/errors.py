"""Exceptions: every failure of the device or the library is a CsdError; NVMe statuses
get a subclass each, carrying the status code and its name."""

import errno as _errno


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


def _status_class(name, code):
    return type(name.replace(" ", ""), (CsdError,), {"status_name": name, "status_code": code,
                                                      "__doc__": f"NVMe status {name} ({code:#05x})."})


InvalidOpcode = _status_class("Invalid Command Opcode", 0x001)
InvalidField = _status_class("Invalid Field in Command", 0x002)
DataTransferError = _status_class("Data Transfer Error", 0x004)
InternalError = _status_class("Internal Error", 0x006)
AbortRequested = _status_class("Command Abort Requested", 0x007)
LbaOutOfRange = _status_class("LBA Out of Range", 0x080)
InvalidProgram = _status_class("Invalid Program", 0x1C0)
InvalidDescriptor = _status_class("Invalid Descriptor", 0x1C1)
SlmOutOfBounds = _status_class("SLM Range Out of Bounds", 0x1C2)
InvalidParameters = _status_class("Invalid Parameters", 0x1C3)
OutputOverflow = _status_class("Output Overflow", 0x1C4)
ProgramFault = _status_class("Program Fault", 0x1C5)

_BY_CODE = {c.status_code: c for c in (InvalidOpcode, InvalidField, DataTransferError, InternalError,
                                       AbortRequested, LbaOutOfRange, InvalidProgram, InvalidDescriptor,
                                       SlmOutOfBounds, InvalidParameters, OutputOverflow, ProgramFault)}


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
