// End-to-end data protection for Python (protection_calls.hpp).
#include <pybind11/stl.h>

#include "protection_calls.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <tuple>

#include "buffer.hpp"
#include "state.hpp"

namespace nvmeof_python {

namespace {

using nvmeof::BlockFormat;
using nvmeof::PiGuard;
using nvmeof::PiType;

std::string hex(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

bool has_pi(const BlockFormat& f) {
    return f.pi_type != PiType::none;
}

// What two formats are compared by: the guard and the PI's place mean nothing
// without PI.
auto key(const BlockFormat& f) {
    return std::make_tuple(f.data_bytes, f.metadata_bytes, static_cast<int>(f.pi_type),
                           pi_guard_bits(f), pi_first(f), has_pi(f) ? f.storage_tag_bits : 0);
}

BlockFormat make_format(std::int64_t lba_size, std::int64_t metadata_size, std::int64_t pi_type,
                        std::int64_t guard_bits, bool first,
                        std::optional<std::int64_t> storage_tag_bits) {
    if (lba_size <= 0 || lba_size > (std::int64_t{1} << 30)) {
        throw py::value_error("lba_size: " + std::to_string(lba_size) +
                              " is not a block size (1 to 2**30 bytes)");
    }
    if (metadata_size < 0 || metadata_size > 0xFFFF) {
        throw py::value_error("metadata_size: " + std::to_string(metadata_size) +
                              " is not 0 to 65535 bytes (the LBA format's MS)");
    }
    if (pi_type < 0 || pi_type > 3) {
        throw py::value_error("pi_type: " + std::to_string(pi_type) +
                              " is not 0 (none), 1, 2 or 3");
    }
    if (guard_bits != 16 && guard_bits != 32 && guard_bits != 64) {
        throw py::value_error("pi_guard_bits: " + std::to_string(guard_bits) +
                              " is not 16 (CRC-16/T10-DIF), 32 (CRC-32C) or 64 (CRC-64/NVME)");
    }
    BlockFormat f;
    f.data_bytes = static_cast<std::uint32_t>(lba_size);
    f.metadata_bytes = static_cast<std::uint32_t>(metadata_size);
    f.pi_type = static_cast<PiType>(pi_type);
    if (has_pi(f)) {
        f.guard = guard_bits == 64   ? PiGuard::crc64
                  : guard_bits == 32 ? PiGuard::crc32
                                     : PiGuard::crc16;
        f.pi_first = first;
        // Unsaid: none, or the least the 32-bit guard allows.
        const std::int64_t sts = storage_tag_bits.value_or(
            f.guard == PiGuard::crc32 ? nvmeof::wire::kMinStorageTag32Bits : 0);
        if (sts < 0 || !nvmeof::wire::storage_tag_bits_valid(f.guard, static_cast<unsigned>(sts))) {
            throw py::value_error("storage_tag_bits: " + std::to_string(sts) + " is not what a " +
                                  std::to_string(guard_bits) +
                                  "-bit guard allows (0-32 bits with the 16-bit guard, 16-64 "
                                  "with the 32-bit one, 0-48 with the 64-bit one)");
        }
        f.storage_tag_bits = static_cast<std::uint8_t>(sts);
        if (f.metadata_bytes < f.pi_bytes()) {
            throw py::value_error("metadata_size: " + std::to_string(metadata_size) +
                                  " bytes cannot hold the " + std::to_string(f.pi_bytes()) +
                                  "-byte protection information of a " +
                                  std::to_string(guard_bits) + "-bit guard");
        }
    }
    return f;
}

std::string repr(const BlockFormat& f) {
    std::string text = "BlockFormat(lba_size=" + std::to_string(f.data_bytes) +
                       ", metadata_size=" + std::to_string(f.metadata_bytes) +
                       ", pi_type=" + std::to_string(static_cast<int>(f.pi_type));
    if (has_pi(f)) {
        text += ", pi_guard_bits=" + std::to_string(pi_guard_bits(f)) +
                ", pi_first=" + (f.pi_first ? "True" : "False");
        if (f.storage_tag_bits != 0) {
            text += ", storage_tag_bits=" + std::to_string(f.storage_tag_bits);
        }
    }
    return text + ")";
}

// The block format a helper was handed: a BlockFormat, or anything with one as
// its `format` (a Namespace).
BlockFormat format_of(const py::object& object) {
    if (py::isinstance<BlockFormat>(object)) {
        return object.cast<BlockFormat>();
    }
    if (py::hasattr(object, "format")) {
        const py::object format = object.attr("format");
        if (py::isinstance<BlockFormat>(format)) {
            return format.cast<BlockFormat>();
        }
    }
    throw py::value_error("expected a Namespace or a BlockFormat, got " + type_name(object));
}

// The storage tag bits a check compares: a Namespace's LBSTM, all of them for
// a BlockFormat.
std::uint64_t storage_tag_mask_of(const py::object& object) {
    if (!py::isinstance<BlockFormat>(object) && py::hasattr(object, "storage_tag_mask")) {
        return object.attr("storage_tag_mask").cast<std::uint64_t>();
    }
    return ~std::uint64_t{0};
}

// A held, C-contiguous view of a bytes-like object (writable when asked).
class View {
  public:
    View(const py::object& object, bool writable, const char* what) {
        const int flags = writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(object.ptr(), &view_, flags) != 0) {
            PyErr_Clear();
            throw py::value_error(std::string(what) + ": a " + type_name(object) + " is not a " +
                                  (writable ? "writable " : "") + "C-contiguous buffer");
        }
    }
    View(const View&) = delete;
    View& operator=(const View&) = delete;
    ~View() { PyBuffer_Release(&view_); }
    std::byte* data() const { return static_cast<std::byte*>(view_.buf); }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

  private:
    Py_buffer view_{};
};

// The whole blocks (data and metadata interleaved) a helper works on.
std::span<std::byte> blocks_of(const View& view, const BlockFormat& format,
                               std::optional<std::uint64_t> blocks, std::uint64_t offset,
                               const char* what) {
    if (!has_pi(format)) {
        throw py::value_error(std::string(what) + ": the block format (" + repr(format) +
                              ") has no protection information");
    }
    const std::uint64_t block = format.extended_bytes();
    const std::uint64_t count =
        blocks_in_buffer(view.size(), offset, block, blocks, std::string(what) + ": ");
    return {view.data() + offset, static_cast<std::size_t>(count * block)};
}

const char* check_identifier(nvmeof::PiCheck check) {
    switch (check) {
        case nvmeof::PiCheck::guard:
            return "guard";
        case nvmeof::PiCheck::apptag:
            return "apptag";
        case nvmeof::PiCheck::reftag:
            return "reftag";
        case nvmeof::PiCheck::storage_tag:
            return "storage_tag";
        case nvmeof::PiCheck::none:
            break;
    }
    return "none";
}

// As the NVMe status a controller answers the same failure with.
const char* check_status_name(nvmeof::PiCheck check) {
    switch (check) {
        case nvmeof::PiCheck::guard:
            return "End-to-end Guard Check Error";
        case nvmeof::PiCheck::apptag:
            return "End-to-end Application Tag Check Error";
        case nvmeof::PiCheck::reftag:
            return "End-to-end Reference Tag Check Error";
        case nvmeof::PiCheck::storage_tag:
            return "End-to-end Storage Tag Check Error";
        case nvmeof::PiCheck::none:
            break;
    }
    return "no error";
}

void pi_generate(const py::object& target, const py::object& buffer, std::uint64_t slba,
                 std::optional<std::uint64_t> blocks, std::uint64_t offset, std::int64_t apptag,
                 std::optional<std::int64_t> reftag, std::uint64_t storage_tag) {
    const BlockFormat format = format_of(target);
    const nvmeof::Protection protection =
        protection_from(format, false, 0, apptag, 0xFFFF, reftag, storage_tag);
    const View view(buffer, true, "pi_generate");
    const std::span<std::byte> range = blocks_of(view, format, blocks, offset, "pi_generate");
    const nvmeof::PiTags tags = nvmeof::pi_tags(format, protection, slba);
    py::gil_scoped_release no_gil;
    nvmeof::pi_generate(format, range, tags);
}

void pi_verify(const py::object& target, const py::object& buffer, std::uint64_t slba,
               std::optional<std::uint64_t> blocks, std::uint64_t offset, std::int64_t prchk,
               std::int64_t apptag, std::int64_t apptag_mask, std::optional<std::int64_t> reftag,
               std::uint64_t storage_tag) {
    const BlockFormat format = format_of(target);
    const nvmeof::Protection protection =
        protection_from(format, false, prchk, apptag, apptag_mask, reftag, storage_tag);
    const View view(buffer, false, "pi_verify");
    const std::span<std::byte> range = blocks_of(view, format, blocks, offset, "pi_verify");
    const nvmeof::PiTags tags =
        nvmeof::pi_tags(format, protection, slba, storage_tag_mask_of(target));
    nvmeof::PiMismatch mismatch;
    {
        py::gil_scoped_release no_gil;
        mismatch = nvmeof::pi_verify(format, range, protection.prinfo, tags);
    }
    if (!mismatch) {
        return;
    }
    const std::uint64_t lba = slba + mismatch.block;
    py::dict fields;
    fields["check"] = check_identifier(mismatch.check);
    fields["block"] = mismatch.block;
    fields["lba"] = lba;
    fields["expected"] = mismatch.expected;
    fields["found"] = mismatch.found;
    const std::string message = std::string(check_status_name(mismatch.check)) + " in block " +
                                std::to_string(mismatch.block) + " (LBA " + std::to_string(lba) +
                                "): " + std::string(nvmeof::pi_check_name(mismatch.check)) + " " +
                                hex(mismatch.found) + ", expected " + hex(mismatch.expected);
    const auto type = py::module_::import("nvmeof.errors").attr("ProtectionError");
    const py::object instance = type(message, **fields);
    PyErr_SetObject(type.ptr(), instance.ptr());
    throw py::error_already_set();
}

}  // namespace

unsigned pi_guard_bits(const BlockFormat& f) {
    return has_pi(f) ? f.guard_bits() : 0;
}

bool pi_first(const BlockFormat& f) {
    return has_pi(f) && f.pi_first;
}

unsigned storage_tag_bits(const BlockFormat& f) {
    return has_pi(f) ? f.storage_tag_bits : 0;
}

nvmeof::Protection protection_from(const BlockFormat& format, bool pract, std::int64_t prchk,
                                   std::int64_t apptag, std::int64_t apptag_mask,
                                   std::optional<std::int64_t> reftag, std::uint64_t storage_tag) {
    constexpr std::int64_t kChecks = nvmeof::kPrchkAll | nvmeof::kCheckStorageTag;
    if (prchk < 0 || (prchk & ~kChecks) != 0) {
        throw py::value_error("prchk: " + std::to_string(prchk) +
                              " is not a combination of Prchk.GUARD, Prchk.APPTAG, "
                              "Prchk.REFTAG and Prchk.STORAGE_TAG");
    }
    if (storage_tag > format.storage_tag_max()) {
        throw py::value_error("storage_tag: " + std::to_string(storage_tag) + " does not fit the " +
                              std::to_string(format.storage_tag_bits) +
                              "-bit storage tag of the block format");
    }
    if (apptag < 0 || apptag > 0xFFFF) {
        throw py::value_error("apptag: " + std::to_string(apptag) +
                              " is not 16 bits (0 to 0xFFFF)");
    }
    if (apptag_mask < 0 || apptag_mask > 0xFFFF) {
        throw py::value_error("apptag_mask: " + std::to_string(apptag_mask) +
                              " is not 16 bits (0 to 0xFFFF)");
    }
    nvmeof::Protection p;
    p.prinfo = static_cast<std::uint8_t>((pract ? nvmeof::kPract : 0) | prchk);
    p.apptag = static_cast<std::uint16_t>(apptag);
    p.apptag_mask = static_cast<std::uint16_t>(apptag_mask);
    if (reftag) {
        if (*reftag < 0 || static_cast<std::uint64_t>(*reftag) > format.reftag_mask()) {
            throw py::value_error("reftag: " + std::to_string(*reftag) + " does not fit the " +
                                  std::to_string(std::min(format.reftag_bits(), 64u)) +
                                  "-bit reference tag");
        }
        p.reftag = static_cast<std::uint64_t>(*reftag);
    }
    p.storage_tag = storage_tag;
    return p;
}

void bind_protection(py::module_& m) {
    m.attr("PRCHK_REFTAG") = nvmeof::kPrchkReftag;
    m.attr("PRCHK_APPTAG") = nvmeof::kPrchkApptag;
    m.attr("PRCHK_GUARD") = nvmeof::kPrchkGuard;
    m.attr("PRCHK_STORAGE_TAG") = nvmeof::kCheckStorageTag;

    py::class_<BlockFormat>(
        m, "BlockFormat",
        "A namespace's block layout: lba_size data bytes, then metadata_size metadata bytes "
        "(interleaved: an extended LBA), holding the protection information (PI) of pi_type "
        "1-3 with a pi_guard_bits guard, at the metadata's start (pi_first) or end, and a "
        "storage tag of storage_tag_bits in it (the NVM command set's STS).")
        .def(py::init(&make_format), py::arg("lba_size") = 512, py::arg("metadata_size") = 0,
             py::arg("pi_type") = 0, py::kw_only(), py::arg("pi_guard_bits") = 16,
             py::arg("pi_first") = false, py::arg("storage_tag_bits") = py::none())
        .def_property_readonly(
            "lba_size", [](const BlockFormat& f) { return f.data_bytes; }, "Data bytes per block.")
        .def_property_readonly(
            "metadata_size", [](const BlockFormat& f) { return f.metadata_bytes; },
            "Metadata bytes per block (nvme id-ns: ms).")
        .def_property_readonly(
            "pi_type", [](const BlockFormat& f) { return static_cast<int>(f.pi_type); },
            "Protection information type: 0 (none), 1, 2 or 3 (DPS bits 2:0).")
        .def_property_readonly(
            "pi_guard_bits", &pi_guard_bits,
            "16 (CRC-16/T10-DIF), 32 (CRC-32C) or 64 (CRC-64/NVME); 0 without PI.")
        .def_property_readonly(
            "pi_first", [](const BlockFormat& f) { return pi_first(f); },
            "PI in the first bytes of the metadata, else its last (DPS bit 3).")
        .def_property_readonly("storage_tag_bits", &storage_tag_bits,
                               "Bits of the storage tag in the PI (STS); 0 without.")
        .def_property_readonly(
            "pi_size", [](const BlockFormat& f) { return f.pi_bytes(); },
            "Bytes of PI per block: 8 (16-bit guard), 16 (32- or 64-bit), 0.")
        .def(
            "buffer_block_size",
            [](const BlockFormat& f, bool pract) { return f.transfer_block_bytes(pract); },
            py::arg("pract") = false,
            "Bytes per block in a transfer's buffer: lba_size + metadata_size, or lba_size "
            "alone when pract has the controller insert and strip PI that is all the metadata.")
        .def("__eq__",
             [](const BlockFormat& a, const py::object& b) {
                 return py::isinstance<BlockFormat>(b) && key(a) == key(b.cast<BlockFormat>());
             })
        .def("__hash__", [](const BlockFormat& f) { return py::hash(py::cast(key(f))); })
        .def("__repr__", &repr);

    m.def("pi_generate", &pi_generate, py::arg("format"), py::arg("buffer"), py::arg("slba") = 0,
          py::arg("blocks") = py::none(), py::kw_only(), py::arg("buffer_offset") = 0,
          py::arg("apptag") = 0, py::arg("reftag") = py::none(), py::arg("storage_tag") = 0,
          "Writes the protection information of each block of `buffer` (whole blocks of "
          "lba_size + metadata_size bytes from buffer_offset; `blocks` of them, default all): "
          "the guard over its data, `apptag`, `storage_tag` (formats with one), and the "
          "reference tag (types 1 and 2: reftag, default slba, counting up a block at a time; "
          "type 3: reftag, default slba, in every block). `format` is a Namespace or a "
          "BlockFormat. For a write with pract=False.");
    m.def("pi_verify", &pi_verify, py::arg("format"), py::arg("buffer"), py::arg("slba") = 0,
          py::arg("blocks") = py::none(), py::kw_only(), py::arg("buffer_offset") = 0,
          py::arg("prchk") = nvmeof::kPrchkAll, py::arg("apptag") = 0,
          py::arg("apptag_mask") = 0xFFFF, py::arg("reftag") = py::none(),
          py::arg("storage_tag") = 0,
          "Checks the protection information of the blocks of `buffer` (as pi_generate lays "
          "them out) as a controller does for `prchk`: the guard, the apptag bits under "
          "apptag_mask, the reference tag (reftag, default slba), with Prchk.STORAGE_TAG the "
          "storage tag (a Namespace's storage_tag_mask bits of it). Blocks whose apptag is "
          "0xFFFF (type 3: and storage and reference tags all ones) are not checked. Raises "
          "ProtectionError (an OSError with errno EILSEQ: .check, .block, .lba, .expected, "
          ".found) at the first mismatch.");
    m.def(
        "crc16_t10dif",
        [](const py::object& data, std::uint16_t value) {
            const View view(data, false, "crc16_t10dif");
            py::gil_scoped_release no_gil;
            return nvmeof::crc16_t10dif(value, view.data(), view.size());
        },
        py::arg("data"), py::arg("value") = 0,
        "CRC-16/T10-DIF of `data` (the 16-bit guard), continued from `value`.");
    m.def(
        "crc64_nvme",
        [](const py::object& data, std::uint64_t value) {
            const View view(data, false, "crc64_nvme");
            py::gil_scoped_release no_gil;
            return nvmeof::crc64_nvme(value, view.data(), view.size());
        },
        py::arg("data"), py::arg("value") = 0,
        "CRC-64/NVME of `data` (the 64-bit guard), continued from `value`.");
    m.def(
        "crc32c",
        [](const py::object& data, std::uint32_t value) {
            const View view(data, false, "crc32c");
            py::gil_scoped_release no_gil;
            return nvmeof::crc32c(value, view.data(), view.size());
        },
        py::arg("data"), py::arg("value") = 0,
        "CRC-32C (Castagnoli) of `data` (the 32-bit guard), continued from `value`.");
}

}  // namespace nvmeof_python
