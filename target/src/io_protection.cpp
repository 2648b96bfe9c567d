// CommandCore: Read, Write and Write Zeroes of a namespace with end-to-end
// protection information (PI), and the corrupt-* faults.
//
// The store holds extended blocks (each block's data, then its metadata with
// the PI in it), which is also how a command's data crosses the wire unless
// PRACT asks the controller to insert and strip a PI that is the whole
// metadata. docs/target-cli.md says what each PRINFO combination does.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core_internal.hpp"
#include "nvmeof/wire/io.hpp"

namespace nvmeof::target {

using wire::Sqe;
using wire::Status;

namespace {

// PI bytes of a block never written: all ones, the escape that turns checking off.
constexpr std::byte kUnwrittenPiByte{0xFF};
// Write Zeroes builds and stores its blocks this many at a time.
constexpr std::uint64_t kZeroesRunBlocks = 256;
// A corrupt-* fault flips this bit of its field: wrong whatever the value, and
// the smallest error a check must catch.
constexpr std::uint64_t kCorruptedBit = 1;

std::string hex(std::uint64_t value) {
    char text[sizeof "0x" + 2 * sizeof value];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

Status pi_check_status(wire::PiCheck check) {
    wire::MediaStatus code = wire::MediaStatus::end_to_end_guard_check_error;
    if (check == wire::PiCheck::apptag) {
        code = wire::MediaStatus::end_to_end_application_tag_check_error;
    } else if (check == wire::PiCheck::reftag) {
        code = wire::MediaStatus::end_to_end_reference_tag_check_error;
    } else if (check == wire::PiCheck::storage_tag) {
        code = wire::MediaStatus::end_to_end_storage_tag_check_error;
    }
    // Retrying cannot help: the same buffer or the same stored block fails again.
    return Status::make(wire::StatusCodeType::media, static_cast<std::uint8_t>(code), true);
}

Status invalid_protection_information() {
    return Status::make(
        wire::StatusCodeType::command_specific,
        static_cast<std::uint8_t>(wire::NvmCommandStatus::invalid_protection_information), true);
}

// The command's tags, read as wide as the format's storage and reference space.
wire::PiTags tags_of(const wire::BlockFormat& format, const Sqe& sqe) {
    return wire::command_tags(sqe, format);
}

// The checks a command asks for: PRCHK, and STC on a format with a storage tag.
std::uint8_t checks_of(const wire::BlockFormat& format, std::uint8_t prinfo) {
    const std::uint8_t stc = format.storage_tag_bits != 0 ? wire::kCheckStorageTag : 0;
    return prinfo & (wire::kPrchkAll | stc);
}

std::span<std::uint8_t> as_store_bytes(std::span<std::byte> bytes) {
    return {reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()};
}

// A block never written, or deallocated, is all zeroes in the store (a new
// file, fresh memory, Dataset Management). It reads with PI all ones, as an
// SSD returns a deallocated block, so that a host checking PI can read it.
// Only a 16-bit-guard block written with zero data, application tag 0 and
// reference tag 0 is all zeroes too; it reads the same way, unchecked.
void mark_unwritten(const wire::BlockFormat& format, std::span<std::byte> blocks) {
    const std::uint32_t step = format.extended_bytes();
    const auto zero = [](std::byte b) { return b == std::byte{0}; };
    for (std::size_t at = 0; at + step <= blocks.size(); at += step) {
        std::byte* block = blocks.data() + at;
        std::byte* pi = block + format.pi_offset();
        // The PI first: a written block's is almost never zero.
        if (std::all_of(pi, pi + format.pi_bytes(), zero) &&
            std::all_of(block, block + step, zero)) {
            std::fill(pi, pi + format.pi_bytes(), kUnwrittenPiByte);
        }
    }
}

// Data only (PRACT, PI the whole metadata) to and from extended blocks.
void spread_data(const wire::BlockFormat& format, std::span<const std::byte> data,
                 std::span<std::byte> blocks) {
    const std::size_t count = data.size() / format.data_bytes;
    for (std::size_t i = 0; i < count; ++i) {
        std::memcpy(blocks.data() + i * format.extended_bytes(),
                    data.data() + i * format.data_bytes, format.data_bytes);
    }
}

void gather_data(const wire::BlockFormat& format, std::span<const std::byte> blocks,
                 std::span<std::byte> data) {
    const std::size_t count = data.size() / format.data_bytes;
    for (std::size_t i = 0; i < count; ++i) {
        std::memcpy(data.data() + i * format.data_bytes,
                    blocks.data() + i * format.extended_bytes(), format.data_bytes);
    }
}

std::string_view corrupt_fault_name(wire::PiCheck field) {
    switch (field) {
        case wire::PiCheck::apptag:
            return "corrupt-apptag";
        case wire::PiCheck::reftag:
            return "corrupt-reftag";
        case wire::PiCheck::storage_tag:
            return "corrupt-storage-tag";
        default:
            return "corrupt-guard";
    }
}

void log_mismatch(const Sqe& sqe, const wire::PiMismatch& mismatch) {
    std::fprintf(stderr,
                 "nvmeof-target: %s of NSID %u LBA %llu+%u: %s check failed at LBA %llu "
                 "(expected 0x%llx, found 0x%llx)\n",
                 std::string(wire::command_name(sqe, wire::QueueKind::io)).c_str(), sqe.nsid,
                 static_cast<unsigned long long>(wire::command_slba(sqe)),
                 wire::command_block_count(sqe),
                 std::string(wire::pi_check_name(mismatch.check)).c_str(),
                 static_cast<unsigned long long>(wire::command_slba(sqe) + mismatch.block),
                 static_cast<unsigned long long>(mismatch.expected),
                 static_cast<unsigned long long>(mismatch.found));
}

}  // namespace

Status check_protection_fields(const Namespace& ns, const Sqe& sqe) {
    const wire::BlockFormat& format = ns.format;
    if (format.pi_type == wire::PiType::none) {
        return Status::success();
    }
    const std::uint8_t prinfo = wire::command_prinfo(sqe);
    // NVM Command Set, Write Zeroes: PRCHK shall be cleared (there is no data
    // from the host to check); QEMU refuses it the same way.
    if (static_cast<wire::IoOpcode>(sqe.opcode) == wire::IoOpcode::write_zeroes &&
        (prinfo & wire::kPrchkAll) != 0) {
        return invalid_protection_information();
    }
    // NVM Command Set, protection information checking: with Type 1 the
    // initial reference tag is the least significant bits of the SLBA (as
    // wide as the reference tag), and a command checking reference tags whose
    // ILBRT differs completes with Invalid Protection Information (QEMU's
    // nvme_check_prinfo asks for PRCHK reference tag the same way).
    if (format.pi_type == wire::PiType::type1 && (prinfo & wire::kPrchkReftag) != 0 &&
        tags_of(format, sqe).reftag != (wire::command_slba(sqe) & format.reftag_mask())) {
        return invalid_protection_information();
    }
    return Status::success();
}

std::uint32_t wire_block_bytes(const Namespace& ns, const Sqe& sqe, std::uint64_t blocks,
                               const char*& rule) {
    const wire::BlockFormat& format = ns.format;
    if (format.metadata_bytes == 0) {
        rule = "the data of each block";
        return format.data_bytes;
    }
    if (format.metadata_transferred(pract_of(ns, sqe))) {
        rule = "each block's data and metadata";
        return format.extended_bytes();
    }
    if (format.pi_bytes() == wire::kPi16Bytes) {
        rule =
            "each block's data only: with PRACT the controller inserts and strips PI that is "
            "the whole metadata";
        return format.data_bytes;
    }
    if (std::uint64_t{sqe.dptr.length()} == blocks * format.extended_bytes()) {
        return format.extended_bytes();  // SPDK's host: 16-byte PI sent with PRACT
    }
    rule =
        "each block's data only (with PRACT the controller inserts and strips PI that is the "
        "whole metadata), or its data and 16-byte PI as SPDK's host sends them";
    return format.data_bytes;
}

namespace {

// Whether a command's data buffer holds whole extended blocks (metadata on the
// wire) rather than their data alone (wire_block_bytes decided which).
bool metadata_on_wire(const wire::BlockFormat& format, std::size_t data_bytes,
                      std::uint64_t blocks) {
    return data_bytes == blocks * format.extended_bytes();
}

}  // namespace

Completion CommandCore::read_protected(Namespace& ns, const Sqe& sqe,
                                       std::span<std::uint8_t> data) {
    const wire::BlockFormat& format = ns.format;
    const std::uint8_t prinfo = wire::command_prinfo(sqe);
    const std::uint64_t blocks = wire::command_block_count(sqe);
    std::span<std::byte> extended = std::as_writable_bytes(data);
    const bool strip = !metadata_on_wire(format, data.size(), blocks);
    if (strip) {
        pi_scratch_.resize(blocks * format.extended_bytes());
        extended = pi_scratch_;
    }
    const std::uint64_t offset = wire::command_slba(sqe) * format.extended_bytes();
    if (const int error = ns.storage->read(offset, as_store_bytes(extended))) {
        return storage_status(error);
    }
    mark_unwritten(format, extended);
    // Checked whatever PRACT says: PRACT only decides whether the PI goes to the host.
    const std::uint64_t slba = wire::command_slba(sqe);
    const bool skip =
        std::any_of(config_.faults.skip_pi_checks.begin(), config_.faults.skip_pi_checks.end(),
                    [&](std::uint64_t lba) { return lba >= slba && lba - slba < blocks; });
    if (skip) {
        log_fault("skip-pi-checks: " + std::string(wire::command_name(sqe, wire::QueueKind::io)) +
                  " (CID " + std::to_string(sqe.command_id) + ") of NSID " +
                  std::to_string(ns.nsid) + " LBA " + std::to_string(slba) + "+" +
                  std::to_string(blocks) + " returned without its PI checks");
    }
    if (const wire::PiMismatch mismatch =
            skip ? wire::PiMismatch{}
                 : wire::pi_verify(format, extended, checks_of(format, prinfo),
                                   tags_of(format, sqe))) {
        log_mismatch(sqe, mismatch);
        return Completion{pi_check_status(mismatch.check)};
    }
    if (strip) {
        gather_data(format, extended, std::as_writable_bytes(data));
    }
    return Completion{};
}

Completion CommandCore::write_protected(Namespace& ns, const Sqe& sqe,
                                        std::span<std::uint8_t> data) {
    const wire::BlockFormat& format = ns.format;
    const std::uint8_t prinfo = wire::command_prinfo(sqe);
    const std::uint64_t slba = wire::command_slba(sqe);
    const wire::PiTags tags = tags_of(format, sqe);
    std::span<std::byte> extended = std::as_writable_bytes(data);
    if (!pract_of(ns, sqe)) {
        // The host's PI, checked as PRCHK asks, stored as sent.
        if (const wire::PiMismatch mismatch =
                wire::pi_verify(format, extended, checks_of(format, prinfo), tags)) {
            log_mismatch(sqe, mismatch);
            return Completion{pi_check_status(mismatch.check)};
        }
    } else {
        // PRACT: the controller's own PI replaces whatever PI the host sent
        // (if any: none crosses the wire when the PI is the whole metadata);
        // metadata bytes beside it are kept. PRCHK is not applied: the PI
        // just generated passes every check by construction.
        if (!metadata_on_wire(format, data.size(), wire::command_block_count(sqe))) {
            pi_scratch_.resize(std::uint64_t{wire::command_block_count(sqe)} *
                               format.extended_bytes());
            spread_data(format, extended, pi_scratch_);
            extended = pi_scratch_;
        }
        wire::pi_generate(format, extended, tags);
    }
    corrupt_protection(ns, sqe, slba, extended);
    return storage_status(
        ns.storage->write(slba * format.extended_bytes(), as_store_bytes(extended)));
}

Completion CommandCore::write_zeroes_protected(Namespace& ns, const Sqe& sqe) {
    // Zero data with valid PI (the command's application tag, reference tags
    // from its ILBRT), whatever PRACT says: the host sends no PI to store, and
    // a later Read checking PI must pass.
    const wire::BlockFormat& format = ns.format;
    const std::uint64_t slba = wire::command_slba(sqe);
    const std::uint64_t blocks = wire::command_block_count(sqe);
    const wire::PiTags tags = tags_of(format, sqe);
    for (std::uint64_t done = 0; done < blocks;) {
        const std::uint64_t run = std::min(kZeroesRunBlocks, blocks - done);
        pi_scratch_.assign(run * format.extended_bytes(), std::byte{0});
        wire::PiTags run_tags = tags;
        if (format.pi_type != wire::PiType::type3) {
            run_tags.reftag = (tags.reftag + done) & format.reftag_mask();
        }
        wire::pi_generate(format, pi_scratch_, run_tags);
        corrupt_protection(ns, sqe, slba + done, pi_scratch_);
        if (const int error = ns.storage->write((slba + done) * format.extended_bytes(),
                                                as_store_bytes(pi_scratch_))) {
            return storage_status(error);
        }
        done += run;
    }
    return Completion{};
}

void CommandCore::corrupt_protection(const Namespace& ns, const Sqe& sqe, std::uint64_t slba,
                                     std::span<std::byte> blocks) {
    const wire::BlockFormat& format = ns.format;
    const std::uint64_t count = blocks.size() / format.extended_bytes();
    for (const CorruptPiFault& fault : config_.faults.corrupt_pi) {
        if (fault.lba < slba || fault.lba - slba >= count) {
            continue;
        }
        std::byte* block = blocks.data() + (fault.lba - slba) * format.extended_bytes();
        wire::PiFields pi = wire::pi_read(format, block);
        const wire::PiFields stored = pi;
        switch (fault.field) {
            case wire::PiCheck::apptag:
                pi.apptag = static_cast<std::uint16_t>(pi.apptag ^ kCorruptedBit);
                break;
            case wire::PiCheck::reftag:
                pi.reftag ^= kCorruptedBit;
                break;
            case wire::PiCheck::storage_tag:
                pi.storage_tag ^= kCorruptedBit;
                break;
            default:
                pi.guard ^= kCorruptedBit;
                break;
        }
        wire::pi_write(format, block, pi);
        const auto field_value = [&](const wire::PiFields& f) {
            switch (fault.field) {
                case wire::PiCheck::apptag:
                    return std::uint64_t{f.apptag};
                case wire::PiCheck::reftag:
                    return f.reftag;
                case wire::PiCheck::storage_tag:
                    return f.storage_tag;
                default:
                    return f.guard;
            }
        };
        log_fault(std::string(corrupt_fault_name(fault.field)) + ": " +
                  std::string(wire::command_name(sqe, wire::QueueKind::io)) + " (CID " +
                  std::to_string(sqe.command_id) + ") stores LBA " + std::to_string(fault.lba) +
                  " of NSID " + std::to_string(ns.nsid) + " with " +
                  std::string(wire::pi_check_name(fault.field)) + " " + hex(field_value(pi)) +
                  " instead of " + hex(field_value(stored)));
    }
}

}  // namespace nvmeof::target
