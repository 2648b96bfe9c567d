// Low-level commands from Python (requests.hpp). The names and behaviour follow
// the reference package's RDMAQueue: submit() returns a Request, poll() returns
// the requests it saw finish, execute() submits and waits.
#include <pybind11/stl.h>

#include "requests.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/queue.hpp"
#include "nvmeof/wire.hpp"

namespace nvmeof_python {

namespace {

constexpr int kAdminQueue = -1;

// A low-level request. Its Python Request holds it, and so does the
// controller's tracked list until a poll saw it done.
struct RequestEntry {
    ControllerState* state;
    int queue;
    std::optional<nvmeof::Request> request;
    std::optional<nvmeof::Response> response;  // once done; the slot is recycled then
    py::object data_owner;                     // kept alive while the entry exists
    bool owner_counted = false;                // counted in the owner's `requests`

    RequestEntry(ControllerState* owning_state, int queue_index, py::object owner)
        : state(owning_state), queue(queue_index), data_owner(std::move(owner)) {}
    RequestEntry(const RequestEntry&) = delete;
    RequestEntry& operator=(const RequestEntry&) = delete;
    // Destroyed with the GIL held; the core is let go of with its lock held.
    ~RequestEntry() {
        if (request) {
            py::gil_scoped_release no_gil;
            std::lock_guard lock(state->mutex);
            request.reset();
        }
    }
    // With the controller's lock held.
    bool check_done() {
        if (response) {
            return true;
        }
        if (request && request->done()) {
            response = request->response();
            request.reset();
            return true;
        }
        return false;
    }
    // The owner's count, given back once (with the GIL held).
    void release_owner() {
        if (owner_counted) {
            --data_owner.cast<Buffer&>().requests;
            owner_counted = false;
        }
    }
};

struct PyResponse {
    nvmeof::Response response;

    // The reference's Completion.status: the status field without its phase bit.
    std::uint16_t status() const { return static_cast<std::uint16_t>(status_field() >> 1); }
    std::uint16_t status_field() const { return response.status.nvme.cqe_field(); }
    // The fields the reference's Completion (a dataclass) prints, in its order.
    std::string repr() const {
        return "Response(result=" + std::to_string(response.cqe.result64()) +
               ", sq_head=" + std::to_string(response.cqe.sq_head) +
               ", sq_id=" + std::to_string(response.cqe.sq_id) +
               ", command_id=" + std::to_string(response.cqe.command_id) +
               ", status_field=" + std::to_string(status_field()) + ")";
    }
};

struct PyRequest {
    StatePtr state;
    std::shared_ptr<RequestEntry> entry;

    bool done() const {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        return entry->check_done();
    }
    std::optional<PyResponse> response() const {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        if (!entry->check_done()) {
            return std::nullopt;
        }
        return PyResponse{*entry->response};
    }
};

nvmeof::wire::Sqe command_of(const py::object& command) {
    if (py::isinstance<nvmeof::wire::Sqe>(command)) {
        return command.cast<nvmeof::wire::Sqe>();
    }
    if (PyObject_CheckBuffer(command.ptr()) == 0) {
        throw py::type_error(
            "submit: a command is 64 bytes (bytes, bytearray) or a Command, not a " +
            type_name(command));
    }
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(command).request();
    if (static_cast<std::size_t>(info.size * info.itemsize) != nvmeof::wire::kSqeSize) {
        throw py::value_error("an NVMe command capsule must be exactly 64 bytes, not " +
                              std::to_string(info.size * info.itemsize));
    }
    nvmeof::wire::Sqe sqe{};
    std::memcpy(&sqe, info.ptr, sizeof sqe);
    return sqe;
}

struct PyIoQueue {
    StatePtr state;
    int index = 0;  // kAdminQueue for the admin queue

    nvmeof::IoQueue queue(nvmeof::Controller& c) const {
        return index == kAdminQueue ? c.admin() : c.io(static_cast<std::size_t>(index));
    }

    // The core checks that the command's data lies in data_owner's registration
    // and assigns the command ID.
    py::object submit(const py::object& command, const py::object& data_owner) {
        const nvmeof::wire::Sqe sqe = command_of(command);
        Buffer* owner = data_owner.is_none() ? nullptr : &buffer_of(data_owner);
        if (owner != nullptr && owner->state != state) {
            throw py::value_error("data_owner: the buffer is registered with another controller");
        }
        auto entry = std::make_shared<RequestEntry>(state.get(), index, data_owner);
        entry->request.emplace(locked(state, [&](nvmeof::Controller& c) {
            return queue(c).submit(sqe, owner != nullptr ? &owner->region : nullptr);
        }));
        if (owner != nullptr) {
            ++owner->requests;
            entry->owner_counted = true;
        }
        py::object request = py::cast(PyRequest{state, std::move(entry)});
        state->tracked.push_back({index, request});
        return request;
    }

