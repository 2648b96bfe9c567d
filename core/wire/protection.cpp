#include "nvmeof/wire/protection.hpp"

#include <cstring>

namespace nvmeof::wire {
namespace {

std::uint64_t load_be(const std::uint8_t* p, unsigned bytes) {
    std::uint64_t v = 0;
    std::memcpy(reinterpret_cast<std::uint8_t*>(&v) + sizeof v - bytes, p, bytes);
    return __builtin_bswap64(v);  // little-endian hosts only (x86-64, aarch64)
}

void store_be(std::uint8_t* p, unsigned bytes, std::uint64_t v) {
    v = __builtin_bswap64(v);
    std::memcpy(p, reinterpret_cast<const std::uint8_t*>(&v) + sizeof v - bytes, bytes);
}

// A storage and reference space as two words: bits 63:0, and bits 79:64 (the
// 32-bit guard's only).
struct Space {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
};

// What reading and writing one format's tuples needs, worked out once for a
// buffer of blocks rather than per block.
struct TupleCodec {
    explicit TupleCodec(const BlockFormat& f)
        : format(f),
          pi_offset(f.pi_offset()),
          covered(f.pi_first ? f.data_bytes : f.pi_offset()),
          reftag_bits(f.reftag_bits()),
          reftag_mask(f.reftag_mask()),
          storage_max(f.storage_tag_max()) {}

    Space join(std::uint64_t storage_tag, std::uint64_t reftag) const {
        storage_tag &= storage_max;
        reftag &= reftag_mask;
        if (reftag_bits >= 64) {
            return {reftag, storage_tag};
        }
        return {reftag | (storage_tag << reftag_bits),
                reftag_bits == 0 ? 0 : storage_tag >> (64 - reftag_bits)};
    }
    void split(Space space, std::uint64_t& storage_tag, std::uint64_t& reftag) const {
        reftag = space.low & reftag_mask;
        if (reftag_bits >= 64) {
            storage_tag = space.high & storage_max;
        } else if (reftag_bits == 0) {
            storage_tag = space.low & storage_max;
        } else {
            storage_tag =
                ((space.low >> reftag_bits) | (space.high << (64 - reftag_bits))) & storage_max;
        }
    }

