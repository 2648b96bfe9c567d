// The `nvmeof._core` extension: the C++ initiator (core/include/nvmeof) for
// Python. The pure-Python layer (controller.py, rdma.py, protocol.py) gives it
// the reference package's names; this module holds what touches the core:
//   state.hpp      a controller's shared state, its lock and threads
//   buffer.cpp     registered memory (Buffer)
//   namespace_calls.cpp  blocking and asynchronous transfers (Namespace)
//   transfers.cpp  the transfers spread over the I/O queues
//   protection.cpp block formats, PRACT/PRCHK and tags, host-side PI helpers
//   requests.cpp   low-level commands (IoQueue, Request, Response)
//   exceptions.cpp the core's exceptions as Python's
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "arguments.hpp"
#include "buffer.hpp"
#include "exceptions.hpp"
#include "namespace_calls.hpp"
#include "nvmeof/log.hpp"
#include "nvmeof/nvmeof.hpp"
#include "nvmeof/wire.hpp"
#include "protection_calls.hpp"
#include "requests.hpp"
#include "state.hpp"

namespace nvmeof_python {

ControllerState::~ControllerState() {
    tracked.clear();  // Python objects, held by the GIL's owner: before the controller goes
    completed.clear();
    if (PyGILState_Check() != 0) {
        py::gil_scoped_release no_gil;  // the threads being stopped may be waiting for it
        shut_down();
    } else {
        shut_down();
    }
    if (auto finished = transfers.take_finished(); !finished.empty()) {
        deliver(std::move(finished));  // takes the GIL itself
    }
}

nvmeof::Controller& ControllerState::open() {
    if (controller && !closed && (controller->is_open() || controller->is_reconnecting())) {
        return *controller;
    }
    if (controller && controller->reconnect_stats().lost) {
        throw nvmeof::TransportError(nvmeof::TransportErrc::controller_lost, ENODEV,
                                     "the controller was given up after its outage: " +
                                         controller->reconnect_stats().lost_reason);
    }
    if (controller && !closed) {
        throw nvmeof::TransportError(
            nvmeof::TransportErrc::disconnected, ENOTCONN,
            "the controller failed (a queue or its keep-alive failed: the target is gone "
            "or stopped answering) and, with ctrl_loss_tmo_ms 0, is not reconnected: "
            "close it and connect again");
    }
    throw nvmeof::TransportError(nvmeof::TransportErrc::closed, ESHUTDOWN,
                                 "the controller is closed");
}

void ControllerState::shut_down() {
    stop_progress(*this);
    keeper.reset();  // joins its thread, which takes `mutex`: not held here
    std::lock_guard lock(mutex);
    closed = true;
    if (controller) {
        controller->close();
    }
    nvmeof::CompletionStatus gone;
    gone.transport = nvmeof::TransportErrc::closed;
    gone.sys_errno = ESHUTDOWN;
    transfers.fail_all(gone);
}

void ControllerState::close() {
    {
        py::gil_scoped_release no_gil;
        shut_down();
    }
    deliver(transfers.take_finished());  // futures still pending fail "closed"
    sweep_requests(*this);               // their queues are gone: the buffers are free to close
}

namespace {

struct PyController {
    StatePtr state = std::make_shared<ControllerState>();

