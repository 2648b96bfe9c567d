"""The exceptions of the nvmeof package, mirroring the C++ core's.

    Error                 base of everything the package raises itself
    +-- ConnectError      connect failed: .cause (why), .step (where)
    +-- TransportError    a queue failed: .code (timeout, queue_error, closed, busy, ...)
    +-- NvmeError         a command completed with an NVMe error status
Bad arguments (ranges, buffers, options) raise ValueError.
"""


class Error(Exception):
    """Base class of the nvmeof exceptions."""


class ConnectError(Error):
    """Connecting failed. `cause` names why (e.g. "connect_status", "no_listener",
    "address_unreachable", "timeout"), `step` the connect step that failed; `errno`
    and `status` (the CQE status field of a failed Fabrics Connect, else None)."""

    def __init__(self, message, *, cause, step, errno=0, status=None):
        super().__init__(message)
        self.cause, self.step, self.errno, self.status = cause, step, errno, status


class TransportError(Error):
    """A request failed without an NVMe status: `code` is "timeout", "queue_error",
    "disconnected", "protocol_error", "closed" or "busy"; `errno` the errno equivalent."""

    def __init__(self, message, *, code, errno=0):
        super().__init__(message)
        self.code, self.errno = code, errno


class NvmeError(Error):
    """A command completed with an NVMe error status: `status` (the CQE status
    field), `sct`, `sc`, `dnr`, `name` (the specification's name) and `command`."""

    def __init__(self, message, *, status, sct, sc, dnr, name, command):
        super().__init__(message)
        self.status, self.sct, self.sc, self.dnr = status, sct, sc, dnr
        self.name, self.command = name, command
