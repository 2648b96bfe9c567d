// CRC-32C (Castagnoli), the guard of the 32-bit guard PI formats: the SSE4.2
// CRC32 instruction, which computes exactly this CRC, where the CPU has it;
// slicing-by-8 tables elsewhere. Chosen on the first call, as crc16_t10dif and
// crc64_nvme are (crc.cpp).
#include <array>
#include <atomic>
#include <cstring>

#include "crc.hpp"
#include "nvmeof/wire/protection.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nvmeof::wire {
namespace crc {
namespace {

constexpr std::uint32_t kCrc32cPolyReflected = 0x82F63B78;  // 0x1EDC6F41 reversed
constexpr auto kCrc32c = reflected_tables(kCrc32cPolyReflected);

}  // namespace

std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t length) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    crc = ~crc;
    for (; length >= kSlices; length -= kSlices, p += kSlices) {
        std::uint32_t low;
        std::uint32_t high;
        std::memcpy(&low, p, sizeof low);  // little-endian hosts only (x86-64, aarch64)
        std::memcpy(&high, p + sizeof low, sizeof high);
        low ^= crc;
        crc = kCrc32c[7][low & 0xFF] ^ kCrc32c[6][(low >> 8) & 0xFF] ^
              kCrc32c[5][(low >> 16) & 0xFF] ^ kCrc32c[4][low >> 24] ^ kCrc32c[3][high & 0xFF] ^
              kCrc32c[2][(high >> 8) & 0xFF] ^ kCrc32c[1][(high >> 16) & 0xFF] ^
              kCrc32c[0][high >> 24];
    }
    for (; length > 0; --length, ++p) {
        crc = (crc >> 8) ^ kCrc32c[0][(crc ^ *p) & 0xFF];
    }
    return ~crc;
}

#if defined(__x86_64__)

bool sse42_supported() noexcept {
    __builtin_cpu_init();  // may run before the constructors (a static initializer's call)
    return __builtin_cpu_supports("sse4.2");
}

// Compiled for SSE4.2 whatever the build's -march; only called where
// sse42_supported() said so.
[[gnu::target("sse4.2")]] std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data,
                                                     std::size_t length) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    std::uint64_t r = ~crc;
    for (; length >= sizeof(std::uint64_t);
         length -= sizeof(std::uint64_t), p += sizeof(std::uint64_t)) {
        std::uint64_t word;
        std::memcpy(&word, p, sizeof word);
        r = _mm_crc32_u64(r, word);
    }
    auto r32 = static_cast<std::uint32_t>(r);
    for (; length > 0; --length, ++p) {
        r32 = _mm_crc32_u8(r32, *p);
    }
    return ~r32;
}

#else  // not x86-64: the tables

bool sse42_supported() noexcept {
    return false;
}

std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t length) noexcept {
    return crc32c_table(crc, data, length);
}

#endif

}  // namespace crc

namespace {

using Crc32Fn = std::uint32_t (*)(std::uint32_t, const void*, std::size_t) noexcept;
std::uint32_t crc32c_resolve(std::uint32_t crc, const void* data, std::size_t length) noexcept;
constinit std::atomic<Crc32Fn> crc32c_impl{crc32c_resolve};

std::uint32_t crc32c_resolve(std::uint32_t crc, const void* data, std::size_t length) noexcept {
    const Crc32Fn fn = crc::sse42_supported() ? crc::crc32c_sse42 : crc::crc32c_table;
    crc32c_impl.store(fn, std::memory_order_relaxed);
    return fn(crc, data, length);
}

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t length) noexcept {
    return crc32c_impl.load(std::memory_order_relaxed)(crc, data, length);
}

}  // namespace nvmeof::wire
