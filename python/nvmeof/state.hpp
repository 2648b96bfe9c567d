// A Python controller's shared state (internal to the nvmeof._core extension).
//
// Lifetimes: every Python object that reaches into a controller (Namespace,
// IoQueue, Request, Buffer, a transfer future) holds the state, so the C++
// Controller outlives them; after close() their calls raise instead of touching
// released queues. The core is single-threaded per controller: `mutex` is
// taken, with the GIL released, around every call into it. Never the other way
// round: a thread holding `mutex` never waits for the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nvmeof/controller.hpp"
#include "nvmeof/keep_alive_thread.hpp"
#include "transfers.hpp"

namespace nvmeof_python {

namespace py = pybind11;

struct ControllerState {
    std::optional<nvmeof::Controller> controller;
    std::mutex mutex;
    // Keep-alive and reconnecting while Python code is idle (keep_alive_ms or
    // ctrl_loss_tmo_ms set): no GIL, under `mutex`.
    std::optional<nvmeof::KeepAliveThread> keeper;
    // Blocking and asynchronous transfers spread over the I/O queues.
    TransferBoard transfers;
    // Progress for asynchronous transfers (namespace_calls.cpp): started with the
    // first, asleep while none is pending, stopped by shut_down().
    std::thread progress;
    std::condition_variable progress_wake;  // with `mutex`
    bool progress_stopping = false;
    // By close(): tells a closed controller from a failed one. Atomic: read
    // without the lock (Controller.closed, poll on a closed queue).
    std::atomic<bool> closed{false};

    // Low-level requests not yet seen done by a poll (requests.cpp). Python
    // objects: touched only with the GIL held.
    struct Tracked {
        int queue = 0;  // -1: the admin queue
        py::object request;
    };
    std::vector<Tracked> tracked;
    // Requests seen done, waiting to be returned by their queue's poll().
    std::vector<Tracked> completed;

    ControllerState() = default;
    ControllerState(const ControllerState&) = delete;
    ControllerState& operator=(const ControllerState&) = delete;
    ~ControllerState();

    // Live, or riding out an outage (ctrl_loss_tmo_ms: its queues answer busy
    // meanwhile); raises TransportError (controller_lost, disconnected, closed)
    // otherwise. Called with `mutex` held.
    nvmeof::Controller& open();
    // Stops the threads, then closes the controller. Called with the GIL released.
    void shut_down();
    // shut_down(), then fails the futures still pending and lets the buffers of
    // low-level requests go. Called with the GIL held.
    void close();
};
using StatePtr = std::shared_ptr<ControllerState>;

// Runs `call` on the controller with the GIL released and the controller locked.
template <typename Call>
auto locked(const StatePtr& state, Call&& call) {
    py::gil_scoped_release no_gil;
    std::lock_guard lock(state->mutex);
    return call(state->open());
}

inline std::string type_name(const py::handle& object) {
    return py::str(py::type::of(object).attr("__name__"));
}

}  // namespace nvmeof_python
