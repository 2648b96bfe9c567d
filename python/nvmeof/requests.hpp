// Low-level commands from Python: nvmeof.IoQueue (the reference package's
// RDMAQueue), Request and Response; internal to the nvmeof._core extension.
#pragma once

#include <pybind11/pybind11.h>

#include "state.hpp"

namespace nvmeof_python {

// Moves the tracked requests that are done, or that can no longer reach their
// memory (the controller closed, failed or was given up), to `completed`, and
// lets their data owners go. Called with the GIL held.
void sweep_requests(ControllerState& state);

void bind_requests(py::module_& m);
// Controller.io / io_queue(i) / admin: index -1 is the admin queue.
py::object make_queue(const StatePtr& state, int index);

}  // namespace nvmeof_python
