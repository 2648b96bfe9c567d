// The implementations behind crc16_t10dif, crc32c and crc64_nvme (nvmeof/wire/
// protection.hpp), for the wire layer itself, its tests and its benchmark:
// not part of the public headers.
//
// Both public functions pick one implementation on their first call: carry-less
// multiply folding (crc_clmul.cpp) where the CPU has it, else the sliced tables
// (crc.cpp). Every function here continues from `crc` as the public ones
// do (0 to start).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace nvmeof::wire::crc {

// Slicing by 8: table k advances a byte k further through the register, so
// eight bytes cost eight lookups and no per-bit work.
inline constexpr unsigned kSlices = 8;
template <typename Word>
using SlicedTables = std::array<std::array<Word, 256>, kSlices>;

// The tables of a reflected CRC (CRC-32C, CRC-64/NVME) of polynomial
// `reflected_poly` (bit-reversed), built at compile time.
template <typename Word>
constexpr SlicedTables<Word> reflected_tables(Word reflected_poly) {
    SlicedTables<Word> t{};
    for (unsigned n = 0; n < 256; ++n) {
        Word crc = static_cast<Word>(n);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1) ? static_cast<Word>((crc >> 1) ^ reflected_poly)
                            : static_cast<Word>(crc >> 1);
        }
        t[0][n] = crc;
    }
    for (unsigned k = 1; k < kSlices; ++k) {
        for (unsigned n = 0; n < 256; ++n) {
            const Word prev = t[k - 1][n];
            t[k][n] = static_cast<Word>((prev >> 8) ^ t[0][prev & 0xFF]);
        }
    }
    return t;
}

// Slicing by 8: any CPU.
std::uint16_t crc16_t10dif_table(std::uint16_t crc, const void* data, std::size_t length) noexcept;
std::uint64_t crc64_nvme_table(std::uint64_t crc, const void* data, std::size_t length) noexcept;

// Whether this CPU runs the carry-less multiply versions: x86-64 with
// PCLMULQDQ and SSE4.1. False on other architectures, where the two functions
// below are the table versions.
bool clmul_supported() noexcept;

// Folding 128 bytes per step with PCLMULQDQ, the bytes left over (under 16)
// through the tables. Call only where clmul_supported().
std::uint16_t crc16_t10dif_clmul(std::uint16_t crc, const void* data, std::size_t length) noexcept;
std::uint64_t crc64_nvme_clmul(std::uint64_t crc, const void* data, std::size_t length) noexcept;

// CRC-32C (crc32c.cpp): the tables, and the SSE4.2 CRC32 instruction where
// sse42_supported() (the tables again elsewhere).
std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t length) noexcept;
bool sse42_supported() noexcept;
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t length) noexcept;

}  // namespace nvmeof::wire::crc