    void close() { state->close(); }
};

// Diagnostics to Python's `logging` (logger "nvmeof"). The core may log from
// any thread, with a controller's lock held, so the sink only queues the line
// and asks the interpreter to hand it over at its next opportunity.
struct LogQueue {
    std::mutex mutex;
    std::deque<std::pair<nvmeof::LogLevel, std::string>> lines;
    bool scheduled = false;
};
LogQueue log_queue;

int flush_log_lines(void*) {
    std::deque<std::pair<nvmeof::LogLevel, std::string>> lines;
    {
        std::lock_guard lock(log_queue.mutex);
        lines.swap(log_queue.lines);
        log_queue.scheduled = false;
    }
    try {
        const auto logger = py::module_::import("logging").attr("getLogger")("nvmeof");
        for (const auto& [level, line] : lines) {
            logger.attr(level == nvmeof::LogLevel::error ? "warning" : "debug")(line);
        }
    } catch (py::error_already_set& error) {
        error.discard_as_unraisable("nvmeof: logging");
    }
    return 0;
}

void queue_log_line(nvmeof::LogLevel level, std::string_view line, void*) {
    std::lock_guard lock(log_queue.mutex);
    log_queue.lines.emplace_back(level, std::string(line));
    if (!log_queue.scheduled) {
        log_queue.scheduled = Py_AddPendingCall(flush_log_lines, nullptr) == 0;
    }
}

nvmeof::wire::HostId parse_host_id(const std::string& text) {
    core_rule([&] { nvmeof::check_host_id(text, "host_id"); });
    nvmeof::wire::HostId id{};
    nvmeof::parse_uuid(text, id);
    return id;
}

PyController connect(const std::string& target, const std::string& subsystem_nqn,
                     const py::object& port_arg, std::optional<std::string> host_id,
                     std::optional<std::string> host_nqn, const py::object& queue_depth_arg,
                     const py::object& keep_alive_ms_arg, double timeout,
                     std::optional<std::string> source, const py::object& ctrl_loss_tmo_ms_arg,
                     const py::object& reconnect_delay_ms_arg,
                     const py::object& fast_io_fail_tmo_ms_arg, const py::object& io_queues_arg,
                     const py::object& transport_arg, bool hdr_digest, bool data_digest) {
    // Seconds, a float: what the core's rule (at least 1 ms) cannot see. Rounded
    // up, so a positive number of seconds is never 0 ms.
    if (!(timeout > 0.0) || !std::isfinite(timeout)) {
        throw py::value_error("timeout must be a positive number of seconds");
    }
    // Python ints as the fields' types; the values' rules are the core's, below.
    const auto port = argument<std::uint16_t>(port_arg, "port");
    // Above the controller's limits it is negotiated down, as the reference does.
    const auto queue_depth = argument<std::uint16_t>(queue_depth_arg, "queue_depth");
    const auto keep_alive_ms = argument<std::uint32_t>(keep_alive_ms_arg, "keep_alive_ms");
    const auto ctrl_loss_tmo_ms = argument<std::uint32_t>(ctrl_loss_tmo_ms_arg, "ctrl_loss_tmo_ms");
    const auto reconnect_delay_ms =
        argument<std::uint32_t>(reconnect_delay_ms_arg, "reconnect_delay_ms");
    const auto fast_io_fail_tmo_ms =
        argument<std::uint32_t>(fast_io_fail_tmo_ms_arg, "fast_io_fail_tmo_ms");
    const auto io_queues = argument<std::uint32_t>(io_queues_arg, "io_queues");
    const nvmeof::Transport transport = transport_argument(transport_arg, "transport");
    nvmeof::Options options{
        .target = target, .subsystem_nqn = subsystem_nqn, .port = port, .transport = transport};
    if (transport == nvmeof::Transport::tcp) {  // RDMA has no PDUs to digest
        options.header_digest = hdr_digest;
        options.data_digest = data_digest;
    }
    options.source = source.value_or("");
    options.queue_depth = queue_depth;
    options.io_queues = io_queues;
    options.keep_alive_ms = keep_alive_ms;
    options.timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout * 1000.0)));
    options.ctrl_loss_tmo = std::chrono::milliseconds(ctrl_loss_tmo_ms);
    options.reconnect_delay = std::chrono::milliseconds(reconnect_delay_ms);
    options.fast_io_fail_tmo = std::chrono::milliseconds(fast_io_fail_tmo_ms);
    // The documented defaults: a random host ID, and a host NQN derived from it.
    nvmeof::wire::HostId id{};
    if (host_id) {
        id = parse_host_id(*host_id);
    } else {
        id = nvmeof::resolve_host_identity({.random_host_id = true}).id;
    }
    options.host_id = nvmeof::format_uuid(id);
    options.host_nqn = host_nqn.value_or(nvmeof::host_nqn_from_id(id));
    // Refused here as a ValueError naming the argument, before anything connects.
    core_rule([&] { nvmeof::validate(options, kConnectArgumentNames); });

    // The connect waits with the GIL released, so Python's signal handlers
    // (Ctrl-C's KeyboardInterrupt) would run only once it returned: the core
    // asks this hook while it waits, and one that raised cancels the connect.
    struct Interrupt {
        std::optional<py::error_already_set> error;  // touched with the GIL held
    };
    const auto interrupt = std::make_shared<Interrupt>();
    auto cancelled = [interrupt] {
        py::gil_scoped_acquire gil;
        if (!interrupt->error && PyErr_CheckSignals() != 0) {
            interrupt->error.emplace();  // takes the raised exception
        }
        return interrupt->error.has_value();
    };
    const auto raise_interrupt = [&interrupt] {
        py::error_already_set error = std::move(*interrupt->error);
        interrupt->error.reset();
        throw error;
    };
    PyController result;
    try {
        py::gil_scoped_release no_gil;
        result.state->controller.emplace(nvmeof::Controller::connect(options, cancelled));
    } catch (const nvmeof::ConnectError& e) {
        if (e.cause() == nvmeof::ConnectFailure::cancelled && interrupt->error) {
            raise_interrupt();  // the connect released what it made
        }
        throw;
    }
    if (interrupt->error) {  // a handler raised after the connect's last wait
        {
            py::gil_scoped_release no_gil;
            result.state->controller.reset();
        }
        raise_interrupt();
    }
    if (keep_alive_ms != 0 || ctrl_loss_tmo_ms != 0) {
        // Python code may sit idle between calls: keep-alive and reconnecting
        // run from a thread of the core, under the controller's lock.
        result.state->keeper.emplace(*result.state->controller, result.state->mutex);
    }
    return result;
}

