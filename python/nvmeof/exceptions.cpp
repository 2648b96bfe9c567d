// The core's exceptions as Python's (exceptions.hpp).
#include "exceptions.hpp"

#include <string>
#include <string_view>

#include "nvmeof/wire.hpp"

namespace nvmeof_python {

namespace {

// The enumerators' own names: Python code compares them as identifiers (the
// core's *_name() functions give prose for messages).
std::string_view identifier(nvmeof::ConnectFailure cause) {
    using enum nvmeof::ConnectFailure;
    switch (cause) {
        case invalid_options:
            return "invalid_options";
        case bad_source_address:
            return "bad_source_address";
        case address_unreachable:
            return "address_unreachable";
        case no_listener:
            return "no_listener";
        case rejected:
            return "rejected";
        case connect_status:
            return "connect_status";
        case controller_fatal:
            return "controller_fatal";
        case unsupported_controller:
            return "unsupported_controller";
        case negotiation:
            return "negotiation";
        case timeout:
            return "timeout";
        case device_error:
            return "device_error";
        case command_failed:
            return "command_failed";
        case forked_after_use:
            return "forked_after_use";
        case discovery_log:
            return "discovery_log";
        case authentication:
            return "authentication";
        case cancelled:
            return "cancelled";
    }
    return "unknown";
}

std::string_view identifier(nvmeof::TransportErrc code) {
    using enum nvmeof::TransportErrc;
    switch (code) {
        case none:
            return "none";
        case timeout:
            return "timeout";
        case queue_error:
            return "queue_error";
        case disconnected:
            return "disconnected";
        case protocol_error:
            return "protocol_error";
        case closed:
            return "closed";
        case invalid_argument:
            return "invalid_argument";
        case busy:
            return "busy";
        case path_failed:
            return "path_failed";
        case controller_lost:
            return "controller_lost";
        case path_error:
            return "path_error";
    }
    return "unknown";
}

// Raises the nvmeof.errors class `name`, built by its Python constructor.
void raise_python(const char* name, const std::string& message, const py::dict& fields) {
    auto type = py::module_::import("nvmeof.errors").attr(name);
    auto instance = type(message, **fields);
    PyErr_SetObject(type.ptr(), instance.ptr());
}

// The errno a ConnectError raises with. The core's error_number() for every
// cause but an NVMe status at Connect, which it answers ECONNREFUSED (fio's job
// error); Python raises that one as the reference package does, as the NVMe
// status it is (CompletionStatus::error_number(): EIO).
int connect_errno(const nvmeof::ConnectError& e) {
    if (e.cause() == nvmeof::ConnectFailure::connect_status) {
        return nvmeof::CompletionStatus{.nvme = e.status()}.error_number();
    }
    return e.error_number();
}

void raise_connect_error(const nvmeof::ConnectError& e) {
    py::dict f;
    f["cause"] = std::string(identifier(e.cause()));
    f["step"] = e.step();
    f["errno"] = connect_errno(e);
    if (e.cause() != nvmeof::ConnectFailure::connect_status) {
        f["status"] =
            e.status().ok() ? py::object(py::none()) : py::object(py::int_(e.status().cqe_field()));
        raise_python("ConnectError", e.what(), f);
        return;
    }
    const nvmeof::wire::StatusContext connect{nvmeof::wire::kFabricsOpcode,
                                              nvmeof::wire::QueueKind::admin};
    f["status"] = e.status().cqe_field();
    f["sct"] = static_cast<int>(e.status().type());
    f["sc"] = e.status().code();
    f["dnr"] = e.status().do_not_retry();
    f["name"] = std::string(nvmeof::wire::status_name(e.status(), connect));
    raise_python("ConnectStatusError", e.what(), f);
}

}  // namespace

void translate(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const nvmeof::ConnectError& e) {
        raise_connect_error(e);
    } catch (const nvmeof::InvalidArgument& e) {
        raise_python("InvalidArgumentError", e.what(), py::dict());
    } catch (const nvmeof::TransportError& e) {
        if (e.code() == nvmeof::TransportErrc::invalid_argument) {
            raise_python("InvalidArgumentError", e.what(), py::dict());
            return;
        }
        py::dict f;
        f["code"] = std::string(identifier(e.code()));
        // Never 0: the core's errno for a transport failure without one is EIO.
        f["errno"] = nvmeof::CompletionStatus{.transport = e.code(), .sys_errno = e.sys_errno()}
                         .error_number();
        // The reference package's classes for these two, subclasses of ours.
        const char* type = e.code() == nvmeof::TransportErrc::busy      ? "QueueFullError"
                           : e.code() == nvmeof::TransportErrc::timeout ? "CommandTimeoutError"
                                                                        : "TransportError";
        raise_python(type, e.what(), f);
    } catch (const nvmeof::wire::NvmeError& e) {
        py::dict f;
        f["status"] = e.status().cqe_field();
        f["sct"] = static_cast<int>(e.status().type());
        f["sc"] = e.status().code();
        f["dnr"] = e.status().do_not_retry();
        f["command"] = e.command();
        f["name"] = std::string(nvmeof::wire::status_name(e.status(), e.context()));
        // The core's errno: EILSEQ for a failed end-to-end check (as the Linux
        // host reports it), EBADMSG for a Compare Failure, ETOOMANYREFS and
        // EOVERFLOW for the zone resource errors on an I/O queue, else EIO.
        f["errno"] =
            nvmeof::CompletionStatus{.nvme = e.status(), .queue = e.context().queue}.error_number();
        raise_python("NvmeError", e.what(), f);
    } catch (const nvmeof::Error& e) {
        raise_python("Error", e.what(), py::dict());
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    }
}

py::object exception_for(const nvmeof::CompletionStatus& status) {
    if (status.ok()) {
        return py::none();
    }
    try {
        nvmeof::raise_for_status(status);
    } catch (...) {
        translate(std::current_exception());
    }
    py::error_already_set raised;  // takes the error translate() set
    return raised.value();
}

}  // namespace nvmeof_python
