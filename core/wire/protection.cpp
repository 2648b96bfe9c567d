#include "nvmeof/wire/protection.hpp"

#include <array>
#include <atomic>
#include <cstring>

#include "crc.hpp"

namespace nvmeof::wire {
namespace {

constexpr std::uint16_t kCrc16Poly = 0x8BB7;
constexpr std::uint64_t kCrc64PolyReflected = 0x9A6C9329AC4BC9B5ull;  // 0xAD93D23594C93659 reversed
constexpr unsigned kSlices = 8;
using Crc16Tables = std::array<std::array<std::uint16_t, 256>, kSlices>;
using Crc64Tables = std::array<std::array<std::uint64_t, 256>, kSlices>;

// Slicing by 8: table k advances a byte k further through the register, so
// eight bytes cost eight lookups and no per-bit work.
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

constexpr Crc64Tables make_crc64_tables() {
    Crc64Tables t{};
    for (unsigned n = 0; n < 256; ++n) {
        std::uint64_t crc = n;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1) ? (crc >> 1) ^ kCrc64PolyReflected : crc >> 1;
        }
        t[0][n] = crc;
    }
    for (unsigned k = 1; k < kSlices; ++k) {
        for (unsigned n = 0; n < 256; ++n) {
            const std::uint64_t prev = t[k - 1][n];
            t[k][n] = (prev >> 8) ^ t[0][prev & 0xFF];
        }
    }
    return t;
}

constexpr Crc16Tables kCrc16 = make_crc16_tables();
constexpr Crc64Tables kCrc64 = make_crc64_tables();

// The 80-bit storage and reference space of the 32-bit guard formats needs
// more than 64 bits.
__extension__ using Space = unsigned __int128;

