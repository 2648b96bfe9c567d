// The exceptions of the connect and control paths, and the status a completion
// carries on the non-blocking data path (which never throws).
//
//   nvmeof::Error                 base of everything this library throws itself
//   ├── InvalidArgument           bad options, LBA range, buffer or memory handle
//   ├── ConnectError              connect failed; cause() says why, step() where
//   └── TransportError            a queue failed (timeout, QP error, disconnect)
//   nvmeof::wire::NvmeError       a command completed with an NVMe error status
//                                 (std::runtime_error; see wire/status.hpp)
//
// The base layer's: memory, transport and GPU code raise them as the host does.
// Programs include nvmeof/errors.hpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nvmeof/wire/status.hpp"

namespace nvmeof {

class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error {
  public:
    using Error::Error;
};

enum class ConnectFailure : std::uint8_t {
    invalid_options,         // the Options themselves (NQN too long, keep-alive > 0, ...)
    bad_source_address,      // the source address is not local or not an RDMA device
    address_unreachable,     // address or route resolution failed, or CM UNREACHABLE
    no_listener,             // the peer answered but nothing listens (CM REJECTED, status 8)
    rejected,                // the target rejected the CM request (NVMe/RDMA reject status)
    connect_status,          // the Fabrics Connect completed with an NVMe status
    controller_fatal,        // CSTS.CFS set while enabling
    unsupported_controller,  // Identify says the controller cannot work with this host
    negotiation,             // queue sizes could not be agreed (e.g. CRQSIZE too small)
    timeout,                 // a step did not finish within its deadline; step() names it
    device_error,            // a verbs/CM call failed (errno in sys_errno())
    command_failed,          // an admin command during bring-up failed
    forked_after_use,        // this process was forked from one that had used RDMA
    discovery_log,           // the discovery log was malformed or kept changing while read
    authentication,          // DH-HMAC-CHAP failed, or the target requires it and no key was set
    cancelled,               // the caller's `cancelled` hook said so (Controller::connect)
};

std::string_view connect_failure_name(ConnectFailure cause);

struct ConnectErrorDetails {
    int sys_errno = 0;
    std::uint16_t reject_status = 0;  // NVMe/RDMA CM reject STS, when cause == rejected
    int cm_status = 0;                // RDMA-CM event status
    wire::Status status{};            // when cause == connect_status / command_failed
    std::uint32_t result = 0;         // CQE DW0 (Connect IPO/IATTR)
};

class ConnectError : public Error {
  public:
    using Details = ConnectErrorDetails;
    ConnectError(ConnectFailure cause, std::string step, const std::string& message,
                 Details details = {});

    ConnectFailure cause() const { return cause_; }
    const std::string& step() const { return step_; }
    int sys_errno() const { return details_.sys_errno; }
    std::uint16_t reject_status() const { return details_.reject_status; }
    int cm_status() const { return details_.cm_status; }
    wire::Status status() const { return details_.status; }
    std::uint32_t result() const { return details_.result; }
    // An errno for callers that speak errno (fio's job error): sys_errno() when
    // a system call failed, else the nearest errno to the cause (ECONNREFUSED
    // for nothing listening, ETIMEDOUT, EHOSTUNREACH, EACCES, ...).
    int error_number() const noexcept;

  private:
    ConnectFailure cause_;
    std::string step_;
    Details details_;
};

// Why a request failed without an NVMe status.
enum class TransportErrc : std::uint8_t {
    none = 0,
    timeout,           // the target did not answer within the request deadline
    queue_error,       // a work completion failed (QP error, peer gone, retry exceeded)
    disconnected,      // the connection was closed
    protocol_error,    // the target answered with an unknown or duplicate command ID
    closed,            // the queue or controller was closed
    invalid_argument,  // range, buffer or memory handle refused before submission
    busy,              // no free command slot (low-level submit)
    path_failed,       // reconnecting, and fast_io_fail_tmo has passed (ENOLINK)
    controller_lost,   // reconnecting gave up: ctrl_loss_tmo passed, or the controller no
                       // longer fits what was negotiated (ENODEV)
    path_error,        // the target answered a path-related status (SCT 3, e.g. ANA
                       // inaccessible): the queue is given up so its I/Os move path (ENOLINK)
};

std::string_view transport_errc_name(TransportErrc code);

class TransportError : public Error {
  public:
    TransportError(TransportErrc code, int sys_errno, const std::string& message);
    TransportErrc code() const { return code_; }
    int sys_errno() const { return sys_errno_; }

  private:
    TransportErrc code_;
    int sys_errno_;
};

// The outcome of one request or transfer: an NVMe status, or a transport error.
struct CompletionStatus {
    wire::Status nvme{};
    TransportErrc transport = TransportErrc::none;
    int sys_errno = 0;        // errno equivalent of a transport error
    std::uint8_t opcode = 0;  // the command that failed (for names)
    wire::QueueKind queue = wire::QueueKind::io;

    bool ok() const noexcept { return transport == TransportErrc::none && nvme.ok(); }
    // A Compare's "the blocks differ" (Compare Failure, SCT 2 SC 0x85): the
    // blocking calls answer it false rather than throw.
    bool miscompare() const noexcept {
        return transport == TransportErrc::none && nvme.is(wire::MediaStatus::compare_failure);
    }
    // Zone Invalid Write (SCT 1 SC 0xBC): a write not at its zone's write
    // pointer, as a write re-sent after it had already moved the pointer is.
    bool zone_invalid_write() const noexcept {
        return transport == TransportErrc::none && nvme.is(wire::ZonedStatus::zone_invalid_write);
    }
    // An errno for callers that speak errno (fio, Python's OSError): 0; EILSEQ
    // for a failed end-to-end check (SCT 2 SC 0x82-0x84), EBADMSG for a
    // Compare Failure (SCT 2 SC 0x85: the blocks differ from the buffer), on
    // an I/O queue ETOOMANYREFS for Too Many Open Zones (SCT 1 SC 0xBE) and
    // EOVERFLOW for Too Many Active Zones (0xBD), as Linux's block layer
    // reports them; EIO for any other NVMe error (the other zone statuses
    // among them, as in Linux); or the transport's.
    int error_number() const noexcept;
};

// "Read: LBA Out of Range (SCT 0x0 SC 0x80, DNR)" or "timeout: ...".
std::string describe(const CompletionStatus& status);
// Throws wire::NvmeError or TransportError unless status.ok().
void raise_for_status(const CompletionStatus& status);

}  // namespace nvmeof
