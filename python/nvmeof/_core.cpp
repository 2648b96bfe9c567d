// The `nvmeof._core` extension: the C++ initiator (core/include/nvmeof) for
// Python, with the names, defaults and behaviour of the documented Python API.
//
// Lifetimes: every Python object that reaches into a controller (Namespace,
// IoQueue, Request, Buffer) holds the controller's shared state, so the C++
// Controller outlives them; after close() their calls raise instead of
// touching released queues. The core is single-threaded per controller, so a
// controller's mutex is taken (with the GIL released) around every call into it,
// but not while a blocking transfer waits (blocking_transfer): threads sharing a
// controller have their transfers in flight together.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unistd.h>

#include "dlpack.hpp"
#include "nvmeof/nvmeof.hpp"

namespace py = pybind11;
namespace dlpack = nvmeof_python::dlpack;

namespace {

struct RequestEntry;

struct ControllerState {
    std::optional<nvmeof::Controller> controller;
    std::mutex mutex;
    // Low-level requests submitted with a data owner and not yet seen done
    // (sweep_requests): each keeps its buffer alive and counted in use, so the
    // target never reaches memory that was deregistered under it. Python
    // objects: touched only with the GIL held.
    std::vector<std::shared_ptr<RequestEntry>> owning_requests;
    // Blocking transfers' completions by token (their Transfer::user_data),
    // filed by whichever waiting thread polled them; an entry exists while its
    // thread waits. Guarded by `mutex`.
    std::unordered_map<std::uint64_t, std::optional<nvmeof::CompletionStatus>> finished;
    std::uint64_t next_token = 1;
    bool closed = false;  // by close(): tells a closed controller from a failed one

    ControllerState() = default;
    ControllerState(const ControllerState&) = delete;
    ControllerState& operator=(const ControllerState&) = delete;
    // The last Python reference went without close(): closing may wait for the
    // target (up to the timeout), so not with the GIL held.
    ~ControllerState() {
        if (!owning_requests.empty()) {
            py::gil_scoped_acquire gil;  // they hold Python objects; before the controller goes
            owning_requests.clear();
        }
        if (controller && PyGILState_Check() != 0) {
            py::gil_scoped_release no_gil;
            controller.reset();
        }
    }

    // Live, or riding out an outage (ctrl_loss_tmo_ms: its queues answer busy
    // meanwhile); a controller given up after one raises controller_lost, one
    // that failed with no reconnect configured raises disconnected.
    nvmeof::Controller& open() {
        if (controller && (controller->is_open() || controller->is_reconnecting())) {
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
        throw nvmeof::TransportError(nvmeof::TransportErrc::closed, 0, "the controller is closed");
    }
};
using StatePtr = std::shared_ptr<ControllerState>;

// Runs `call` on the controller with the GIL released and the controller locked.
template <typename Call>
auto locked(const StatePtr& state, Call&& call) {
    py::gil_scoped_release no_gil;
    std::lock_guard lock(state->mutex);
    return call(state->open());
}

// Owns a Py_buffer (keeps the exporting object alive and, for a bytearray,
// unresizable) until released.
class HeldView {
  public:
    explicit HeldView(const py::object& object) {
        if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            throw py::value_error("register: a " +
                                  std::string(py::str(py::type::of(object).attr("__name__"))) +
                                  " is not a writable C-contiguous buffer");
        }
        held_ = true;
    }
    HeldView(const HeldView&) = delete;
    HeldView& operator=(const HeldView&) = delete;
    ~HeldView() { release(); }
    void release() {
        if (held_) {
            PyBuffer_Release(&view_);
            held_ = false;
        }
    }
    void* data() const { return view_.buf; }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

  private:
    Py_buffer view_{};
    bool held_ = false;
};

struct FreeMemory {
    void operator()(void* memory) const { std::free(memory); }
};

// A registered buffer: its own page-aligned memory (Controller.allocate), or a
// Python object's memory (Controller.register: its buffer protocol, or its
// DLPack tensor; register_gpu: __cuda_array_interface__ or DLPack). The bytes outlive the
// registration: views (memoryview, numpy) taken before close() or before the
// controller closed stay valid, because the memory, or the object's buffer, is
// released only once no view is left (exports counts them).
struct Buffer {
    StatePtr state;
    std::unique_ptr<void, FreeMemory> memory;        // allocate()
    std::unique_ptr<HeldView> view;                  // register(): the object's buffer
    std::unique_ptr<dlpack::ConsumedTensor> tensor;  // register*() by DLPack
    py::object owner;                                // register*(): the object itself
    void* data = nullptr;
    std::size_t size = 0;
    nvmeof::MemoryRegion region;  // after memory/view/tensor: deregistered before they go
    std::size_t exports = 0;
    std::size_t transfers = 0;  // blocking transfers using it now (counted under the GIL)
    std::size_t requests = 0;   // low-level requests in flight with it as data owner (likewise)
    bool closed = false;
    bool device = false;  // register_gpu(): `data` is a device address

