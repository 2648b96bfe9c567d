// End-to-end data protection in the API's words: a namespace's block layout
// (NamespaceInfo::format), what a transfer asks of the controller (PRACT,
// PRCHK and tags: Transfer::protection), and host-side generation and checking
// of protection information for PRACT 0 (nvmeof::pi_generate / pi_verify).
// The layout and the arithmetic are the wire layer's (wire/protection.hpp).
//
// The base layer's: a Transfer carries a Protection to the transport, which
// builds PRINFO and the tags from it. Programs include nvmeof/protection.hpp.
#pragma once

#include <cstdint>

#include "nvmeof/wire/protection.hpp"

namespace nvmeof {

using wire::BlockFormat;
using wire::crc16_t10dif;
using wire::crc32c;
using wire::crc64_nvme;
using wire::pi_check_name;
using wire::pi_generate;
using wire::pi_verify;
using wire::PiCheck;
using wire::PiGuard;
using wire::PiMismatch;
using wire::PiTags;
using wire::PiType;

// PRINFO bits of Protection::prinfo.
inline constexpr std::uint8_t kPract = wire::kPract;
inline constexpr std::uint8_t kPrchkGuard = wire::kPrchkGuard;
inline constexpr std::uint8_t kPrchkApptag = wire::kPrchkApptag;
inline constexpr std::uint8_t kPrchkReftag = wire::kPrchkReftag;
inline constexpr std::uint8_t kPrchkAll = wire::kPrchkAll;
// The storage tag check (STC; formats with a storage tag), carried in prinfo.
inline constexpr std::uint8_t kCheckStorageTag = wire::kCheckStorageTag;

// The reference tag of a transfer's first block is its starting LBA (what
// type 1 requires, and the usual choice for type 2 and 3).
inline constexpr std::uint64_t kReftagFromLba = ~std::uint64_t{0};

// What a read, write or write zeroes asks of a namespace with protection
// information (ignored on one without: the controller ignores PRINFO there).
struct Protection {
    std::uint8_t prinfo = 0;  // kPract | kPrchk* | kCheckStorageTag bits
    std::uint16_t apptag = 0;
    std::uint16_t apptag_mask = 0xFFFF;
    std::uint64_t reftag = kReftagFromLba;  // of the first block; types 1 and 2 count it up
    std::uint64_t storage_tag = 0;          // formats with a storage tag (STS bits)
    bool pract() const noexcept { return (prinfo & kPract) != 0; }
};

// The initial reference tag of a transfer starting at `slba`, before it is
// masked to the format's width.
inline std::uint64_t initial_reftag(const Protection& p, std::uint64_t slba) noexcept {
    return p.reftag == kReftagFromLba ? slba : p.reftag;
}

// The tags of a transfer starting at `slba`, as its command carries them (and
// as the host generates or checks its PI with, given the namespace's
// `storage_tag_mask`).
inline PiTags pi_tags(const BlockFormat& format, const Protection& p, std::uint64_t slba,
                      std::uint64_t storage_tag_mask = ~std::uint64_t{0}) noexcept {
    return {initial_reftag(p, slba) & format.reftag_mask(), p.apptag, p.apptag_mask,
            p.storage_tag & format.storage_tag_max(), storage_tag_mask};
}

// The protection of the part of a transfer that starts `blocks` blocks in: an
// explicit reference tag counts up with the blocks (type 1 and 2; type 3
// keeps it).
inline Protection protection_after(const BlockFormat& format, const Protection& p,
                                   std::uint64_t blocks) noexcept {
    Protection rest = p;
    if (p.reftag != kReftagFromLba && format.pi_type != PiType::type3) {
        rest.reftag = (p.reftag + blocks) & format.reftag_mask();
    }
    return rest;
}

}  // namespace nvmeof
