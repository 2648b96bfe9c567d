// C++ exceptions of the core as the nvmeof.errors classes (internal to the
// nvmeof._core extension).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "nvmeof/errors.hpp"

namespace nvmeof_python {

namespace py = pybind11;

// pybind11's exception translator: sets the Python error for `error`.
void translate(std::exception_ptr error);
// The exception a failed transfer's status raises, as an object (for a future).
py::object exception_for(const nvmeof::CompletionStatus& status);

}  // namespace nvmeof_python
