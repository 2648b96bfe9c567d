// End-to-end data protection: how a block with metadata is laid out on the wire,
// the protection information (PI) tuple in its metadata, the PRINFO bits and
// tags of a command, and generating and checking PI over a buffer of blocks.
//
// Over NVMe-oF a namespace's metadata travels interleaved with its data (an
// "extended LBA": each block's data followed by its metadata); a separate
// metadata buffer (MPTR) does not exist on fabrics. PI is 8 bytes (16-bit
// CRC-16/T10-DIF guard, 32-bit storage and reference space) or 16 bytes (the
// NVM command set's extended formats: 32-bit CRC-32C guard and 80-bit space, or
// 64-bit CRC-64/NVME guard and 48-bit space) at the start or the end of the
// metadata. A format with a storage tag (STS bits) keeps it in the top bits of
// the space and the reference tag in the rest. Fields of the tuple are
// big-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace nvmeof::wire {

// Identify Namespace DPS (byte 29).
inline constexpr std::uint8_t kDpsPiTypeMask = 0x7;
inline constexpr std::uint8_t kDpsPiFirst = 1u << 3;  // PI in the first bytes of metadata
// Identify Controller CTRATT bit 15: extended LBA formats (the NVM command set
// Identify Namespace, CNS 0x05 CSI 0, says each format's guard type).
inline constexpr std::uint32_t kCtrattExtendedLbaFormats = 1u << 15;
// ELBAF (one per LBA format of the NVM command set Identify Namespace): bits
// 6:0 storage tag size, bits 8:7 protection information format.
inline constexpr std::uint32_t kElbafStorageTagMask = 0x7F;
inline constexpr unsigned kElbafPiFormatShift = 7;
inline constexpr std::uint32_t kElbafPiFormatMask = 0x3;

// PRINFO: CDW12 bits 29:26 of Read, Write, Compare and Write Zeroes.
inline constexpr unsigned kPrinfoShift = 26;
inline constexpr std::uint32_t kPrinfoMask = 0xF;
inline constexpr std::uint8_t kPrchkReftag = 1u << 0;
inline constexpr std::uint8_t kPrchkApptag = 1u << 1;
inline constexpr std::uint8_t kPrchkGuard = 1u << 2;
inline constexpr std::uint8_t kPrchkAll = kPrchkReftag | kPrchkApptag | kPrchkGuard;
inline constexpr std::uint8_t kPract = 1u << 3;
// The storage tag check (STC, CDW12 bit 24) is not a PRINFO bit; the host and
// the checks here carry it beside them, as bit 4 of the same byte.
inline constexpr std::uint8_t kCheckStorageTag = 1u << 4;
inline constexpr std::uint32_t kStcBit = 1u << 24;
inline constexpr unsigned kStcFromCheckShift = 20;  // kCheckStorageTag << 20 == kStcBit
static_assert(std::uint32_t{kCheckStorageTag} << kStcFromCheckShift == kStcBit);
// CDW15: the application tag (bits 15:0) and its mask (bits 31:16).
inline constexpr unsigned kApptagMaskShift = 16;

enum class PiType : std::uint8_t { none = 0, type1 = 1, type2 = 2, type3 = 3 };
// The protection information format (PIF).
enum class PiGuard : std::uint8_t { crc16 = 0, crc32 = 1, crc64 = 2 };

inline constexpr std::uint32_t kPi16Bytes = 8;
inline constexpr std::uint32_t kPi32Bytes = 16;
inline constexpr std::uint32_t kPi64Bytes = 16;
// Bits of the storage and reference space of each format.
inline constexpr unsigned kSpace16Bits = 32;
inline constexpr unsigned kSpace32Bits = 80;
inline constexpr unsigned kSpace64Bits = 48;
inline constexpr unsigned kSpaceBitsByPif[] = {kSpace16Bits, kSpace32Bits, kSpace64Bits, 0};
// The storage tag sizes (STS) each format allows.
inline constexpr unsigned kMinStorageTag32Bits = 16;
inline constexpr unsigned kMaxStorageTag32Bits = 64;
inline constexpr std::uint16_t kApptagEscape = 0xFFFF;  // an apptag that turns checking off

