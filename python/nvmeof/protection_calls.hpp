// End-to-end data protection for Python (internal to the nvmeof._core
// extension): nvmeof.BlockFormat, the keyword arguments of a transfer that
// become a Protection (pract, prchk, apptag, apptag_mask, reftag), and the
// host-side helpers pi_generate, pi_verify, crc16_t10dif and crc64_nvme.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>

#include "nvmeof/protection.hpp"

namespace nvmeof_python {

namespace py = pybind11;

// A transfer's keyword arguments, checked (ValueError) against `format`:
// prchk holds only PRCHK bits, the tags fit their fields, an explicit reftag
// fits the format's reference tag (32 or 48 bits). Whether the namespace has
// PI at all is the core's check_transfer's to say.
nvmeof::Protection protection_from(const nvmeof::BlockFormat& format, bool pract,
                                   std::int64_t prchk, std::int64_t apptag,
                                   std::int64_t apptag_mask, std::optional<std::int64_t> reftag,
                                   std::uint64_t storage_tag);

// The layout as the Python API words it: the guard's width (0 without PI) and
// whether the PI opens the metadata (False without PI).
unsigned pi_guard_bits(const nvmeof::BlockFormat& format);
bool pi_first(const nvmeof::BlockFormat& format);
unsigned storage_tag_bits(const nvmeof::BlockFormat& format);

void bind_protection(py::module_& m);

}  // namespace nvmeof_python
