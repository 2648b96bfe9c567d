// CRC-16/T10-DIF and CRC-64/NVME, the 16- and 64-bit guards: slicing-by-8
// tables for any CPU, and the choice between them and the carry-less multiply
// versions (crc_clmul.cpp) on the first call.
#include <array>
#include <atomic>
#include <cstring>

#include "crc.hpp"
#include "nvmeof/wire/protection.hpp"

namespace nvmeof::wire {
namespace {

constexpr std::uint16_t kCrc16Poly = 0x8BB7;
constexpr std::uint64_t kCrc64PolyReflected = 0x9A6C9329AC4BC9B5ull;  // 0xAD93D23594C93659 reversed
using crc::kSlices;
using Crc16Tables = crc::SlicedTables<std::uint16_t>;

// CRC-16/T10-DIF is not reflected: its tables shift the other way.
constexpr Crc16Tables make_crc16_tables() {
    Crc16Tables t{};
    for (unsigned n = 0; n < 256; ++n) {
        auto crc = static_cast<std::uint16_t>(n << 8);
        for (int bit = 0; bit < 8; ++bit) {
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ kCrc16Poly : crc << 1);
        }
        t[0][n] = crc;
    }
    for (unsigned k = 1; k < kSlices; ++k) {
        for (unsigned n = 0; n < 256; ++n) {
            const std::uint16_t prev = t[k - 1][n];
            t[k][n] = static_cast<std::uint16_t>((prev << 8) ^ t[0][prev >> 8]);
        }
    }
    return t;
}

constexpr Crc16Tables kCrc16 = make_crc16_tables();
constexpr auto kCrc64 = crc::reflected_tables(kCrc64PolyReflected);

}  // namespace

namespace crc {

std::uint16_t crc16_t10dif_table(std::uint16_t crc, const void* data, std::size_t length) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (; length >= kSlices; length -= kSlices, p += kSlices) {
        crc = static_cast<std::uint16_t>(kCrc16[7][p[0] ^ (crc >> 8)] ^
                                         kCrc16[6][p[1] ^ (crc & 0xFF)] ^ kCrc16[5][p[2]] ^
                                         kCrc16[4][p[3]] ^ kCrc16[3][p[4]] ^ kCrc16[2][p[5]] ^
                                         kCrc16[1][p[6]] ^ kCrc16[0][p[7]]);
    }
    for (; length > 0; --length, ++p) {
        crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16[0][(crc >> 8) ^ *p]);
    }
    return crc;
}

std::uint64_t crc64_nvme_table(std::uint64_t crc, const void* data, std::size_t length) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    crc = ~crc;
    for (; length >= kSlices; length -= kSlices, p += kSlices) {
        std::uint64_t word;
        std::memcpy(&word, p, sizeof word);  // little-endian hosts only (x86-64, aarch64)
        crc ^= word;
        crc = kCrc64[7][crc & 0xFF] ^ kCrc64[6][(crc >> 8) & 0xFF] ^ kCrc64[5][(crc >> 16) & 0xFF] ^
              kCrc64[4][(crc >> 24) & 0xFF] ^ kCrc64[3][(crc >> 32) & 0xFF] ^
              kCrc64[2][(crc >> 40) & 0xFF] ^ kCrc64[1][(crc >> 48) & 0xFF] ^ kCrc64[0][crc >> 56];
    }
    for (; length > 0; --length, ++p) {
        crc = (crc >> 8) ^ kCrc64[0][(crc ^ *p) & 0xFF];
    }
    return ~crc;
}

}  // namespace crc

namespace {

// The implementation each CRC runs, chosen on its first call (cpuid once, not
// per call): a pointer that starts at a resolver, constant-initialized, so a
// call from another file's static initializer finds it set. Threads racing on
// the first call store the same pointer.
using Crc16Fn = std::uint16_t (*)(std::uint16_t, const void*, std::size_t) noexcept;
using Crc64Fn = std::uint64_t (*)(std::uint64_t, const void*, std::size_t) noexcept;

std::uint16_t crc16_resolve(std::uint16_t crc, const void* data, std::size_t length) noexcept;
std::uint64_t crc64_resolve(std::uint64_t crc, const void* data, std::size_t length) noexcept;
constinit std::atomic<Crc16Fn> crc16_impl{crc16_resolve};
constinit std::atomic<Crc64Fn> crc64_impl{crc64_resolve};

std::uint16_t crc16_resolve(std::uint16_t crc, const void* data, std::size_t length) noexcept {
    const Crc16Fn fn = crc::clmul_supported() ? crc::crc16_t10dif_clmul : crc::crc16_t10dif_table;
    crc16_impl.store(fn, std::memory_order_relaxed);
    return fn(crc, data, length);
}

std::uint64_t crc64_resolve(std::uint64_t crc, const void* data, std::size_t length) noexcept {
    const Crc64Fn fn = crc::clmul_supported() ? crc::crc64_nvme_clmul : crc::crc64_nvme_table;
    crc64_impl.store(fn, std::memory_order_relaxed);
    return fn(crc, data, length);
}

}  // namespace

std::uint16_t crc16_t10dif(std::uint16_t crc, const void* data, std::size_t length) noexcept {
    return crc16_impl.load(std::memory_order_relaxed)(crc, data, length);
}

std::uint64_t crc64_nvme(std::uint64_t crc, const void* data, std::size_t length) noexcept {
    return crc64_impl.load(std::memory_order_relaxed)(crc, data, length);
}

}  // namespace nvmeof::wire