py::dict reconnect_dict(const nvmeof::ReconnectStats& r) {
    py::dict d;
    d["reconnects"] = r.reconnects;
    d["failed_attempts"] = r.failed_attempts;
    py::list outages;
    for (const auto& outage : r.outages) {
        outages.append(outage.count());
    }
    d["outages_ms"] = outages;
    d["transfers_retried"] = r.transfers_retried;
    d["transfers_failed"] = r.transfers_failed;
    d["ana_moves"] = r.ana_moves;
    d["path"] = r.path;
    d["reconnecting"] = r.reconnecting;
    d["lost"] = r.lost;
    d["lost_reason"] = r.lost_reason;
    return d;
}

py::dict limits_dict(const nvmeof::Limits& l) {
    py::dict d;
    d["queue_size"] = l.queue_size;
    d["usable_slots"] = l.usable_slots;
    d["io_queues"] = l.io_queues;
    d["mdts_bytes"] = l.mdts_bytes;
    d["max_transfer_bytes"] = l.max_transfer_bytes;
    d["cntlid"] = l.cntlid;
    d["namespaces"] = l.namespaces;
    d["oncs"] = l.oncs;
    d["keep_alive_ms"] = l.keep_alive_ms;
    d["kas_ms"] = l.kas_ms;
    d["maxcmd"] = l.maxcmd;
    d["mqes_entries"] = l.mqes_entries;
    d["queue_size_limit"] = l.queue_size_limit;
    d["source_address"] = l.source_address;
    d["device_name"] = l.device_name;
    d["target_address"] = l.target_address;
    d["subsystem_nqn"] = l.subsystem_nqn;
    d["host_nqn"] = l.host_nqn;
    d["host_id"] = l.host_id;
    d["model"] = l.model;
    d["serial"] = l.serial;
    d["firmware"] = l.firmware;
    d["io_command_sets"] = l.io_command_sets;  // CC.CSS 110b: zoned namespaces served
    return d;
}

}  // namespace

}  // namespace nvmeof_python