    void close();  // refused while a transfer or a low-level request uses it
    void deregister() {
        {
            py::gil_scoped_release no_gil;
            std::lock_guard lock(state->mutex);
            region.reset();
        }
        closed = true;
        release_object();
    }
    // The registered object is let go (a bytearray may resize again) once
    // closed and no view of it is left.
    void release_object() {
        if (closed && exports == 0) {
            if (view) {
                view->release();
                view.reset();
            }
            tensor.reset();
            owner = py::none();
        }
    }
    const nvmeof::MemoryRegion& usable() const {
        if (closed) {
            throw py::value_error("the buffer is closed (deregistered)");
        }
        return region;
    }
};

// The buffer protocol, by hand: pybind11's def_buffer cannot refuse a closed
// buffer with an exception, nor count the views that keep the bytes in use.
int buffer_get(PyObject* object, Py_buffer* view, int flags) {
    view->obj = nullptr;
    Buffer* buffer = nullptr;
    try {
        buffer = &py::handle(object).cast<Buffer&>();
    } catch (const std::exception&) {
        PyErr_SetString(PyExc_BufferError, "not an nvmeof.Buffer");
        return -1;
    }
    if (buffer->closed) {
        PyErr_SetString(PyExc_ValueError, "the buffer is closed (deregistered)");
        return -1;
    }
    if (buffer->device) {
        PyErr_SetString(PyExc_BufferError,
                        "GPU memory has no host view (copy it with the GPU's API)");
        return -1;
    }
    if (PyBuffer_FillInfo(view, object, buffer->data, static_cast<Py_ssize_t>(buffer->size), 0,
                          flags) != 0) {
        return -1;
    }
    ++buffer->exports;
    return 0;
}

void buffer_release(PyObject* object, Py_buffer*) {
    auto& buffer = py::handle(object).cast<Buffer&>();
    --buffer.exports;
    buffer.release_object();
}

Buffer& buffer_of(const py::object& buffer) {
    if (buffer.is_none() || !py::isinstance<Buffer>(buffer)) {
        throw py::value_error(
            "expected a registered buffer (Controller.allocate or Controller.register), got " +
            std::string(py::str(py::type::of(buffer).attr("__name__"))));
    }
    auto& result = buffer.cast<Buffer&>();
    result.usable();
    return result;
}

const nvmeof::MemoryRegion& region_of(const py::object& buffer) {
    return buffer_of(buffer).region;
}

// A low-level request: its Python Request holds it and, while it is in flight
// with a data owner (a Buffer, counted in its `requests`), so does
// ControllerState::owning_requests.
struct RequestEntry {
    ControllerState* state;
    std::optional<nvmeof::Request> request;
    py::object data_owner;  // kept alive while the entry exists

    RequestEntry(ControllerState* owning_state, py::object owner_object)
        : state(owning_state), data_owner(std::move(owner_object)) {}
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
};

// Lets go of the owning requests that are done, or that can no longer reach
// their memory (the controller closed, failed or was given up: its queues are
// gone or in error).
// Called with the GIL held; checks the requests with it released.
void sweep_requests(ControllerState& state) {
    if (state.owning_requests.empty()) {
        return;
    }
    // Copies: another thread may sweep or submit while the GIL is released.
    const std::vector<std::shared_ptr<RequestEntry>> entries = state.owning_requests;
    std::vector<const RequestEntry*> finished;
    {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state.mutex);
        const bool live = state.controller &&
                          (state.controller->is_open() || state.controller->is_reconnecting());
        for (const auto& entry : entries) {
            if (!live || entry->request->done()) {
                finished.push_back(entry.get());
            }
        }
    }
    std::erase_if(state.owning_requests, [&](const std::shared_ptr<RequestEntry>& entry) {
        if (std::ranges::find(finished, entry.get()) == finished.end()) {
            return false;
        }
        --entry->data_owner.cast<Buffer&>().requests;
        return true;
    });
}