struct Pi16 {
    std::uint8_t guard[2];
    std::uint8_t apptag[2];
    std::uint8_t reftag[4];
};
static_assert(sizeof(Pi16) == kPi16Bytes);

struct Pi32 {
    std::uint8_t guard[4];
    std::uint8_t apptag[2];
    std::uint8_t space[10];  // storage tag, then reference tag
};
static_assert(sizeof(Pi32) == kPi32Bytes);
static_assert(offsetof(Pi32, apptag) == 4);
static_assert(offsetof(Pi32, space) == 6);
static_assert(sizeof(Pi32::space) * 8 == kSpace32Bits);

struct Pi64 {
    std::uint8_t guard[8];
    std::uint8_t apptag[2];
    std::uint8_t reftag[6];  // storage tag, then reference tag
};
static_assert(sizeof(Pi64) == kPi64Bytes);
static_assert(offsetof(Pi64, apptag) == 8);
static_assert(offsetof(Pi64, reftag) == 10);
static_assert(sizeof(Pi64::reftag) * 8 == kSpace64Bits);
static_assert(sizeof(Pi16::reftag) * 8 == kSpace16Bits);

// The low `bits` bits set (all 64 from 64 up).
constexpr std::uint64_t low_bits(unsigned bits) {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// A namespace's block layout.
struct BlockFormat {
    std::uint32_t data_bytes = 512;    // logical block data
    std::uint32_t metadata_bytes = 0;  // interleaved after each block's data
    PiType pi_type = PiType::none;
    PiGuard guard = PiGuard::crc16;
    bool pi_first = false;              // PI at the start of the metadata, else at its end
    std::uint8_t storage_tag_bits = 0;  // STS: the top bits of the storage and reference space

    constexpr std::uint32_t pi_bytes() const {
        if (pi_type == PiType::none) {
            return 0;
        }
        static_assert(kPi32Bytes == kPi64Bytes);
        return guard == PiGuard::crc16 ? kPi16Bytes : kPi64Bytes;
    }
    constexpr unsigned space_bits() const {
        return kSpaceBitsByPif[static_cast<unsigned>(guard) & 3];
    }
    constexpr unsigned reftag_bits() const { return space_bits() - storage_tag_bits; }
    constexpr unsigned guard_bits() const {
        return guard == PiGuard::crc16 ? 16 : guard == PiGuard::crc32 ? 32 : 64;
    }
    constexpr std::uint32_t extended_bytes() const { return data_bytes + metadata_bytes; }
    // Offset of the PI tuple inside a block (data + metadata).
    constexpr std::uint32_t pi_offset() const {
        return pi_first ? data_bytes : extended_bytes() - pi_bytes();
    }
    // With PRACT the controller inserts and strips PI itself; when PI is the
    // whole metadata nothing of it is transferred.
    constexpr bool metadata_transferred(bool pract) const {
        return metadata_bytes != 0 && !(pract && metadata_bytes == pi_bytes());
    }
    // Bytes per block in the data buffer of a command.
    constexpr std::uint32_t transfer_block_bytes(bool pract) const {
        return metadata_transferred(pract) ? extended_bytes() : data_bytes;
    }
    // Reference tags wrap at the bits the storage tag leaves of the space.
    constexpr std::uint64_t reftag_mask() const { return low_bits(reftag_bits()); }
    constexpr std::uint64_t storage_tag_max() const { return low_bits(storage_tag_bits); }
};

// The storage tag sizes the NVM command set allows: 0-32 bits with the 16-bit
// guard, 16-64 with the 32-bit one, 0-48 with the 64-bit one.
constexpr bool storage_tag_bits_valid(PiGuard guard, unsigned bits) {
    switch (guard) {
        case PiGuard::crc16:
            return bits <= kSpace16Bits;
        case PiGuard::crc32:
            return bits >= kMinStorageTag32Bits && bits <= kMaxStorageTag32Bits;
        case PiGuard::crc64:
            return bits <= kSpace64Bits;
    }
    return false;
}

// The tags a command carries: the initial reference tag (of its first block;
// type 1 and 2 count it up block by block), the application tag and the mask
// of the apptag bits that are checked, and the storage tag (formats with STS)
// and the mask of its bits that are checked (the namespace's LBSTM: not sent
// in the command, the controller knows it).
struct PiTags {
    std::uint64_t reftag = 0;
    std::uint16_t apptag = 0;
    std::uint16_t apptag_mask = 0xFFFF;
    std::uint64_t storage_tag = 0;
    std::uint64_t storage_tag_mask = ~std::uint64_t{0};
};

// The check that failed, and where.
enum class PiCheck : std::uint8_t { none, guard, apptag, reftag, storage_tag };
struct PiMismatch {
    PiCheck check = PiCheck::none;
    std::uint64_t block = 0;  // index in the buffer
    std::uint64_t expected = 0;
    std::uint64_t found = 0;
    explicit operator bool() const { return check != PiCheck::none; }
};
std::string_view pi_check_name(PiCheck check);

// CRC-16/T10-DIF (poly 0x8BB7, init 0, not reflected), CRC-32C (Castagnoli,
// poly 0x1EDC6F41 reflected) and CRC-64/NVME (poly 0xAD93D23594C93659
// reflected), the last two with init and final xor all ones; continued from
// `crc` (0 to start any).
std::uint16_t crc16_t10dif(std::uint16_t crc, const void* data, std::size_t length) noexcept;
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t length) noexcept;
std::uint64_t crc64_nvme(std::uint64_t crc, const void* data, std::size_t length) noexcept;

