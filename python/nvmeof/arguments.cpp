// Arguments from Python (arguments.hpp).
#include "arguments.hpp"

#include <optional>
#include <string>

namespace nvmeof_python {

std::uint64_t unsigned_argument(const py::handle& value, const char* name, std::uint64_t max) {
    PyObject* index = PyNumber_Index(value.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        throw py::type_error(std::string(name) + " must be an integer, not " +
                             std::string(py::str(py::type::of(value).attr("__name__"))));
    }
    const auto number = py::reinterpret_steal<py::int_>(index);
    const auto limit = py::int_(max);
    if (number < py::int_(0) || number > limit) {
        throw py::value_error(std::string(name) + " must be between 0 and " + std::to_string(max) +
                              ", not " + py::str(number.ptr()).cast<std::string>());
    }
    return number.cast<std::uint64_t>();
}

nvmeof::Transport transport_argument(const py::handle& value, const char* name) {
    if (!py::isinstance<py::str>(value)) {
        throw py::type_error(std::string(name) + " must be a str ('rdma' or 'tcp'), not " +
                             std::string(py::str(py::type::of(value).attr("__name__"))));
    }
    const auto text = value.cast<std::string>();
    if (const std::optional<nvmeof::Transport> transport = nvmeof::parse_transport(text)) {
        return *transport;
    }
    throw py::value_error(std::string(name) + " must be 'rdma' or 'tcp', not " +
                          std::string(py::repr(value)));
}

}  // namespace nvmeof_python
