// nvmeof.Namespace: blocking and asynchronous transfers (internal to the
// nvmeof._core extension).
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "nvmeof/namespace.hpp"
#include "state.hpp"

namespace nvmeof_python {

void bind_namespace(py::module_& m);
py::object make_namespace(const StatePtr& state, const nvmeof::Namespace& ns);
// Completes the futures of finished asynchronous transfers. GIL held.
void deliver(std::vector<TransferBoard::Finished> finished);
// Stops the progress thread. GIL released, controller lock not held.
void stop_progress(ControllerState& state);

}  // namespace nvmeof_python
