// Namespace calls from Python (namespace_calls.hpp).
//
// A blocking read or write runs the core's blocking loop (Namespace::run), with
// the GIL released: it holds the controller's lock to submit and for each poll
// and lets it go between polls, so other threads' transfers are in flight
// together. The
// asynchronous forms return a future at once; the progress thread polls while
// any is pending and completes the futures (taking the GIL only for that).
#include <pybind11/stl.h>

#include "namespace_calls.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "buffer.hpp"
#include "exceptions.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/queue.hpp"

namespace nvmeof_python {

namespace {

// Polls that found nothing before the progress thread naps between polls: a
// completion within that window is seen at once, a longer wait costs little CPU.
constexpr unsigned kBusyPolls = 2000;
constexpr std::chrono::microseconds kNap{50};

bool usable(const ControllerState& state) {
    return state.controller && !state.closed &&
           (state.controller->is_open() || state.controller->is_reconnecting());
}

void progress_loop(ControllerState* state) {
    std::unique_lock lock(state->mutex);
    unsigned idle = 0;
    for (;;) {
        state->progress_wake.wait(lock, [&] {
            return state->progress_stopping || state->transfers.asynchronous_pending() != 0 ||
                   state->transfers.has_finished();
        });
        if (state->progress_stopping) {
            return;
        }
        bool moved = false;
        if (usable(*state)) {
            moved = state->transfers.progress(*state->controller);
            state->controller->keep_connected();
        } else {
            // Failed or given up with transfers pending: they will never complete.
            nvmeof::CompletionStatus gone;
            gone.transport = nvmeof::TransportErrc::disconnected;
            gone.sys_errno = ENOTCONN;
            state->transfers.fail_all(gone);
        }
        if (state->transfers.has_finished()) {
            auto finished = state->transfers.take_finished();
            lock.unlock();
            deliver(std::move(finished));
            lock.lock();
            idle = 0;
            continue;
        }
        idle = moved ? 0 : idle + 1;
        lock.unlock();
        if (idle > kBusyPolls) {
            std::this_thread::sleep_for(kNap);
        } else {
            std::this_thread::yield();
        }
        lock.lock();
    }
}

// With the lock held.
void start_progress(ControllerState& state) {
    if (!state.progress.joinable()) {
        state.progress_stopping = false;
        state.progress = std::thread(progress_loop, &state);
    }
    state.progress_wake.notify_one();
}

// The core's blocking loop, letting go of the controller's lock each time it
// waits, so other threads' calls (and the progress thread) run meanwhile. The
// caller has released the GIL.
void blocking_transfer(ControllerState& state, const nvmeof::Namespace& ns,
                       const nvmeof::Transfer& transfer) {
    std::unique_lock lock(state.mutex);
    state.open();
    nvmeof::Namespace bound = ns;
    bound.run(transfer, [&] {
        if (state.transfers.has_finished()) {
            state.progress_wake.notify_one();  // others' futures, found by this poll
        }
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        state.open();  // closed or given up meanwhile: that is the call's error
    });
}

struct PyNamespace {
    StatePtr state;
    nvmeof::Namespace ns;

    // The transfer a read or write of `buffer` describes, checked.
    nvmeof::Transfer describe(bool write, Buffer& registered, std::uint64_t slba,
                              std::optional<std::uint64_t> blocks, std::uint64_t offset) const {
        if (registered.state != state) {
            throw py::value_error("the buffer is registered with another controller");
        }
        std::uint64_t count = 0;
        if (blocks) {
            count = *blocks;
        } else if (offset < registered.size) {
            if ((registered.size - offset) % ns.lba_size() != 0) {
                throw py::value_error("the buffer's " + std::to_string(registered.size - offset) +
                                      " bytes after offset " + std::to_string(offset) +
                                      " are not a whole number of " +
                                      std::to_string(ns.lba_size()) + "-byte blocks: pass blocks");
            }
            count = (registered.size - offset) / ns.lba_size();
        }
        if (count == 0) {
            throw py::value_error("the buffer holds no whole block after offset " +
                                  std::to_string(offset));
        }
        const nvmeof::Transfer transfer{write ? nvmeof::Op::write : nvmeof::Op::read, slba, count,
                                        &registered.region, offset, 0};
        nvmeof::check_transfer(ns.info(), transfer);
        return transfer;
    }

    void transfer(bool write, const py::object& buffer, std::uint64_t slba,
                  std::optional<std::uint64_t> blocks, std::uint64_t offset) {
        auto& registered = buffer_of(buffer);
        const nvmeof::Transfer t = describe(write, registered, slba, blocks, offset);
        const BufferInUse in_use(&registered);
        run(t);
    }