    PiFields read(const std::byte* block) const {
        const auto* p = reinterpret_cast<const std::uint8_t*>(block + pi_offset);
        PiFields f;
        Space space;
        switch (format.guard) {
            case PiGuard::crc32:
                f.guard = load_be(p + offsetof(Pi32, guard), sizeof(Pi32::guard));
                f.apptag =
                    static_cast<std::uint16_t>(load_be(p + offsetof(Pi32, apptag), kApptagBytes));
                space.high = load_be(p + offsetof(Pi32, space), kSpace32HighBytes);
                space.low =
                    load_be(p + offsetof(Pi32, space) + kSpace32HighBytes, sizeof(std::uint64_t));
                break;
            case PiGuard::crc64:
                f.guard = load_be(p + offsetof(Pi64, guard), sizeof(Pi64::guard));
                f.apptag =
                    static_cast<std::uint16_t>(load_be(p + offsetof(Pi64, apptag), kApptagBytes));
                space.low = load_be(p + offsetof(Pi64, reftag), sizeof(Pi64::reftag));
                break;
            case PiGuard::crc16:
                f.guard = load_be(p + offsetof(Pi16, guard), sizeof(Pi16::guard));
                f.apptag =
                    static_cast<std::uint16_t>(load_be(p + offsetof(Pi16, apptag), kApptagBytes));
                space.low = load_be(p + offsetof(Pi16, reftag), sizeof(Pi16::reftag));
                break;
        }
        split(space, f.storage_tag, f.reftag);
        return f;
    }
    void write(std::byte* block, const PiFields& f) const {
        auto* p = reinterpret_cast<std::uint8_t*>(block + pi_offset);
        const Space space = join(f.storage_tag, f.reftag);
        switch (format.guard) {
            case PiGuard::crc32:
                store_be(p + offsetof(Pi32, guard), sizeof(Pi32::guard), f.guard);
                store_be(p + offsetof(Pi32, apptag), kApptagBytes, f.apptag);
                store_be(p + offsetof(Pi32, space), kSpace32HighBytes, space.high);
                store_be(p + offsetof(Pi32, space) + kSpace32HighBytes, sizeof(std::uint64_t),
                         space.low);
                break;
            case PiGuard::crc64:
                store_be(p + offsetof(Pi64, guard), sizeof(Pi64::guard), f.guard);
                store_be(p + offsetof(Pi64, apptag), kApptagBytes, f.apptag);
                store_be(p + offsetof(Pi64, reftag), sizeof(Pi64::reftag), space.low);
                break;
            case PiGuard::crc16:
                store_be(p + offsetof(Pi16, guard), sizeof(Pi16::guard), f.guard);
                store_be(p + offsetof(Pi16, apptag), kApptagBytes, f.apptag);
                store_be(p + offsetof(Pi16, reftag), sizeof(Pi16::reftag), space.low);
                break;
        }
    }
    std::uint64_t guard(const std::byte* block) const {
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
    // Type 1 and 2 count the reference tag up from the command's; type 3's is opaque.
    std::uint64_t expected_reftag(const PiTags& tags, std::uint64_t block) const {
        const std::uint64_t offset = format.pi_type == PiType::type3 ? 0 : block;
        return (tags.reftag + offset) & reftag_mask;
    }
    bool escaped(const PiFields& pi) const {
        if (pi.apptag != kApptagEscape) {
            return false;
        }
        return format.pi_type != PiType::type3 ||
               (pi.reftag == reftag_mask && pi.storage_tag == storage_max);
    }

    static constexpr unsigned kApptagBytes = sizeof(Pi16::apptag);
    static constexpr unsigned kSpace32HighBytes = sizeof(Pi32::space) - sizeof(std::uint64_t);

    const BlockFormat& format;
    std::uint32_t pi_offset;
    std::uint32_t covered;  // the bytes the guard covers: the data, and metadata before a last PI
    unsigned reftag_bits;
    std::uint64_t reftag_mask;
    std::uint64_t storage_max;
};

}  // namespace

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
    return TupleCodec(format).guard(block);
}

PiFields pi_read(const BlockFormat& format, const std::byte* block) noexcept {
    return TupleCodec(format).read(block);
}

void pi_write(const BlockFormat& format, std::byte* block, const PiFields& fields) noexcept {
    TupleCodec(format).write(block, fields);
}

CommandTagWords command_tag_words(const BlockFormat& format, std::uint64_t storage_tag,
                                  std::uint64_t reftag) noexcept {
    const Space space = TupleCodec(format).join(storage_tag, reftag);
    return {static_cast<std::uint32_t>(space.high), static_cast<std::uint32_t>(space.low >> 32),
            static_cast<std::uint32_t>(space.low)};
}

void split_command_tag_words(const BlockFormat& format, const CommandTagWords& words,
                             std::uint64_t& storage_tag, std::uint64_t& reftag) noexcept {
    // Bits beyond the format's space are reserved in the command: not read.
    const unsigned bits = format.space_bits();
    Space space{(std::uint64_t{words.cdw3} << 32) | words.cdw14, words.cdw2};
    space.low &= low_bits(bits);
    space.high &= bits > 64 ? low_bits(bits - 64) : 0;
    TupleCodec(format).split(space, storage_tag, reftag);
}

void pi_generate(const BlockFormat& format, std::span<std::byte> blocks,
                 const PiTags& tags) noexcept {
    const TupleCodec codec(format);
    const std::uint32_t step = format.extended_bytes();
    const std::uint64_t count = blocks.size() / step;
    std::byte* block = blocks.data();
    for (std::uint64_t i = 0; i < count; ++i, block += step) {
        // The guard of a PI-last block covers the metadata before the PI, and
        // nothing of the PI itself, so it can be computed first.
        codec.write(block, {codec.guard(block), tags.apptag, codec.expected_reftag(tags, i),
                            tags.storage_tag});
    }
}

PiMismatch pi_verify(const BlockFormat& format, std::span<const std::byte> blocks,
                     std::uint8_t checks, const PiTags& tags) noexcept {
    const TupleCodec codec(format);
    const std::uint32_t step = format.extended_bytes();
    const std::uint64_t count = blocks.size() / step;
    const std::uint64_t storage_mask = tags.storage_tag_mask & codec.storage_max;
    const std::byte* block = blocks.data();
    for (std::uint64_t i = 0; i < count; ++i, block += step) {
        const PiFields pi = codec.read(block);
        if (codec.escaped(pi)) {
            continue;
        }
        if (checks & kPrchkGuard) {
            const std::uint64_t guard = codec.guard(block);
            if (guard != pi.guard) {
                return {PiCheck::guard, i, guard, pi.guard};
            }
        }
        if ((checks & kPrchkApptag) && ((pi.apptag ^ tags.apptag) & tags.apptag_mask) != 0) {
            return {PiCheck::apptag, i, tags.apptag, pi.apptag};
        }
        // Type 3's reference tag is the application's: nothing to compare it
        // with (SPDK's controller and Linux's block layer skip it as well).
        if ((checks & kPrchkReftag) && format.pi_type != PiType::type3) {
            const std::uint64_t reftag = codec.expected_reftag(tags, i);
            if (reftag != pi.reftag) {
                return {PiCheck::reftag, i, reftag, pi.reftag};
            }
        }
        if ((checks & kCheckStorageTag) &&
            ((pi.storage_tag ^ tags.storage_tag) & storage_mask) != 0) {
            return {PiCheck::storage_tag, i, tags.storage_tag & codec.storage_max, pi.storage_tag};
        }
    }
    return {};
}

}  // namespace nvmeof::wire