void Buffer::close() {
    if (transfers != 0) {
        throw py::value_error("close: the buffer is in use by a transfer of another thread");
    }
    sweep_requests(*state);
    if (requests != 0) {
        throw py::value_error(
            "close: a low-level request with this buffer as data_owner is "
            "still in flight (poll until request.done)");
    }
    deregister();
}

// Counts a transfer on a buffer (under the GIL) so close() from another thread
// cannot deregister memory in flight.
class BufferInUse {
  public:
    explicit BufferInUse(Buffer* buffer) : buffer_(buffer) {
        if (buffer_ != nullptr) {
            ++buffer_->transfers;
        }
    }
    BufferInUse(const BufferInUse&) = delete;
    BufferInUse& operator=(const BufferInUse&) = delete;
    ~BufferInUse() {
        if (buffer_ != nullptr) {
            --buffer_->transfers;
        }
    }

  private:
    Buffer* buffer_;
};

// Files every finished blocking transfer the queue hands back under its token.
void reap(ControllerState& state, nvmeof::IoQueue queue) {
    std::array<nvmeof::Completion, 16> out;
    std::size_t count = 0;
    do {
        count = queue.poll(out);
        for (std::size_t i = 0; i < count; ++i) {
            if (auto waiting = state.finished.find(out[i].user_data);
                waiting != state.finished.end()) {
                waiting->second = out[i].status;
            }
        }
    } while (count == out.size());
}

// A Namespace call, blocking as the core's are (split at MDTS, the CUDA
// ordering, keep-alive while waiting, the first error raised), but on the
// public non-blocking queue API: the lock is held to submit and for each poll,
// and let go between polls, so other threads submit and poll meanwhile. The
// caller has released the GIL.
void blocking_transfer(ControllerState& state, const nvmeof::Namespace& ns, nvmeof::Transfer t) {
    nvmeof::check_transfer(ns.info(), t);  // InvalidArgument: ValueError
    std::unique_lock lock(state.mutex);
    const std::uint64_t token = state.next_token++;
    t.user_data = token;
    state.finished.emplace(token, std::nullopt);
    struct Forget {
        ControllerState& state;
        std::uint64_t token;
        ~Forget() { state.finished.erase(token); }  // the lock is held on every way out
    } forget{state, token};
    auto let_others_in = [&] {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
    };
    for (;;) {
        auto queue = state.open().io(0);
        const auto result = queue.submit(ns, t);
        if (result == nvmeof::SubmitResult::queued) {
            break;
        }
        if (result != nvmeof::SubmitResult::busy) {
            nvmeof::raise_for_status(queue.last_error());
        }
        reap(state, queue);         // every transfer record is taken: wait for one,
        state.open().keep_alive();  // or an outage: the reconnect runs from here
        let_others_in();
    }
    for (;;) {
        auto& controller = state.open();
        reap(state, controller.io(0));
        controller.keep_alive();  // a long transfer must not starve the target's timer
        if (const auto& status = state.finished.at(token)) {
            nvmeof::raise_for_status(*status);
            return;
        }
        let_others_in();
    }
}

struct PyNamespace {
    StatePtr state;
    nvmeof::Namespace ns;

    void transfer(bool write, const py::object& buffer, std::uint64_t slba,
                  std::optional<std::uint64_t> blocks, std::uint64_t offset) {
        auto& registered = buffer_of(buffer);
        if (registered.state != state) {
            throw py::value_error("the buffer is registered with another controller");
        }
        std::uint64_t count = 0;
        if (blocks) {
            count = *blocks;
        } else if (offset < registered.size) {
            count = (registered.size - offset) / ns.lba_size();
        }
        if (count == 0) {
            throw py::value_error("the buffer holds no whole block after offset " +
                                  std::to_string(offset));
        }
        const BufferInUse in_use(&registered);
        run({write ? nvmeof::Op::write : nvmeof::Op::read, slba, count, &registered.region, offset,
             0});
    }
    void run(const nvmeof::Transfer& transfer) {
        py::gil_scoped_release no_gil;
        blocking_transfer(*state, ns, transfer);
    }
};

struct PyResponse {
    nvmeof::Response response;
};

struct PyRequest {
    StatePtr state;
    std::shared_ptr<RequestEntry> entry;

    bool done() const {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        return entry->request->done();
    }
    PyResponse response() const {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        return PyResponse{entry->request->response()};
    }
};

struct PyIoQueue {
    StatePtr state;
    bool admin = false;

