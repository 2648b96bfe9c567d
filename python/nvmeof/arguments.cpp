// Numeric arguments from Python (arguments.hpp).
#include "arguments.hpp"

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

}  // namespace nvmeof_python