// The guard of one block: over its data, and over the metadata before the PI
// when the PI is at the end.
std::uint64_t pi_guard(const BlockFormat& format, const std::byte* block) noexcept;

// Writes PI into every block of `blocks` (extended blocks, back to back):
// guard, `tags.apptag`, `tags.storage_tag` and the reference tag (tags.reftag
// + i for type 1 and 2, tags.reftag for type 3). `blocks` must hold whole
// extended blocks.
void pi_generate(const BlockFormat& format, std::span<std::byte> blocks,
                 const PiTags& tags) noexcept;

// Checks the PI of every block as a controller does for PRCHK `checks`
// (kPrchk* bits, and kCheckStorageTag: the storage tag's masked bits); blocks
// whose apptag is the escape value (type 3: and whose storage and reference
// space is all ones) are not checked. A type 3 reference tag is never
// compared: it is opaque to the controller. Returns the first mismatch.
PiMismatch pi_verify(const BlockFormat& format, std::span<const std::byte> blocks,
                     std::uint8_t checks, const PiTags& tags) noexcept;

// Reads and writes the fields of the PI tuple of one block.
struct PiFields {
    std::uint64_t guard = 0;
    std::uint16_t apptag = 0;
    std::uint64_t reftag = 0;
    std::uint64_t storage_tag = 0;
};
PiFields pi_read(const BlockFormat& format, const std::byte* block) noexcept;
void pi_write(const BlockFormat& format, std::byte* block, const PiFields& fields) noexcept;

// A command's storage and reference space: one number of the format's
// space_bits() in CDW14 (bits 31:0), CDW3 (63:32) and CDW2 (79:64), the storage
// tag in its top STS bits, the initial reference tag below.
struct CommandTagWords {
    std::uint32_t cdw2 = 0;
    std::uint32_t cdw3 = 0;
    std::uint32_t cdw14 = 0;
};
CommandTagWords command_tag_words(const BlockFormat& format, std::uint64_t storage_tag,
                                  std::uint64_t reftag) noexcept;
// The storage tag and reference tag of a command's words.
void split_command_tag_words(const BlockFormat& format, const CommandTagWords& words,
                             std::uint64_t& storage_tag, std::uint64_t& reftag) noexcept;

}  // namespace nvmeof::wire