    nvmeof::IoQueue queue(nvmeof::Controller& c) const { return admin ? c.admin() : c.io(0); }

    // The core checks that the command's data lies in data_owner's registration.
    PyRequest submit(const nvmeof::wire::Sqe& command, const py::object& data_owner) {
        Buffer* owner = data_owner.is_none() ? nullptr : &buffer_of(data_owner);
        if (owner != nullptr && owner->state != state) {
            throw py::value_error("data_owner: the buffer is registered with another controller");
        }
        auto entry = std::make_shared<RequestEntry>(state.get(), data_owner);
        entry->request.emplace(locked(state, [&](nvmeof::Controller& c) {
            return queue(c).submit(command, owner != nullptr ? &owner->region : nullptr);
        }));
        if (owner != nullptr) {
            ++owner->requests;
            state->owning_requests.push_back(entry);
        }
        return PyRequest{state, std::move(entry)};
    }
    void poll() {
        locked(state, [&](nvmeof::Controller& c) {
            queue(c).poll();
            c.keep_alive();
            return 0;
        });
        sweep_requests(*state);
    }
    template <typename Get>
    auto get(Get&& get) {
        return locked(state, [&](nvmeof::Controller& c) { return get(queue(c)); });
    }
};

struct PyController {
    StatePtr state = std::make_shared<ControllerState>();

    void close() {
        {
            py::gil_scoped_release no_gil;
            std::lock_guard lock(state->mutex);
            state->closed = true;
            if (state->controller) {
                state->controller->close();
            }
        }
        sweep_requests(*state);  // their queues are gone: the buffers are free to close
    }
};

nvmeof::wire::HostId parse_host_id(const std::string& text) {
    nvmeof::wire::HostId id{};
    if (!nvmeof::parse_uuid(text, id)) {
        throw py::value_error("host_id: " + text + " is not a UUID (8-4-4-4-12 hex digits)");
    }
    return id;
}

PyController connect(const std::string& target, const std::string& subsystem_nqn,
                     std::uint16_t port, std::optional<std::string> host_id,
                     std::optional<std::string> host_nqn, std::uint16_t queue_depth,
                     std::uint32_t keep_alive_ms, double timeout, std::optional<std::string> source,
                     std::uint32_t ctrl_loss_tmo_ms, std::uint32_t reconnect_delay_ms,
                     std::uint32_t fast_io_fail_tmo_ms) {
    if (!(timeout > 0.0)) {
        throw py::value_error("timeout must be a positive number of seconds");
    }
    if (queue_depth < 2) {
        throw py::value_error("queue_depth must be at least 2");
    }
    if (ctrl_loss_tmo_ms != 0 && reconnect_delay_ms == 0) {
        throw py::value_error("reconnect_delay_ms must be at least 1 when ctrl_loss_tmo_ms is set");
    }
    if (fast_io_fail_tmo_ms != 0 && fast_io_fail_tmo_ms >= ctrl_loss_tmo_ms) {
        throw py::value_error(
            "fast_io_fail_tmo_ms must be below ctrl_loss_tmo_ms (and needs it set)");
    }
    nvmeof::Options options{.target = target, .subsystem_nqn = subsystem_nqn, .port = port};
    options.source = source.value_or("");
    options.queue_depth = queue_depth;
    options.keep_alive_ms = keep_alive_ms;
    options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000.0));
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
    return d;
}

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

void translate(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const nvmeof::ConnectError& e) {
        py::dict f;
        f["cause"] = std::string(identifier(e.cause()));
        f["step"] = e.step();
        f["errno"] = e.sys_errno();
        f["status"] =
            e.status().ok() ? py::object(py::none()) : py::object(py::int_(e.status().cqe_field()));
        raise_python("ConnectError", e.what(), f);
    } catch (const nvmeof::InvalidArgument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nvmeof::TransportError& e) {
        if (e.code() == nvmeof::TransportErrc::invalid_argument) {
            PyErr_SetString(PyExc_ValueError, e.what());
            return;
        }
        py::dict f;
        f["code"] = std::string(identifier(e.code()));
        f["errno"] = e.sys_errno();
        raise_python("TransportError", e.what(), f);
    } catch (const nvmeof::wire::NvmeError& e) {
        py::dict f;
        f["status"] = e.status().cqe_field();
        f["sct"] = static_cast<int>(e.status().type());
        f["sc"] = e.status().code();
        f["dnr"] = e.status().do_not_retry();
        f["command"] = e.command();
        f["name"] = std::string(nvmeof::wire::status_name(e.status()));
        raise_python("NvmeError", e.what(), f);
    } catch (const nvmeof::Error& e) {
        raise_python("Error", e.what(), py::dict());
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    }
}

