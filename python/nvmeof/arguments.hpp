// Arguments from Python (internal to the nvmeof._core extension).
//
// pybind11 converts an int that does not fit an unsigned C++ parameter by
// failing the overload, which Python sees as a TypeError listing the whole
// signature. The bindings take such numbers as objects and convert them here,
// so a negative or too large one is a ValueError of one line naming the
// argument, as the reference package raises it. A value that fits its type
// but breaks one of the core's option rules is the same kind of ValueError.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "nvmeof/option_rules.hpp"

namespace nvmeof_python {

namespace py = pybind11;

// `value` (an int, or anything with __index__) as 0..max: TypeError for a
// non-integer, ValueError "NAME must be between 0 and MAX, not VALUE" otherwise.
std::uint64_t unsigned_argument(const py::handle& value, const char* name,
                                std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// As unsigned_argument, for T's range.
template <typename T>
T argument(const py::handle& value, const char* name) {
    return static_cast<T>(unsigned_argument(value, name, std::numeric_limits<T>::max()));
}

// None stays None (an optional count: "the rest of the buffer").
inline std::optional<std::uint64_t> optional_argument(const py::handle& value, const char* name) {
    if (value.is_none()) {
        return std::nullopt;
    }
    return unsigned_argument(value, name);
}

// Controller.connect's transport: "rdma" or "tcp" (nvme-cli's names, any
// case). TypeError for a non-str, ValueError "NAME must be 'rdma' or 'tcp',
// not 'fc'" for another name.
nvmeof::Transport transport_argument(const py::handle& value, const char* name);

// Controller.connect's arguments by the core's option rules
// (nvmeof/option_rules.hpp): the arguments named as Python names them.
inline constexpr nvmeof::OptionNames kConnectArgumentNames{
    .target = "host",
    .ctrl_loss_tmo = "ctrl_loss_tmo_ms",
    .reconnect_delay = "reconnect_delay_ms",
    .fast_io_fail_tmo = "fast_io_fail_tmo_ms",
};

// Runs one of the core's option checks: its refusal becomes the ValueError
// of one line naming the argument that the reference package raises.
template <typename Check>
void core_rule(Check&& check) {
    try {
        check();
    } catch (const nvmeof::InvalidOption& e) {
        throw py::value_error(e.what());
    }
}

}  // namespace nvmeof_python
