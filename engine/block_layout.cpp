#include "block_layout.hpp"

#include <cinttypes>
#include <cstdio>

#include "target_spec.hpp"

namespace nvmeof::engine {
namespace {

// The first block size that is not a multiple of `unit` (0: none).
std::uint64_t first_misfit(std::span<const std::uint64_t> sizes, std::uint32_t unit) {
    for (const std::uint64_t bs : sizes) {
        if (bs % unit != 0) {
            return bs;
        }
    }
    return 0;
}

std::string hex(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%" PRIx64, value);
    return text;
}

}  // namespace

std::string_view layout_name(BufferLayout layout) {
    switch (layout) {
        case BufferLayout::plain:
            return "plain";
        case BufferLayout::interleaved:
            return "interleaved";
        case BufferLayout::data_only:
            return "data-only";
    }
    return "?";
}

FileLayout choose_layout(const BlockFormat& format, const ProtectionOptions& options,
                         std::span<const std::uint64_t> block_sizes, std::string_view where) {
    FileLayout l;
    l.format = format;
    const bool pi = format.pi_type != PiType::none;
    l.pi_options_apply = pi;
    if (pi) {
        // A namespace without PI takes no PRINFO (the controller ignores it,
        // and the library refuses it): pi_act and pi_chk do not apply there.
        l.protection.prinfo =
            static_cast<std::uint8_t>((options.pi_act ? kPract : 0) | options.pi_chk);
        l.protection.apptag = options.apptag;
        l.protection.apptag_mask = options.apptag_mask;
        l.protection.reftag = kReftagFromLba;
        l.generate = !options.pi_act;
        l.host_checks = options.pi_act ? 0 : options.pi_chk;
    }
    const std::uint32_t data = format.data_bytes;
    l.wire_block_bytes = format.transfer_block_bytes(l.protection.pract());
    if (l.wire_block_bytes == data) {
        l.layout = BufferLayout::plain;
        l.block_bytes = data;
        if (const std::uint64_t bs = first_misfit(block_sizes, data); bs != 0) {
            throw SpecError("block size " + std::to_string(bs) + " is not a multiple of the " +
                            std::to_string(data) + "-byte LBA size of " + std::string(where));
        }
        return l;
    }
    if (first_misfit(block_sizes, l.wire_block_bytes) == 0) {
        l.layout = BufferLayout::interleaved;
        l.block_bytes = l.wire_block_bytes;
    } else if (first_misfit(block_sizes, data) == 0) {
        l.layout = BufferLayout::data_only;
        l.block_bytes = data;
    } else {
        const std::string ns = std::string(where) + " (" + format_name(format) + ")";
        const std::string sizes = "a multiple of " + std::to_string(l.wire_block_bytes) +
                                  " bytes (each block's data and metadata, interleaved) or of " +
                                  std::to_string(data) +
                                  " bytes (data only; the engine adds the metadata)";
        for (const std::uint64_t bs : block_sizes) {
            if (bs % l.wire_block_bytes != 0 && bs % data != 0) {
                throw SpecError("block size " + std::to_string(bs) + " fits no layout of " + ns +
                                ": " + sizes);
            }
        }
        // Each fits one layout, but not all the same one.
        throw SpecError("block sizes " + std::to_string(first_misfit(block_sizes, data)) + " and " +
                        std::to_string(first_misfit(block_sizes, l.wire_block_bytes)) +
                        " need different layouts of " + ns +
                        ": the job's block sizes must all be " + sizes);
    }
    return l;
}

std::string format_name(const BlockFormat& format) {
    std::string name = std::to_string(format.data_bytes);
    if (format.metadata_bytes == 0) {
        return name;
    }
    name += "+" + std::to_string(format.metadata_bytes);
    if (format.pi_type == PiType::none) {
        return name + ", no PI";
    }
    name += ", PI type " + std::to_string(static_cast<unsigned>(format.pi_type)) + " (" +
            std::to_string(format.guard_bits()) + "-bit guard, ";
    if (format.storage_tag_bits != 0) {
        name += std::to_string(format.storage_tag_bits) + "-bit storage tag, ";
    }
    return name + (format.pi_first ? "first" : "last") + " in the metadata)";
}

std::string describe_layout(const FileLayout& l) {
    std::string text = format_name(l.format) + "; " + std::string(layout_name(l.layout)) +
                       " layout, " + std::to_string(l.block_bytes) + "-byte blocks in fio's buffer";
    if (l.staged()) {
        text += " (staged as " + std::to_string(l.wire_block_bytes) + "-byte blocks)";
    }
    if (!l.pi_options_apply) {
        return text + "; metadata " + (l.staged() ? "zeroed" : "as fio's buffer holds it");
    }
    text += l.protection.pract() ? "; PI inserted and stripped by the controller (pi_act=1)"
                                 : "; PI generated and checked by the host (pi_act=0)";
    const std::uint8_t checks = l.protection.prinfo & kPrchkAll;
    text += ", checks " + pi_chk_names(checks);
    if (checks != 0) {
        text += ", apptag " + hex(l.protection.apptag) + " mask " + hex(l.protection.apptag_mask);
    }
    return text;
}

std::string describe_mismatch(const PiMismatch& m, std::uint64_t first_lba) {
    // The names of the NVMe status the controller returns for the same check.
    const char* check = m.check == PiCheck::guard         ? "Guard"
                        : m.check == PiCheck::apptag      ? "Application Tag"
                        : m.check == PiCheck::storage_tag ? "Storage Tag"
                                                          : "Reference Tag";
    return std::string("End-to-end ") + check + " Check Error found by the host at LBA " +
           std::to_string(first_lba + m.block) + ": expected " + hex(m.expected) + ", found " +
           hex(m.found);
}

}  // namespace nvmeof::engine