Space load_be(const std::uint8_t* p, unsigned bytes) {
    Space v = 0;
    for (unsigned i = 0; i < bytes; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

void store_be(std::uint8_t* p, unsigned bytes, Space v) {
    for (unsigned i = bytes; i-- > 0;) {
        p[i] = static_cast<std::uint8_t>(v);
        v >>= 8;
    }
}

Space join_space(const BlockFormat& format, std::uint64_t storage_tag, std::uint64_t reftag) {
    return (Space{storage_tag & format.storage_tag_max()} << format.reftag_bits()) |
           (reftag & format.reftag_mask());
}

void split_space(const BlockFormat& format, Space space, std::uint64_t& storage_tag,
                 std::uint64_t& reftag) {
    reftag = static_cast<std::uint64_t>(space) & format.reftag_mask();
    storage_tag = static_cast<std::uint64_t>(space >> format.reftag_bits()) & format.storage_tag_max();
}

// Where the fields of the format's tuple lie, and their sizes.
struct TupleLayout {
    unsigned guard_at, guard_bytes, apptag_at, space_at, space_bytes;
};
TupleLayout tuple_layout(const BlockFormat& format) {
    switch (format.guard) {
    case PiGuard::crc32:
        return {offsetof(Pi32, guard), sizeof(Pi32::guard), offsetof(Pi32, apptag),
                offsetof(Pi32, space), sizeof(Pi32::space)};
    case PiGuard::crc64:
        return {offsetof(Pi64, guard), sizeof(Pi64::guard), offsetof(Pi64, apptag),
                offsetof(Pi64, reftag), sizeof(Pi64::reftag)};
    case PiGuard::crc16:
        break;
    }
    return {offsetof(Pi16, guard), sizeof(Pi16::guard), offsetof(Pi16, apptag),
            offsetof(Pi16, reftag), sizeof(Pi16::reftag)};
}
constexpr unsigned kApptagBytes = sizeof(Pi16::apptag);

// Type 1 and 2 count the reference tag up from the command's; type 3's is opaque.
std::uint64_t expected_reftag(const BlockFormat& format, const PiTags& tags, std::uint64_t block) {
    const std::uint64_t offset = format.pi_type == PiType::type3 ? 0 : block;
    return (tags.reftag + offset) & format.reftag_mask();
}

bool escaped(const BlockFormat& format, const PiFields& pi) {
    if (pi.apptag != kApptagEscape) {
        return false;
    }
    return format.pi_type != PiType::type3 ||
           (pi.reftag == format.reftag_mask() && pi.storage_tag == format.storage_tag_max());
}

}  // namespace

namespace crc {

std::uint16_t crc16_t10dif_table(std::uint16_t crc, const void* data, std::size_t length) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (; length >= kSlices; length -= kSlices, p += kSlices) {
        crc = static_cast<std::uint16_t>(
            kCrc16[7][p[0] ^ (crc >> 8)] ^ kCrc16[6][p[1] ^ (crc & 0xFF)] ^ kCrc16[5][p[2]] ^
            kCrc16[4][p[3]] ^ kCrc16[3][p[4]] ^ kCrc16[2][p[5]] ^ kCrc16[1][p[6]] ^ kCrc16[0][p[7]]);
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

std::string_view pi_check_name(PiCheck check) {
    switch (check) {
    case PiCheck::guard:
        return "guard";
    case PiCheck::apptag:
        return "application tag";
    case PiCheck::reftag:
        return "reference tag";
    case PiCheck::storage_tag:
        return "storage tag";
    case PiCheck::none:
        break;
    }
    return "none";
}

std::uint64_t pi_guard(const BlockFormat& format, const std::byte* block) noexcept {
    // PI first: over the data only; PI last: over everything before it.
    const std::uint32_t covered = format.pi_first ? format.data_bytes : format.pi_offset();
    switch (format.guard) {
    case PiGuard::crc32:
        return crc32c(0, block, covered);
    case PiGuard::crc64:
        return crc64_nvme(0, block, covered);
    case PiGuard::crc16:
        break;
    }
    return crc16_t10dif(0, block, covered);
}

PiFields pi_read(const BlockFormat& format, const std::byte* block) noexcept {
    const auto* pi = reinterpret_cast<const std::uint8_t*>(block + format.pi_offset());
    const TupleLayout at = tuple_layout(format);
    PiFields f;
    f.guard = static_cast<std::uint64_t>(load_be(pi + at.guard_at, at.guard_bytes));
    f.apptag = static_cast<std::uint16_t>(load_be(pi + at.apptag_at, kApptagBytes));
    split_space(format, load_be(pi + at.space_at, at.space_bytes), f.storage_tag, f.reftag);
    return f;
}

void pi_write(const BlockFormat& format, std::byte* block, const PiFields& fields) noexcept {
    auto* pi = reinterpret_cast<std::uint8_t*>(block + format.pi_offset());
    const TupleLayout at = tuple_layout(format);
    store_be(pi + at.guard_at, at.guard_bytes, fields.guard);
    store_be(pi + at.apptag_at, kApptagBytes, fields.apptag);
    store_be(pi + at.space_at, at.space_bytes, join_space(format, fields.storage_tag, fields.reftag));
}

CommandTagWords command_tag_words(const BlockFormat& format, std::uint64_t storage_tag,
                                  std::uint64_t reftag) noexcept {
    const Space space = join_space(format, storage_tag, reftag);
    return {static_cast<std::uint32_t>(space >> 64), static_cast<std::uint32_t>(space >> 32),
            static_cast<std::uint32_t>(space)};
}

void split_command_tag_words(const BlockFormat& format, const CommandTagWords& words,
                             std::uint64_t& storage_tag, std::uint64_t& reftag) noexcept {
    // Bits beyond the format's space are reserved in the command: not read.
    const Space all = (Space{words.cdw2} << 64) | (Space{words.cdw3} << 32) | words.cdw14;
    const unsigned bits = format.space_bits();
    split_space(format, all & ((Space{1} << bits) - 1), storage_tag, reftag);
}

void pi_generate(const BlockFormat& format, std::span<std::byte> blocks, const PiTags& tags) noexcept {
    const std::uint32_t step = format.extended_bytes();
    const std::uint64_t count = blocks.size() / step;
    std::byte* block = blocks.data();
    for (std::uint64_t i = 0; i < count; ++i, block += step) {
        // The guard of a PI-last block covers the metadata before the PI, and
        // nothing of the PI itself, so it can be computed first.
        pi_write(format, block,
                 {pi_guard(format, block), tags.apptag, expected_reftag(format, tags, i), tags.storage_tag});
    }
}

PiMismatch pi_verify(const BlockFormat& format, std::span<const std::byte> blocks,
                     std::uint8_t checks, const PiTags& tags) noexcept {
    const std::uint32_t step = format.extended_bytes();
    const std::uint64_t count = blocks.size() / step;
    const std::byte* block = blocks.data();
    for (std::uint64_t i = 0; i < count; ++i, block += step) {
        const PiFields pi = pi_read(format, block);
        if (escaped(format, pi)) {
            continue;
        }
        if (checks & kPrchkGuard) {
            const std::uint64_t guard = pi_guard(format, block);
            if (guard != pi.guard) {
                return {PiCheck::guard, i, guard, pi.guard};
            }
        }
        if ((checks & kPrchkApptag) &&
            ((pi.apptag ^ tags.apptag) & tags.apptag_mask) != 0) {
            return {PiCheck::apptag, i, tags.apptag, pi.apptag};
        }
        if (checks & kPrchkReftag) {
            const std::uint64_t reftag = expected_reftag(format, tags, i);
            if (reftag != pi.reftag) {
                return {PiCheck::reftag, i, reftag, pi.reftag};
            }
        }
        if ((checks & kCheckStorageTag) &&
            ((pi.storage_tag ^ tags.storage_tag) & tags.storage_tag_mask & format.storage_tag_max()) != 0) {
            return {PiCheck::storage_tag, i, tags.storage_tag & format.storage_tag_max(), pi.storage_tag};
        }
    }
    return {};
}

}  // namespace nvmeof::wire