PYBIND11_MODULE(_core, m) {
    using namespace nvmeof_python;
    m.doc() = "The C++ core of the nvmeof package (use `import nvmeof`).";
    py::register_exception_translator(translate);
    nvmeof::set_log_sink(queue_log_line, nullptr);
    m.def(
        "flush_log", [] { flush_log_lines(nullptr); },
        "Hands the library's queued diagnostics to logging now.");

    py::class_<nvmeof::wire::Sqe>(m, "Command", "A 64-byte NVMe submission queue entry, decoded.")
        .def(py::init([](const py::bytes& data) {
                 const std::string bytes = data;
                 if (bytes.size() != sizeof(nvmeof::wire::Sqe)) {
                     throw py::value_error("a Command is exactly 64 bytes");
                 }
                 nvmeof::wire::Sqe sqe{};
                 std::memcpy(&sqe, bytes.data(), sizeof sqe);
                 return sqe;
             }),
             py::arg("data"))
        .def_readonly("opcode", &nvmeof::wire::Sqe::opcode)
        .def_readonly("nsid", &nvmeof::wire::Sqe::nsid)
        .def_readonly("cdw10", &nvmeof::wire::Sqe::cdw10)
        .def_readonly("cdw11", &nvmeof::wire::Sqe::cdw11)
        .def_readonly("cdw12", &nvmeof::wire::Sqe::cdw12)
        .def("__bytes__", [](const nvmeof::wire::Sqe& sqe) {
            return py::bytes(reinterpret_cast<const char*>(&sqe), sizeof sqe);
        });

    bind_protection(m);
    bind_buffer(m);
    bind_namespace(m);
    bind_requests(m);

    py::class_<PyController>(m, "Controller",
                             "An NVMe-oF controller association, over RDMA or TCP (core).")
        .def_static("connect", &connect, py::arg("target"), py::arg("subsystem_nqn"), py::kw_only(),
                    py::arg("port") = nvmeof::wire::kDefaultPort, py::arg("host_id") = py::none(),
                    py::arg("host_nqn") = py::none(),
                    py::arg("queue_depth") = nvmeof::kDefaultQueueDepth,
                    py::arg("keep_alive_ms") = 0, py::arg("timeout") = 30.0,
                    py::arg("source") = py::none(), py::arg("ctrl_loss_tmo_ms") = 0,
                    py::arg("reconnect_delay_ms") = 10000, py::arg("fast_io_fail_tmo_ms") = 0,
                    py::arg("io_queues") = 1, py::arg("transport") = "rdma",
                    py::arg("hdr_digest") = false, py::arg("data_digest") = false,
                    "Connects; see nvmeof.Controller for the options. Releases the GIL; Ctrl-C "
                    "interrupts it within about 50 ms.")
        .def("close", &PyController::close,
             "Shuts the controller down and deregisters its buffers. Idempotent.")
        .def_property_readonly(
            "closed", [](PyController& c) { return c.state->closed.load(); },
            "True once close() was called (not after a failure).")
        .def_property_readonly("is_open",
                               [](PyController& c) {
                                   py::gil_scoped_release no_gil;
                                   std::lock_guard lock(c.state->mutex);
                                   return c.state->controller && !c.state->closed &&
                                          c.state->controller->is_open();
                               })
        .def_property_readonly("limits",
                               [](PyController& c) {
                                   return limits_dict(locked(c.state, [](nvmeof::Controller& ctrl) {
                                       return ctrl.limits();
                                   }));
                               })
        .def_property_readonly(
            "reconnect_stats",
            [](PyController& c) {
                nvmeof::ReconnectStats stats;  // readable after the controller was given up
                {
                    py::gil_scoped_release no_gil;
                    std::lock_guard lock(c.state->mutex);
                    if (c.state->controller) {
                        stats = c.state->controller->reconnect_stats();
                    }
                }
                return reconnect_dict(stats);
            })
        .def_property_readonly(
            "keep_alive_services",
            [](PyController& c) -> unsigned long long {
                return c.state->keeper ? c.state->keeper->services() : 0;
            },
            "How often the background keep-alive has run.")
        .def(
            "namespace",
            [](PyController& c, const py::object& nsid_arg) {
                const auto nsid = argument<std::uint32_t>(nsid_arg, "nsid");
                return make_namespace(c.state, locked(c.state, [&](nvmeof::Controller& ctrl) {
                                          return ctrl.namespace_at(nsid);
                                      }));
            },
            py::arg("nsid"))
        .def(
            "allocate",
            [](PyController& c, const py::object& length) {
                return allocate_buffer(c.state, argument<std::size_t>(length, "length"));
            },
            py::arg("length"))
        .def(
            "register",
            [](PyController& c, const py::object& object) {
                return register_buffer(c.state, object);
            },
            py::arg("obj"))
        .def(
            "register_gpu",
            [](PyController& c, const py::object& object) {
                return register_gpu_buffer(c.state, object);
            },
            py::arg("array"))
        .def(
            "io_queue",
            [](PyController& c, const py::object& index_arg) {
                const auto index = argument<std::size_t>(index_arg, "index");
                const std::size_t count =
                    locked(c.state, [](nvmeof::Controller& ctrl) { return ctrl.io_queue_count(); });
                if (index >= count) {
                    throw py::index_error("I/O queue " + std::to_string(index) +
                                          ": the controller has " + std::to_string(count));
                }
                return make_queue(c.state, static_cast<int>(index));
            },
            py::arg("index"))
        .def_property_readonly("io_queue_count",
                               [](PyController& c) {
                                   return locked(c.state, [](nvmeof::Controller& ctrl) {
                                       return ctrl.io_queue_count();
                                   });
                               })
        .def_property_readonly("admin", [](PyController& c) { return make_queue(c.state, -1); });

    py::module_ wire = m.def_submodule("wire", "NVMe constants.");
    wire.attr("OPC_FLUSH") = static_cast<int>(nvmeof::wire::IoOpcode::flush);
    wire.attr("OPC_WRITE") = static_cast<int>(nvmeof::wire::IoOpcode::write);
    wire.attr("OPC_READ") = static_cast<int>(nvmeof::wire::IoOpcode::read);
    m.def(
        "status_name",
        [](std::uint16_t status, std::uint8_t opcode) {
            return std::string(
                nvmeof::wire::status_name(nvmeof::wire::Status::from_cqe_field(status),
                                          {opcode, nvmeof::wire::QueueKind::io}));
        },
        py::arg("status"), py::arg("opcode") = 0,
        "The specification's name of a CQE status field.");
}
