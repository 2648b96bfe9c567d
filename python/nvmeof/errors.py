"""The exceptions of the nvmeof package, mirroring the C++ core's.

    Error                   base of everything the package raises itself
    +-- ConnectError        connect failed: .cause (why), .step (where)
    +-- TransportError      a queue failed: .code (timeout, queue_error, closed, busy, ...)
    |   +-- QueueFullError       no free slot (also a RuntimeError, as the reference's)
    |   +-- CommandTimeoutError  a command timed out (also a TimeoutError)
    +-- NvmeError           an NVMe error status (also an OSError with errno EIO, EILSEQ
    |                       for a failed end-to-end check, EBADMSG for a Compare
    |                       Failure: the reference package's NVMeStatusError)
    +-- ProtectionError     pi_verify found a block whose protection information does
                            not check out (also an OSError with errno EILSEQ)
Bad arguments (ranges, buffers, options) raise ValueError.
"""
import errno as _errno


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
    "disconnected", "protocol_error", "closed", "busy", "path_failed",
    "controller_lost" or "path_error"; `errno` the errno equivalent."""

    def __init__(self, message, *, code, errno=0):
        super().__init__(message)
        self.code, self.errno = code, errno


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
    the result False instead, as compare() returns it).

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