    // Progress (never blocks), then the requests of this queue seen done.
    py::list poll(std::optional<std::size_t> max_entries) {
        if (state->closed) {
            return py::list();  // as the reference's closed queue: nothing more will finish
        }
        locked(state, [&](nvmeof::Controller& c) {
            queue(c).make_progress();
            c.keep_connected();
            return 0;
        });
        sweep_requests(*state);
        py::list done;
        const std::size_t limit = max_entries.value_or(state->completed.size());
        std::erase_if(state->completed, [&](const ControllerState::Tracked& t) {
            if (t.queue != index || done.size() >= limit) {
                return false;
            }
            done.append(t.request);
            return true;
        });
        return done;
    }

    // Submits and waits (GIL released) for the command's completion; raises
    // its error, or TimeoutError after `timeout` seconds.
    PyResponse execute(const py::object& command, const py::object& data_owner, double timeout) {
        if (!(timeout > 0.0)) {
            throw py::value_error("execute: timeout must be a positive number of seconds");
        }
        const py::object request = submit(command, data_owner);
        const auto& entry = request.cast<PyRequest&>().entry;
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(timeout));
        bool done = false;
        {
            py::gil_scoped_release no_gil;
            for (;;) {
                {
                    std::lock_guard lock(state->mutex);
                    auto& controller = state->open();
                    queue(controller).make_progress();
                    controller.keep_connected();
                    done = entry->check_done();
                }
                if (done || std::chrono::steady_clock::now() >= deadline) {
                    break;
                }
                std::this_thread::yield();
            }
        }
        sweep_requests(*state);
        std::erase_if(state->completed,
                      [&](const ControllerState::Tracked& t) { return t.request.is(request); });
        if (!done) {
            PyErr_SetString(PyExc_TimeoutError, "NVMe command timed out");
            throw py::error_already_set();
        }
        entry->response->raise_for_status();
        return PyResponse{*entry->response};
    }

    template <typename Get>
    auto get(Get&& get) {
        return locked(state, [&](nvmeof::Controller& c) { return get(queue(c)); });
    }
    bool closed() const {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        return !state->controller || state->closed ||
               !(state->controller->is_open() || state->controller->is_reconnecting());
    }
};

}  // namespace

void sweep_requests(ControllerState& state) {
    if (state.tracked.empty()) {
        return;
    }
    // Copies: another thread may sweep or submit while the GIL is released.
    const std::vector<ControllerState::Tracked> tracked = state.tracked;
    std::vector<std::shared_ptr<RequestEntry>> entries;
    for (const auto& t : tracked) {
        entries.push_back(t.request.cast<PyRequest&>().entry);
    }
    std::vector<bool> finished(tracked.size(), false);
    {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state.mutex);
        const bool live = state.controller &&
                          (state.controller->is_open() || state.controller->is_reconnecting());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            finished[i] = entries[i]->check_done() || !live;
        }
    }
    for (std::size_t i = 0; i < tracked.size(); ++i) {
        if (!finished[i]) {
            continue;
        }
        const auto found = std::ranges::find_if(
            state.tracked, [&](const auto& t) { return t.request.is(tracked[i].request); });
        if (found == state.tracked.end()) {
            continue;  // another thread's sweep took it meanwhile
        }
        entries[i]->release_owner();
        state.completed.push_back(std::move(*found));
        state.tracked.erase(found);
    }
}

