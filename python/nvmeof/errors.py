"""The exceptions of the nvmeof package, mirroring the C++ core's.

    Error                     base of everything the package raises itself
    +-- ConnectError          connect failed: .cause (why), .step (where); an OSError
    |   |                     with the errno of the failure (ECONNREFUSED, EHOSTUNREACH,
    |   |                     ETIMEDOUT, ...)
    |   +-- ConnectStatusError  the Fabrics Connect answered an NVMe status (a wrong
    |                         NQN, a refused host): also an NvmeError, errno EIO
    +-- TransportError        a queue failed: .code (timeout, queue_error, closed, busy,
    |   |                     ...); an OSError with the errno of the failure
    |   |                     (ECONNRESET for a lost connection, ETIMEDOUT, ESHUTDOWN, ...)
    |   +-- QueueFullError       no free slot (also a RuntimeError, as the reference's)
    |   +-- CommandTimeoutError  a command timed out (also a TimeoutError)
    +-- NvmeError             an NVMe error status (also an OSError with errno EIO, EILSEQ
    |                         for a failed end-to-end check, EBADMSG for a Compare
    |                         Failure: the reference package's NVMeStatusError)
    +-- ProtectionError       pi_verify found a block whose protection information does
    |                         not check out (also an OSError with errno EILSEQ)
    +-- InvalidArgumentError  the core refused an argument (a namespace the controller
                              does not have, a range outside it): also a ValueError
Bad arguments checked before anything is sent (negative or too large numbers,
buffers, connect options the core's option rules refuse) raise ValueError, one
line naming the argument.
"""
import errno as _errno


class Error(Exception):
    """Base class of the nvmeof exceptions."""


class ConnectError(Error, OSError):
    """Connecting failed. `cause` names why (e.g. "connect_status", "no_listener",
    "address_unreachable", "timeout"), `step` the connect step that failed; `errno`
    the errno of the failure (ECONNREFUSED: nothing listens or the target refused;
    EHOSTUNREACH: no route or address; ETIMEDOUT; EIO: an NVMe status), so
    ``except OSError`` catches it as it catches the reference package's errors;
    `status` (the CQE status field of a failed Fabrics Connect, else None)."""

    def __init__(self, message, *, cause, step, errno, status=None):
        OSError.__init__(self, errno, message)
        self.cause, self.step, self.status = cause, step, status


class TransportError(Error, OSError):
    """A request failed without an NVMe status: `code` is "timeout", "queue_error",
    "disconnected", "protocol_error", "closed", "busy", "path_failed",
    "controller_lost" or "path_error"; an OSError whose `errno` says the same
    (ETIMEDOUT, EIO, ECONNRESET, EPROTO, ESHUTDOWN, EBUSY, ENOLINK, ENODEV, ...)."""

    def __init__(self, message, *, code, errno):
        OSError.__init__(self, errno, message)
        self.code = code


class InvalidArgumentError(Error, ValueError):
    """The core refused an argument before sending anything: a namespace the
    controller does not have, a range outside the namespace or buffer, an
    operation the controller does not support. A ValueError, as the reference
    package raises for these."""


class QueueFullError(TransportError, RuntimeError):
    """Every command slot of the queue is in use (code "busy")."""

    def __init__(self, message="NVMe submission queue is full", *, code="busy", errno=_errno.EBUSY):
        super().__init__(message, code=code, errno=errno)


class CommandTimeoutError(TransportError, TimeoutError):
    """A command was not answered in time (code "timeout")."""

    def __init__(self, message, *, code="timeout", errno=_errno.ETIMEDOUT):
        TransportError.__init__(self, message, code=code, errno=errno)
        self.args = (message,)


# Media and Data Integrity Errors (SCT 2): the end-to-end guard, application
# tag and reference tag check errors, and Compare Failure.
_SCT_MEDIA = 2
_END_TO_END_CHECK_ERRORS = (0x82, 0x83, 0x84)
_COMPARE_FAILURE = 0x85


def _errno_of(sct, sc):
    """EILSEQ for a failed end-to-end check (as the Linux host reports it),
    EBADMSG for a Compare Failure, else EIO (as the C++ core's error_number())."""
    if sct == _SCT_MEDIA and sc in _END_TO_END_CHECK_ERRORS:
        return _errno.EILSEQ
    if sct == _SCT_MEDIA and sc == _COMPARE_FAILURE:
        return _errno.EBADMSG
    return _errno.EIO


class NvmeError(Error, OSError):
    """A command completed with an NVMe error status: `status` (the CQE status
    field), `sct`, `sc`, `dnr`, `name` (the specification's name), `command` (the
    opcode) and `completion` (a protocol.Completion). An OSError with errno EIO,
    so code written for the reference package's NVMeStatusError catches it;
    errno EILSEQ for a failed end-to-end protection check (SCT 2, SC 0x82 guard,
    0x83 application tag, 0x84 reference tag), whose message names the check;
    EBADMSG for a Compare Failure (SCT 2, SC 0x85: compare_async's future has
    the result False instead, as compare() returns it); on a zoned namespace
    ETOOMANYREFS for Too Many Open Zones and EOVERFLOW for Too Many Active Zones,
    as Linux's block layer reports them (the other zone statuses, Zone Is Full
    and the like, are EIO there too: `name` tells them apart).

    ``NvmeError(completion)`` builds one from a completion, as the reference does."""

    def __init__(self, message, *, status=None, sct=None, sc=None, dnr=None, name=None, command=None,
                 errno=None):
        completion = None
        if not isinstance(message, str):
            completion = message
            status = completion.status_field
            sct, sc, dnr = completion.status_type, completion.status_code, completion.do_not_retry
            message = "NVMe command %d failed: SCT=%d SC=0x%02x%s" % (
                completion.command_id, sct, sc, " DNR" if dnr else "")
        OSError.__init__(self, _errno_of(sct, sc) if errno is None else errno, message)
        self.status, self.sct, self.sc, self.dnr = status, sct, sc, dnr
        self.name, self.command = name, command
        self._completion = completion

    @property
    def completion(self):
        """The failed command's completion (status fields only when the error
        came from a blocking transfer)."""
        if self._completion is None:
            from nvmeof.protocol import Completion
            self._completion = Completion(0, 0, 0, 0, self.status or 0)
        return self._completion


class ProtectionError(Error, OSError):
    """nvmeof.pi_verify found a block whose protection information does not
    check out: `check` ("guard", "apptag", "reftag" or "storage_tag"), `block` (its index in the
    buffer), `lba`, `expected` and `found` (the field's values). An OSError with
    errno EILSEQ, as an NvmeError for the same failure in the controller."""

    def __init__(self, message, *, check, block, lba, expected, found):
        OSError.__init__(self, _errno.EILSEQ, message)
        self.check, self.block, self.lba = check, block, lba
        self.expected, self.found = expected, found


class ConnectStatusError(ConnectError, NvmeError):
    """The Fabrics Connect completed with an NVMe status (cause "connect_status": a
    subsystem NQN the target does not have, a host it does not allow, ...). Both a
    ConnectError and an NvmeError (the reference package's NVMeStatusError, which
    it raises here), with errno EIO and the status's `sct`, `sc`, `dnr`, `name`."""

    def __init__(self, message, *, cause, step, errno, status, sct, sc, dnr, name):
        NvmeError.__init__(self, message, status=status, sct=sct, sc=sc, dnr=dnr, name=name,
                           errno=errno)
        self.cause, self.step = cause, step