    py::object transfer_async(bool write, const py::object& buffer, std::uint64_t slba,
                              std::optional<std::uint64_t> blocks, std::uint64_t offset) {
        auto& registered = buffer_of(buffer);
        const nvmeof::Transfer t = describe(write, registered, slba, blocks, offset);
        return start(t, buffer);
    }

    py::object start(const nvmeof::Transfer& t, const py::object& buffer) {
        py::object future = py::module_::import("nvmeof.futures").attr("TransferFuture")();
        future.attr("set_running_or_notify_cancel")();
        Buffer* registered = buffer.is_none() ? nullptr : &buffer.cast<Buffer&>();
        BufferInUse in_use(registered);
        PyObject* owned_future = future.inc_ref().ptr();
        PyObject* owned_buffer = buffer.is_none() ? nullptr : buffer.inc_ref().ptr();
        try {
            py::gil_scoped_release no_gil;
            std::lock_guard lock(state->mutex);
            state->transfers.add(state->open(), ns, t, owned_future, owned_buffer);
            start_progress(*state);
        } catch (...) {
            Py_DECREF(owned_future);
            Py_XDECREF(owned_buffer);
            throw;
        }
        in_use.release();  // deliver() gives the count back
        return future;
    }

    void run(const nvmeof::Transfer& transfer) {
        py::gil_scoped_release no_gil;
        blocking_transfer(*state, ns, transfer);
    }
};

}  // namespace

void deliver(std::vector<TransferBoard::Finished> finished) {
    py::gil_scoped_acquire gil;
    for (auto& done : finished) {
        const auto future = py::reinterpret_steal<py::object>(done.future);
        if (done.buffer != nullptr) {
            const auto buffer = py::reinterpret_steal<py::object>(done.buffer);
            --buffer.cast<Buffer&>().transfers;
        }
        try {
            if (done.status.ok()) {
                future.attr("set_result")(py::none());
            } else {
                future.attr("set_exception")(exception_for(done.status));
            }
        } catch (py::error_already_set& error) {
            error.discard_as_unraisable("nvmeof: completing a transfer future");
        }
    }
}

void stop_progress(ControllerState& state) {
    {
        std::lock_guard lock(state.mutex);
        state.progress_stopping = true;
    }
    state.progress_wake.notify_all();
    if (state.progress.joinable()) {
        state.progress.join();
    }
}

py::object make_namespace(const StatePtr& state, const nvmeof::Namespace& ns) {
    return py::cast(PyNamespace{state, ns});
}

void bind_namespace(py::module_& m) {
    using Blocks = std::optional<std::uint64_t>;
    py::class_<PyNamespace>(m, "Namespace", py::dynamic_attr(),
                            "A namespace of a connected controller.")
        .def_property_readonly("nsid", [](const PyNamespace& n) { return n.ns.nsid(); })
        .def_property_readonly("lba_size", [](const PyNamespace& n) { return n.ns.lba_size(); })
        .def_property_readonly("size_lbas", [](const PyNamespace& n) { return n.ns.size_lbas(); })
        .def_property_readonly("capacity_lbas",
                               [](const PyNamespace& n) { return n.ns.info().capacity_lbas; })
        .def_property_readonly("size_bytes",
                               [](const PyNamespace& n) { return n.ns.info().size_bytes(); })
        .def(
            "read",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
               std::uint64_t offset) { n.transfer(false, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::kw_only(), py::arg("buffer_offset") = 0,
            "Reads `blocks` blocks at `slba` into the registered buffer (default: the whole "
            "blocks from buffer_offset to its end). Blocks without the GIL; split at MDTS into commands "
            "spread over the I/O queues. ValueError for a range outside the namespace or buffer; "
            "NvmeError / TransportError when it fails.")
        .def(
            "write",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
               std::uint64_t offset) { n.transfer(true, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::kw_only(), py::arg("buffer_offset") = 0,
            "Writes `blocks` blocks at `slba` from the registered buffer; as read().")
        .def(
            "read_async",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
               std::uint64_t offset) { return n.transfer_async(false, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::kw_only(), py::arg("buffer_offset") = 0,
            "As read(), without waiting: returns a TransferFuture (a concurrent.futures.Future, "
            "also awaitable) whose result() is None once the data is in the buffer, or raises "
            "the transfer's error. The buffer cannot be closed until it is done.")
        .def(
            "write_async",
            [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
               std::uint64_t offset) { return n.transfer_async(true, buffer, slba, blocks, offset); },
            py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(),
            py::kw_only(), py::arg("buffer_offset") = 0,
            "As write(), without waiting; returns a TransferFuture as read_async().")
        .def(
            "flush", [](PyNamespace& n) { n.run({nvmeof::Op::flush, 0, 0, nullptr, 0, 0}); },
            "Flush: the namespace's volatile write data made durable.")
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
}

}  // namespace nvmeof_python