void bind_requests(py::module_& m) {
    py::class_<PyResponse>(m, "Response",
                           "The completion of a low-level request (the reference package's "
                           "Completion, with the same fields).")
        .def_property_readonly(
            "result", [](const PyResponse& r) { return r.response.cqe.result64(); },
            "Dwords 0 and 1 of the completion as one 64-bit value.")
        .def_property_readonly("sq_head",
                               [](const PyResponse& r) { return r.response.cqe.sq_head; })
        .def_property_readonly("sq_id", [](const PyResponse& r) { return r.response.cqe.sq_id; })
        .def_property_readonly("command_id",
                               [](const PyResponse& r) { return r.response.cqe.command_id; })
        .def_property_readonly("status_field", &PyResponse::status_field,
                               "The CQE status field (its phase bit cleared).")
        .def_property_readonly("status", &PyResponse::status,
                               "The status without the phase bit: SC in bits 0-7, SCT 8-10.")
        .def_property_readonly("status_code",
                               [](const PyResponse& r) { return r.response.status.nvme.code(); })
        .def_property_readonly(
            "status_type",
            [](const PyResponse& r) { return static_cast<int>(r.response.status.nvme.type()); })
        .def_property_readonly(
            "do_not_retry",
            [](const PyResponse& r) { return r.response.status.nvme.do_not_retry(); })
        .def_property_readonly(
            "succeeded", [](const PyResponse& r) { return r.response.status.ok(); },
            "True when the command succeeded (no NVMe error and no transport failure).")
        .def_property_readonly(
            "sct",
            [](const PyResponse& r) { return static_cast<int>(r.response.status.nvme.type()); })
        .def_property_readonly("sc",
                               [](const PyResponse& r) { return r.response.status.nvme.code(); })
        .def_property_readonly(
            "dnr", [](const PyResponse& r) { return r.response.status.nvme.do_not_retry(); })
        .def_property_readonly("ok", [](const PyResponse& r) { return r.response.status.ok(); })
        .def_property_readonly("dw0", [](const PyResponse& r) { return r.response.cqe.dw0; })
        .def_property_readonly("dw1", [](const PyResponse& r) { return r.response.cqe.dw1; })
        .def("__repr__", &PyResponse::repr)
        .def(
            "raise_for_status", [](const PyResponse& r) { r.response.raise_for_status(); },
            "Raises NvmeError (an NVMe error status; an OSError, the reference's NVMeStatusError) "
            "or TransportError; returns None on success.");

    py::class_<PyRequest>(m, "Request",
                          "A low-level command in flight. Its data_owner stays alive and "
                          "registered until a poll() saw it done (or the controller closed), "
                          "even if the Request is dropped: closing that buffer meanwhile raises "
                          "ValueError.")
        .def_property_readonly("done", &PyRequest::done)
        .def_property_readonly("response", &PyRequest::response,
                               "The Response once done, else None.")
        .def_property_readonly(
            "send_complete", &PyRequest::done,
            "True once done (the capsule's send is reaped before the request is done).")
        .def_property_readonly("command_id",
                               [](const PyRequest& r) {
                                   return r.entry->response ? r.entry->response->cqe.command_id
                                                            : r.entry->request->command_id();
                               })
        .def_property_readonly("data_owner",
                               [](const PyRequest& r) { return r.entry->data_owner; });

    py::class_<PyIoQueue>(m, "IoQueue",
                          "A queue of the controller (the reference package's RDMAQueue): "
                          "submit(), poll(), execute().")
        .def("submit", &PyIoQueue::submit, py::arg("command"), py::arg("data_owner") = py::none(),
             "Posts `command` (64 bytes from the nvmeof.protocol builders, or a Command); returns "
             "a Request. The queue assigns the command ID. `data_owner` is the registered buffer "
             "the command's data lives in: ValueError, with nothing posted, when the command "
             "reaches memory outside it (or has data and no data_owner). QueueFullError when no "
             "slot is free.")
        .def("poll", &PyIoQueue::poll, py::arg("max_entries") = py::none(),
             "Makes progress (never blocks; also sends keep-alives when due) and returns the "
             "requests of this queue seen done since the last poll, at most `max_entries`.")
        .def("execute", &PyIoQueue::execute, py::arg("command"), py::arg("data_owner") = py::none(),
             py::arg("timeout") = 30.0,
             "Submits `command` and waits for it (GIL released); returns its Response. "
             "NvmeError for an NVMe error status, TimeoutError after `timeout` seconds.")
        .def_property_readonly(
            "qid", [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.qid(); }); })
        .def_property_readonly(
            "capacity",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.capacity(); }); },
            "Commands it holds in flight (its depth minus one).")
        .def_property_readonly(
            "depth",
            [](PyIoQueue& q) {
                return q.get([](nvmeof::IoQueue io) { return io.capacity() + 1; });
            },
            "Its size: one more than the commands it holds in flight.")
        .def_property_readonly(
            "free_slots",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.free_slots(); }); })
        .def_property_readonly(
            "in_flight",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.in_flight(); }); })
        .def_property_readonly(
            "outstanding",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.in_flight(); }); },
            "Commands in flight (in_flight).")
        .def_property_readonly("closed", &PyIoQueue::closed,
                               "True once the controller is closed or failed.")
        .def(
            "close", [](PyIoQueue& q) { q.state->close(); },
            "Closes the controller the queue belongs to (its queues are one association: "
            "none is disconnected alone). Idempotent, as Controller.close().")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyIoQueue& q, const py::args&) {
            q.state->close();
            return false;
        });
}

py::object make_queue(const StatePtr& state, int index) {
    return py::cast(PyIoQueue{state, index});
}

}  // namespace nvmeof_python
