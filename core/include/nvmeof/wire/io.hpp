// NVM I/O commands: Read, Write, Flush, Write Zeroes, Dataset Management.
#pragma once

#include <cstdint>

#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/protection.hpp"

namespace nvmeof::wire {

// CDW12 of Read/Write/Write Zeroes.
inline constexpr std::uint32_t kNlbMask = 0xFFFF;
inline constexpr unsigned kWriteZeroesDeallocateBit = 25;
inline constexpr unsigned kForceUnitAccessBit = 30;
inline constexpr unsigned kLimitedRetryBit = 31;
inline constexpr unsigned kSlbaHighShift = 32;

// Dataset Management CDW10 / CDW11.
inline constexpr std::uint32_t kDsmMaxRanges = 256;
inline constexpr std::uint32_t kDsmRangeCountMask = 0xFF;
inline constexpr std::uint32_t kDsmAttributeDeallocate = 1u << 2;

// One Dataset Management range. The length is a plain count of blocks (not 0's
// based, unlike NLB).
struct DsmRange {
    std::uint32_t context_attributes;
    std::uint32_t length_blocks;
    std::uint64_t slba;
};
static_assert(sizeof(DsmRange) == 16);
static_assert(offsetof(DsmRange, length_blocks) == 4);
static_assert(offsetof(DsmRange, slba) == 8);

// Read or Write of `blocks` blocks (1..65536, written as the 0's-based NLB) at
// `slba`, with data in `buffer` (exactly blocks × lba_size bytes of it, keyed).
// Mirrors protocol.rw_command of the Python package. Throws std::invalid_argument
// for another opcode, a block count outside 1..65536, a transfer above the 24-bit
// keyed SGL limit, or a buffer shorter than the transfer.
Sqe rw_command(IoOpcode opcode, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
               const RemoteBuffer& buffer, std::uint32_t lba_size);

Sqe flush_command(std::uint32_t nsid);

// Write Zeroes of `blocks` blocks (1..65536); no data.
Sqe write_zeroes_command(std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                         bool deallocate = false);

// Dataset Management with `ranges` DsmRange entries (1..256) in `buffer`.
Sqe dataset_management_command(std::uint32_t nsid, std::uint32_t ranges, std::uint32_t attributes,
                               const RemoteBuffer& buffer);

// Fields of a received Read/Write/Write Zeroes command.
inline std::uint64_t command_slba(const Sqe& sqe) {
    return static_cast<std::uint64_t>(sqe.cdw10) |
           (static_cast<std::uint64_t>(sqe.cdw11) << kSlbaHighShift);
}
inline std::uint32_t command_block_count(const Sqe& sqe) {
    return (sqe.cdw12 & kNlbMask) + 1;
}
// End-to-end protection fields of a Read/Write/Compare/Write Zeroes: PRINFO
// (kPract | kPrchk* bits) in CDW12 and, for kCheckStorageTag, its STC bit; the
// storage tag and initial reference tag in the storage and reference space
// (CDW14, CDW3, CDW2 as the format's width needs); the application tag and mask
// in CDW15.
// CDW12's PRINFO and STC bits of `prinfo`, and CDW15 of the tags: a transport
// that builds a fresh command (those bits clear) ORs and stores them itself.
inline std::uint32_t prinfo_cdw12_bits(std::uint8_t prinfo) {
    return ((std::uint32_t{prinfo} & kPrinfoMask) << kPrinfoShift) |
           ((std::uint32_t{prinfo} & kCheckStorageTag) << kStcFromCheckShift);
}
inline std::uint32_t apptag_cdw15(std::uint16_t apptag, std::uint16_t apptag_mask) {
    return std::uint32_t{apptag} | (std::uint32_t{apptag_mask} << kApptagMaskShift);
}
inline void set_protection(Sqe& sqe, std::uint8_t prinfo, const CommandTagWords& words,
                           std::uint16_t apptag, std::uint16_t apptag_mask) {
    sqe.cdw12 = (sqe.cdw12 & ~(kPrinfoMask << kPrinfoShift) & ~kStcBit) | prinfo_cdw12_bits(prinfo);
    sqe.cdw2 = words.cdw2;
    sqe.cdw3 = words.cdw3;
    sqe.cdw14 = words.cdw14;
    sqe.cdw15 = apptag_cdw15(apptag, apptag_mask);
}
inline void set_protection(Sqe& sqe, const BlockFormat& format, std::uint8_t prinfo,
                           const PiTags& tags) {
    set_protection(sqe, prinfo, command_tag_words(format, tags.storage_tag, tags.reftag),
                   tags.apptag, tags.apptag_mask);
}
// The words of a command's space from those of its storage tag alone
// (command_tag_words(format, storage_tag, 0)) and a reference tag masked to
// the format's width: the reference tag is the space's low bits, at most 64,
// so it adds to CDW14 and CDW3 only. What a transport does per command.
inline CommandTagWords with_reftag(CommandTagWords storage_words, std::uint64_t reftag) {
    storage_words.cdw14 |= static_cast<std::uint32_t>(reftag);
    storage_words.cdw3 |= static_cast<std::uint32_t>(reftag >> 32);
    return storage_words;
}
// PRINFO, with kCheckStorageTag for the STC bit.
inline std::uint8_t command_prinfo(const Sqe& sqe) {
    return static_cast<std::uint8_t>(((sqe.cdw12 >> kPrinfoShift) & kPrinfoMask) |
                                     ((sqe.cdw12 & kStcBit) != 0 ? kCheckStorageTag : 0));
}
inline PiTags command_tags(const Sqe& sqe, const BlockFormat& format) {
    PiTags tags;
    split_command_tag_words(format, {sqe.cdw2, sqe.cdw3, sqe.cdw14}, tags.storage_tag, tags.reftag);
    tags.apptag = static_cast<std::uint16_t>(sqe.cdw15);
    tags.apptag_mask = static_cast<std::uint16_t>(sqe.cdw15 >> kApptagMaskShift);
    return tags;
}
inline std::uint32_t dsm_range_count(const Sqe& sqe) {
    return (sqe.cdw10 & kDsmRangeCountMask) + 1;
}

}  // namespace nvmeof::wire
