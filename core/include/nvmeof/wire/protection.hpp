// End-to-end data protection: how a block with metadata is laid out on the wire,
// the protection information (PI) tuple in its metadata, the PRINFO bits and
// tags of a command, and generating and checking PI over a buffer of blocks.
//
// Over NVMe-oF a namespace's metadata travels interleaved with its data (an
// "extended LBA": each block's data followed by its metadata); a separate
// metadata buffer (MPTR) does not exist on fabrics. PI is 8 bytes (16-bit
// CRC-16/T10-DIF guard) or 16 bytes (64-bit CRC-64/NVME guard, 48-bit reference
// tag: the NVM command set's extended formats) at the start or the end of the
// metadata. Fields of the tuple are big-endian.
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
// CDW15: the application tag (bits 15:0) and its mask (bits 31:16).
inline constexpr unsigned kApptagMaskShift = 16;
// A 48-bit reference tag: bits 31:0 in CDW14, bits 47:32 in CDW3 (bits 15:0).
inline constexpr unsigned kReftagHighShift = 32;

enum class PiType : std::uint8_t { none = 0, type1 = 1, type2 = 2, type3 = 3 };
// The protection information format (PIF); the 32-bit guard needs a storage
// tag and is not served.
enum class PiGuard : std::uint8_t { crc16 = 0, crc32 = 1, crc64 = 2 };

inline constexpr std::uint32_t kPi16Bytes = 8;
inline constexpr std::uint32_t kPi64Bytes = 16;
inline constexpr std::uint16_t kApptagEscape = 0xFFFF;  // an apptag that turns checking off

struct Pi16 {
    std::uint8_t guard[2];
    std::uint8_t apptag[2];
    std::uint8_t reftag[4];
};
static_assert(sizeof(Pi16) == kPi16Bytes);

struct Pi64 {
    std::uint8_t guard[8];
    std::uint8_t apptag[2];
    std::uint8_t reftag[6];  // storage tag size 0: all 48 bits are the reference tag
};
static_assert(sizeof(Pi64) == kPi64Bytes);
static_assert(offsetof(Pi64, apptag) == 8);
static_assert(offsetof(Pi64, reftag) == 10);

// A namespace's block layout.
struct BlockFormat {
    std::uint32_t data_bytes = 512;   // logical block data
    std::uint32_t metadata_bytes = 0; // interleaved after each block's data
    PiType pi_type = PiType::none;
    PiGuard guard = PiGuard::crc16;
    bool pi_first = false;  // PI at the start of the metadata, else at its end

    constexpr std::uint32_t pi_bytes() const {
        if (pi_type == PiType::none) {
            return 0;
        }
        return guard == PiGuard::crc64 ? kPi64Bytes : kPi16Bytes;
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
    // Reference tags wrap at 32 bits (16-bit guard) or 48 bits (64-bit guard).
    constexpr std::uint64_t reftag_mask() const {
        return guard == PiGuard::crc64 ? (std::uint64_t{1} << 48) - 1 : 0xFFFFFFFFull;
    }
};

// The tags a command carries: the initial reference tag (of its first block;
// type 1 and 2 count it up block by block), the application tag and the mask
// of the apptag bits that are checked.
struct PiTags {
    std::uint64_t reftag = 0;
    std::uint16_t apptag = 0;
    std::uint16_t apptag_mask = 0xFFFF;
};

// The check that failed, and where.
enum class PiCheck : std::uint8_t { none, guard, apptag, reftag };
struct PiMismatch {
    PiCheck check = PiCheck::none;
    std::uint64_t block = 0;  // index in the buffer
    std::uint64_t expected = 0;
    std::uint64_t found = 0;
    explicit operator bool() const { return check != PiCheck::none; }
};
std::string_view pi_check_name(PiCheck check);

// CRC-16/T10-DIF (poly 0x8BB7, init 0, not reflected) and CRC-64/NVME (poly
// 0xAD93D23594C93659 reflected, init and final xor all ones), continued from
// `crc` (0 to start either).
std::uint16_t crc16_t10dif(std::uint16_t crc, const void* data, std::size_t length) noexcept;
std::uint64_t crc64_nvme(std::uint64_t crc, const void* data, std::size_t length) noexcept;

// The guard of one block: over its data, and over the metadata before the PI
// when the PI is at the end.
std::uint64_t pi_guard(const BlockFormat& format, const std::byte* block) noexcept;

// Writes PI into every block of `blocks` (extended blocks, back to back):
// guard, `tags.apptag`, and the reference tag (tags.reftag + i for type 1 and
// 2, tags.reftag for type 3). `blocks` must hold whole extended blocks.
void pi_generate(const BlockFormat& format, std::span<std::byte> blocks, const PiTags& tags) noexcept;

// Checks the PI of every block as a controller does for PRCHK `checks`
// (kPrchk* bits); blocks whose apptag is the escape value (type 3: and whose
// reference tag is all ones) are not checked. Returns the first mismatch.
PiMismatch pi_verify(const BlockFormat& format, std::span<const std::byte> blocks,
                     std::uint8_t checks, const PiTags& tags) noexcept;

// Reads and writes the fields of the PI tuple of one block.
struct PiFields {
    std::uint64_t guard = 0;
    std::uint16_t apptag = 0;
    std::uint64_t reftag = 0;
};
PiFields pi_read(const BlockFormat& format, const std::byte* block) noexcept;
void pi_write(const BlockFormat& format, std::byte* block, const PiFields& fields) noexcept;

}  // namespace nvmeof::wire