nvmeof::wire::Sqe rw_command(std::uint8_t opcode, std::uint32_t nsid, std::uint64_t slba,
                             std::uint32_t blocks, const py::object& buffer, std::uint32_t lba_size,
                             std::uint64_t offset) {
    using nvmeof::wire::IoOpcode;
    if (opcode != static_cast<std::uint8_t>(IoOpcode::read) &&
        opcode != static_cast<std::uint8_t>(IoOpcode::write)) {
        throw py::value_error("rw_command: opcode " + std::to_string(opcode) +
                              " is neither OPC_READ nor OPC_WRITE");
    }
    if (lba_size == 0) {
        throw py::value_error("rw_command: lba_size must be positive");
    }
    const auto& region = region_of(buffer);
    const auto bytes = std::uint64_t{blocks} * lba_size;
    return nvmeof::wire::rw_command(static_cast<IoOpcode>(opcode), nsid, slba, blocks,
                                    region.remote(offset, bytes), lba_size);
}

std::string type_name(const py::handle& object) {
    return py::str(py::type::of(object).attr("__name__"));
}

// The device range of an object exposing __cuda_array_interface__ (version 2+):
// C-contiguous (strides None or the C-order strides), writable.
std::pair<void*, std::size_t> cuda_array_range(const py::object& object) {
    const py::dict interface = object.attr("__cuda_array_interface__");
    const auto data = interface["data"].cast<py::tuple>();
    if (data[1].cast<bool>()) {
        throw py::value_error("register_gpu: the array is read-only");
    }
    const auto typestr = interface["typestr"].cast<std::string>();
    if (typestr.size() < 3) {
        throw py::value_error("register_gpu: bad typestr " + typestr);
    }
    const auto itemsize = static_cast<std::size_t>(std::stoul(typestr.substr(2)));
    std::size_t bytes = itemsize;
    std::vector<std::size_t> shape;
    for (const auto& extent : interface["shape"].cast<py::tuple>()) {
        shape.push_back(extent.cast<std::size_t>());
        bytes *= shape.back();
    }
    if (interface.contains("strides") && !interface["strides"].is_none()) {
        std::size_t expected = itemsize;
        const auto strides = interface["strides"].cast<py::tuple>();
        for (std::size_t i = shape.size(); i-- > 0;) {
            if (shape[i] > 1 && strides[i].cast<std::size_t>() != expected) {
                throw py::value_error("register_gpu: the array is not C-contiguous");
            }
            expected *= shape[i];
        }
    }
    if (bytes == 0) {
        throw py::value_error("register_gpu: the array is empty");
    }
    return {reinterpret_cast<void*>(data[0].cast<std::uintptr_t>()), bytes};
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "The C++ core of the nvmeof package (use `import nvmeof`).";
    py::register_exception_translator(translate);

    py::class_<nvmeof::wire::Sqe>(m, "Command", "A 64-byte NVMe submission queue entry.")
        .def_readonly("opcode", &nvmeof::wire::Sqe::opcode)
        .def_readonly("nsid", &nvmeof::wire::Sqe::nsid)
        .def_readonly("cdw10", &nvmeof::wire::Sqe::cdw10)
        .def_readonly("cdw11", &nvmeof::wire::Sqe::cdw11)
        .def_readonly("cdw12", &nvmeof::wire::Sqe::cdw12)
        .def("__bytes__", [](const nvmeof::wire::Sqe& sqe) {
            return py::bytes(reinterpret_cast<const char*>(&sqe), sizeof sqe);
        });

    m.def("rw_command", &rw_command, py::arg("opcode"), py::arg("nsid"), py::kw_only(),
          py::arg("slba"), py::arg("blocks"), py::arg("buffer"), py::arg("lba_size"),
          py::arg("offset") = 0,
          "Read or Write of `blocks` blocks at `slba` into/from the registered `buffer` "
          "(from byte `offset`). ValueError for another opcode, 0 or > 65536 blocks, or a "
          "buffer shorter than blocks * lba_size.");

    py::class_<Buffer> buffer_class(
        m, "Buffer", py::buffer_protocol(),
        "Registered memory. Supports the buffer protocol (memoryview, numpy.frombuffer, "
        "torch.frombuffer: zero copy, format 'B') and `with`; close() deregisters it (refused "
        "while a blocking transfer of another thread uses it, or a low-level request with it as "
        "data_owner is in flight). Views taken before close() stay "
        "valid; new ones are refused.");
    auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(buffer_class.ptr());
    heap_type->as_buffer.bf_getbuffer = buffer_get;
    heap_type->as_buffer.bf_releasebuffer = buffer_release;
    buffer_class.def("__len__", [](const Buffer& b) { return b.size; })
        .def_property_readonly("closed", [](const Buffer& b) { return b.closed; })
        .def_property_readonly(
            "kind", [](const Buffer& b) { return b.device ? "gpu" : "host"; },
            "\"host\", or \"gpu\" for register_gpu() (no host view then).")
        .def_property_readonly(
            "registration_path",
            [](const Buffer& b) { return std::string(b.region.registration_path()); })
        .def_property_readonly(
            "obj", [](const Buffer& b) { return b.owner; },
            "The registered object (None for allocate()d memory).")
        .def("close", &Buffer::close, "Deregisters the memory (and frees allocate()d memory).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Buffer& b, const py::args&) {
            b.close();
            return false;
        });

    py::class_<PyNamespace>(m, "Namespace", "A namespace of a connected controller.")
        .def_property_readonly("nsid", [](const PyNamespace& n) { return n.ns.nsid(); })
        .def_property_readonly("lba_size", [](const PyNamespace& n) { return n.ns.lba_size(); })
        .def_property_readonly("size_lbas", [](const PyNamespace& n) { return n.ns.size_lbas(); })
        .def_property_readonly("capacity_lbas",
                               [](const PyNamespace& n) { return n.ns.info().capacity_lbas; })
        .def_property_readonly("size_bytes",
                               [](const PyNamespace& n) { return n.ns.info().size_bytes(); })
        .def(
            "read",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba,
               std::optional<std::uint64_t> blocks,
               std::uint64_t offset) { n.transfer(false, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::arg("buffer_offset") = 0,
            "Reads `blocks` blocks at `slba` into the registered buffer (default: as many as fit "
            "from buffer_offset). Blocks without the GIL; splits at MDTS. ValueError for a range "
            "outside the namespace or buffer; NvmeError / TransportError when it fails.")
        .def(
            "write",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba,
               std::optional<std::uint64_t> blocks,
               std::uint64_t offset) { n.transfer(true, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::arg("buffer_offset") = 0,
            "Writes `blocks` blocks at `slba` from the registered buffer; as read().")
        .def("flush",
             [](PyNamespace& n) {
                 n.run({nvmeof::Op::flush, 0, 0, nullptr, 0, 0});
             })
        .def(
            "write_zeroes",
            [](PyNamespace& n, std::uint64_t slba, std::uint64_t blocks) {
                n.run({nvmeof::Op::write_zeroes, slba, blocks, nullptr, 0, 0});
            },
            py::arg("slba"), py::arg("blocks"))
        .def(
            "deallocate",
            [](PyNamespace& n, std::uint64_t slba, std::uint64_t blocks) {
                n.run({nvmeof::Op::deallocate, slba, blocks, nullptr, 0, 0});
            },
            py::arg("slba"), py::arg("blocks"));

    py::class_<PyResponse>(m, "Response", "The completion of a low-level request.")
        .def_property_readonly(
            "status", [](const PyResponse& r) { return r.response.status.nvme.cqe_field(); },
            "The CQE status field (phase bit cleared).")
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
        .def(
            "raise_for_status", [](const PyResponse& r) { r.response.raise_for_status(); },
            "Raises NvmeError (an NVMe error status) or TransportError; returns None on success.");

    py::class_<PyRequest>(m, "Request",
                          "A low-level command in flight. Its data_owner stays alive and "
                          "registered until the request is seen done by IoQueue.poll() (or the "
                          "controller closes), even if the Request is dropped: closing that "
                          "buffer meanwhile raises ValueError.")
        .def_property_readonly("done", &PyRequest::done)
        .def_property_readonly("response", &PyRequest::response,
                               "The Response; raises nvmeof.Error until done.")
        .def_property_readonly("command_id",
                               [](const PyRequest& r) { return r.entry->request->command_id(); })
        .def_property_readonly("data_owner",
                               [](const PyRequest& r) { return r.entry->data_owner; });

    py::class_<PyIoQueue>(m, "IoQueue", "A queue of the controller: submit() and poll().")
        .def("submit", &PyIoQueue::submit, py::arg("command"), py::arg("data_owner") = py::none(),
             "Posts `command` (nvmeof.protocol builders); returns a Request. `data_owner` is the "
             "registered buffer the command's data lives in: ValueError, with nothing posted, "
             "when the command reaches memory outside it (or has data and no data_owner). "
             "TransportError when no slot is free.")
        .def("poll", &PyIoQueue::poll,
             "Makes progress (never blocks); also sends keep-alives when due.")
        .def_property_readonly(
            "qid", [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.qid(); }); })
        .def_property_readonly(
            "capacity",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.capacity(); }); })
        .def_property_readonly(
            "free_slots",
            [](PyIoQueue& q) { return q.get([](nvmeof::IoQueue io) { return io.free_slots(); }); })
        .def_property_readonly("in_flight", [](PyIoQueue& q) {
            return q.get([](nvmeof::IoQueue io) { return io.in_flight(); });
        });

    py::class_<PyController>(m, "Controller", "An NVMe-oF/RDMA controller association.")
        .def_static("connect", &connect, py::arg("target"), py::arg("subsystem_nqn"), py::kw_only(),
                    py::arg("port") = nvmeof::wire::kDefaultPort, py::arg("host_id") = py::none(),
                    py::arg("host_nqn") = py::none(),
                    py::arg("queue_depth") = nvmeof::kDefaultQueueDepth,
                    py::arg("keep_alive_ms") = 0, py::arg("timeout") = 30.0,
                    py::arg("source") = py::none(), py::arg("ctrl_loss_tmo_ms") = 0,
                    py::arg("reconnect_delay_ms") = 10000, py::arg("fast_io_fail_tmo_ms") = 0,
                    R"(Connects to `subsystem_nqn` at `target` (an IPv4/IPv6 address).

port: RDMA-CM port (4420). host_id: host UUID text (default: a random UUID).
host_nqn: default derived from the host ID (nqn.2014-08.org.nvmexpress:uuid:<id>).
queue_depth: I/O queue size asked for (128; negotiated down). keep_alive_ms: KATO (0 = off).
timeout: seconds for the whole connect, then per request (30.0). source: local address
that picks the RDMA device. ctrl_loss_tmo_ms: reconnect after a queue failure for up to this
long (0 = off: a failure fails what is in flight), re-sending the transfers in flight; a
blocking call waits the outage out; target may list several paths ("10.0.0.2,10.0.0.3").
reconnect_delay_ms: between attempts (10000). fast_io_fail_tmo_ms: after this long in an
outage, transfers fail (0 = off). The kernel's timers; see reconnect_stats. Raises ConnectError (.cause, .step) or ValueError; releases the GIL.
Ctrl-C interrupts it within about 50 ms (on the main thread): it releases what it made and
raises KeyboardInterrupt (or whatever a signal handler raised).)")
        .def("close", &PyController::close,
             "Shuts the controller down and deregisters its buffers. Idempotent.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__",
             [](PyController& c, const py::args&) {
                 c.close();
                 return false;
             })
        .def_property_readonly(
            "is_open",
            [](PyController& c) {
                std::lock_guard lock(c.state->mutex);
                return c.state->controller && c.state->controller->is_open();
            },
            "False once closed, given up after an outage, or failed with no reconnect "
            "(ctrl_loss_tmo_ms 0: a queue or the keep-alive failed); a failed controller's calls "
            "raise TransportError (code \"disconnected\") until it is closed.")
        .def_property_readonly(
            "limits",
            [](PyController& c) {
                return limits_dict(
                    locked(c.state, [](nvmeof::Controller& ctrl) { return ctrl.limits(); }));
            },
            "What was negotiated (queue size, MDTS, addresses, identity) as a dict.")
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
            },
            "What reconnecting has done (ctrl_loss_tmo_ms): reconnects, outages_ms, "
            "transfers_retried/failed, path, reconnecting, lost, lost_reason, as a dict.")
        .def(
            "namespace",
            [](PyController& c, std::uint32_t nsid) {
                return PyNamespace{c.state, locked(c.state, [&](nvmeof::Controller& ctrl) {
                                       return ctrl.namespace_at(nsid);
                                   })};
            },
            py::arg("nsid"), "Identify Namespace `nsid`; NvmeError when the controller refuses it.")
        .def(
            "allocate",
            [](PyController& c, std::size_t size) {
                if (size == 0) {
                    throw py::value_error("allocate: size must be positive");
                }
                // The buffer owns its memory (not Controller::allocate's) so views of it
                // stay valid after the controller closes.
                const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
                const std::size_t rounded = (size + page - 1) / page * page;
                std::unique_ptr<void, FreeMemory> memory(std::aligned_alloc(page, rounded));
                if (!memory) {
                    throw std::bad_alloc();
                }
                std::memset(memory.get(), 0, rounded);
                Buffer buffer{};
                buffer.state = c.state;
                buffer.memory = std::move(memory);
                buffer.size = size;
                buffer.data = buffer.memory.get();
                buffer.region = locked(c.state, [&](nvmeof::Controller& ctrl) {
                    return ctrl.register_memory(buffer.data, size);
                });
                return buffer;
            },
            py::arg("size"),
            "Page-aligned, zero-filled, registered host memory of `size` bytes (a Buffer).")
        .def(
            "register",
            [](PyController& c, const py::object& object) {
                Buffer buffer{};
                buffer.state = c.state;
                buffer.owner = object;
                if (PyObject_CheckBuffer(object.ptr()) != 0) {
                    buffer.view = std::make_unique<HeldView>(object);
                    buffer.data = buffer.view->data();
                    buffer.size = buffer.view->size();
                } else if (dlpack::offers_dlpack(object)) {
                    buffer.tensor = dlpack::consume(object, dlpack::DeviceType::cpu, "register");
                    buffer.data = buffer.tensor->data();
                    buffer.size = buffer.tensor->size();
                } else {
                    throw py::value_error("register: a " + type_name(object) +
                                          " is neither a buffer (numpy array, bytearray) nor a "
                                          "DLPack tensor (torch CPU tensor)");
                }
                if (buffer.size == 0) {
                    throw py::value_error("register: the buffer is empty");
                }
                buffer.region = locked(c.state, [&](nvmeof::Controller& ctrl) {
                    return ctrl.register_memory(buffer.data, buffer.size);
                });
                return buffer;
            },
            py::arg("obj"),
            "Registers host memory in place: a writable C-contiguous buffer (numpy array, "
            "bytearray) or a C-contiguous CPU tensor by DLPack (torch CPU tensor; one that "
            "requires grad is refused: detach() it). The object stays alive (and a bytearray "
            "unresizable) while registered; do not resize_() a registered tensor. ValueError "
            "for anything else.")
        .def(
            "register_gpu",
            [](PyController& c, const py::object& object) {
                Buffer buffer{};
                buffer.state = c.state;
                buffer.owner = object;
                buffer.device = true;
                if (py::hasattr(object, "__cuda_array_interface__")) {
                    std::tie(buffer.data, buffer.size) = cuda_array_range(object);
                } else if (dlpack::offers_dlpack(object)) {
                    buffer.tensor =
                        dlpack::consume(object, dlpack::DeviceType::cuda, "register_gpu");
                    buffer.data = buffer.tensor->data();
                    buffer.size = buffer.tensor->size();
                } else {
                    throw py::value_error("register_gpu: a " + type_name(object) +
                                          " has neither __cuda_array_interface__ nor DLPack "
                                          "(__dlpack__, __dlpack_device__)");
                }
                buffer.region = locked(c.state, [&](nvmeof::Controller& ctrl) {
                    return ctrl.register_gpu(buffer.data, buffer.size);
                });
                return buffer;
            },
            py::arg("array"),
            "Registers CUDA device memory: a C-contiguous object with __cuda_array_interface__ "
            "or a DLPack tensor on a CUDA device (kDLCUDA: torch CUDA tensors), its context "
            "current on this thread. Namespace.write from it first waits for the work queued in "
            "that context, on every stream (cuCtxSynchronize), so a kernel still filling it "
            "finishes first (a low-level IoQueue.submit does not: synchronise first). The core "
            "widens the registration to "
            "the GPU pages; Buffer.registration_path says which path was used (\"dma-buf\" or "
            "\"peermem\"). Namespace.read into it is flushed before it returns. The object is kept "
            "alive while registered. ValueError for another device, strides or a read-only "
            "array; nvmeof.Error says why it cannot register (no CUDA support, no driver, not "
            "device memory, both paths refused).")
        .def_property_readonly(
            "io",
            [](PyController& c) {
                return PyIoQueue{c.state, false};
            },
            "I/O queue 0, for low-level submit()/poll().")
        .def_property_readonly(
            "admin",
            [](PyController& c) {
                return PyIoQueue{c.state, true};
            },
            "The admin queue.");

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
