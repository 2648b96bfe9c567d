#include "nvmeof/base/errors.hpp"

#include <cerrno>
#include <cstring>

namespace nvmeof {

std::string_view connect_failure_name(ConnectFailure cause) {
    switch (cause) {
        case ConnectFailure::invalid_options:
            return "invalid options";
        case ConnectFailure::bad_source_address:
            return "bad source address";
        case ConnectFailure::address_unreachable:
            return "address unreachable";
        case ConnectFailure::no_listener:
            return "no listener";
        case ConnectFailure::rejected:
            return "connection rejected";
        case ConnectFailure::connect_status:
            return "Fabrics Connect failed";
        case ConnectFailure::controller_fatal:
            return "controller fatal status";
        case ConnectFailure::unsupported_controller:
            return "unsupported controller";
        case ConnectFailure::negotiation:
            return "negotiation failed";
        case ConnectFailure::timeout:
            return "timeout";
        case ConnectFailure::device_error:
            return "RDMA device error";
        case ConnectFailure::command_failed:
            return "admin command failed";
        case ConnectFailure::forked_after_use:
            return "process forked after RDMA use";
        case ConnectFailure::discovery_log:
            return "discovery log unreadable";
        case ConnectFailure::authentication:
            return "authentication failed";
        case ConnectFailure::cancelled:
            return "cancelled";
    }
    return "unknown";
}

ConnectError::ConnectError(ConnectFailure cause, std::string step, const std::string& message,
                           Details details)
    : Error("connect failed: " + std::string(connect_failure_name(cause)) + " at " + step + ": " +
            message),
      cause_(cause),
      step_(std::move(step)),
      details_(details) {}

int ConnectError::error_number() const noexcept {
    if (details_.sys_errno != 0) {
        return details_.sys_errno;
    }
    switch (cause_) {
        case ConnectFailure::invalid_options:
            return EINVAL;
        case ConnectFailure::bad_source_address:
            return EADDRNOTAVAIL;
        case ConnectFailure::address_unreachable:
            return EHOSTUNREACH;
        case ConnectFailure::no_listener:
        case ConnectFailure::rejected:
        case ConnectFailure::connect_status:
            return ECONNREFUSED;
        case ConnectFailure::unsupported_controller:
            return EOPNOTSUPP;
        case ConnectFailure::negotiation:
        case ConnectFailure::discovery_log:
            return EPROTO;
        case ConnectFailure::timeout:
            return ETIMEDOUT;
        case ConnectFailure::device_error:
            return ENODEV;
        case ConnectFailure::forked_after_use:
            return EPERM;
        case ConnectFailure::authentication:
            return EACCES;
        case ConnectFailure::cancelled:
            return ECANCELED;
        case ConnectFailure::controller_fatal:
        case ConnectFailure::command_failed:
            break;
    }
    return EIO;
}

std::string_view transport_errc_name(TransportErrc code) {
    switch (code) {
        case TransportErrc::none:
            return "none";
        case TransportErrc::timeout:
            return "timeout";
        case TransportErrc::queue_error:
            return "queue error";
        case TransportErrc::disconnected:
            return "disconnected";
        case TransportErrc::protocol_error:
            return "protocol error";
        case TransportErrc::closed:
            return "closed";
        case TransportErrc::invalid_argument:
            return "invalid argument";
        case TransportErrc::busy:
            return "no free command ID";
        case TransportErrc::path_failed:
            return "path failed (fast_io_fail_tmo passed while reconnecting)";
        case TransportErrc::controller_lost:
            return "controller lost (reconnecting gave up)";
        case TransportErrc::path_error:
            return "path error (the target cannot serve the namespace through this path)";
    }
    return "unknown";
}

TransportError::TransportError(TransportErrc code, int sys_errno, const std::string& message)
    : Error(message), code_(code), sys_errno_(sys_errno) {}

int CompletionStatus::error_number() const noexcept {
    if (transport != TransportErrc::none) {
        return sys_errno != 0 ? sys_errno : EIO;
    }
    if (nvme.is_end_to_end_check_error()) {
        return EILSEQ;  // as the Linux host reports protection errors
    }
    if (miscompare()) {
        return EBADMSG;  // the data differs: neither an I/O error nor a PI error
    }
    // The zone resource errors, as Linux's block layer reports them
    // (BLK_STS_ZONE_OPEN_RESOURCE, BLK_STS_ZONE_ACTIVE_RESOURCE): closing or
    // finishing a zone cures them. Every other zone status is EIO there too.
    if (queue == wire::QueueKind::io) {
        if (nvme.is(wire::ZonedStatus::too_many_open_zones)) {
            return ETOOMANYREFS;
        }
        if (nvme.is(wire::ZonedStatus::too_many_active_zones)) {
            return EOVERFLOW;
        }
    }
    return nvme.ok() ? 0 : EIO;
}

std::string describe(const CompletionStatus& status) {
    const std::string command(wire::command_name(status.opcode, status.queue));
    if (status.transport != TransportErrc::none) {
        std::string text = command + ": " + std::string(transport_errc_name(status.transport));
        if (status.sys_errno != 0) {
            text += " (" + std::string(std::strerror(status.sys_errno)) + ")";
        }
        return text;
    }
    return command + ": " + wire::describe(status.nvme, {status.opcode, status.queue});
}

void raise_for_status(const CompletionStatus& status) {
    if (status.ok()) {
        return;
    }
    if (status.transport != TransportErrc::none) {
        throw TransportError(status.transport, status.sys_errno, describe(status));
    }
    throw wire::NvmeError(status.nvme, wire::command_name(status.opcode, status.queue),
                          {status.opcode, status.queue});
}

}  // namespace nvmeof
