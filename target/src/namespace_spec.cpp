// --namespace specs: ram:SIZE[:LBA], file:PATH[:LBA], where LBA is 512, 4096
// or DATA+MD followed by the protection options, and a RAM namespace's zones,
// ram:SIZE[:LBA]:zoned=... (docs/target-cli.md).
#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"

namespace nvmeof::target {
namespace {

std::uint32_t parse_lba_size(std::string_view text, std::string_view what) {
    const std::uint64_t lba = parse_number(text, what, std::numeric_limits<std::uint32_t>::max());
    if (lba != 512 && lba != 4096) {
        throw UsageError(std::string(what) + ": LBA size must be 512 or 4096, got " +
                         std::string(text));
    }
    return static_cast<std::uint32_t>(lba);
}

bool is_lba_text(std::string_view text) {
    return text == "512" || text == "4096";
}

bool is_digits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "DATA+MD", an LBA with metadata: digits either side of a '+'.
bool is_extended_lba_text(std::string_view text) {
    const auto plus = text.find('+');
    return plus != std::string_view::npos && is_digits(text.substr(0, plus)) &&
           is_digits(text.substr(plus + 1));
}

std::vector<std::string_view> split_all(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    for (;;) {
        const auto at = text.find(separator);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) {
            return parts;
        }
        text = text.substr(at + 1);
    }
}

// Metadata sizes a namespace may have: room for the 8- or 16-byte PI and the
// sizes drives are formatted with.
constexpr std::uint32_t kMetadataSizes[] = {8, 16, 32, 64};

struct PiTypeName {
    std::string_view name;
    wire::PiType type;
};
constexpr PiTypeName kPiTypeNames[] = {
    {"pi1", wire::PiType::type1}, {"pi2", wire::PiType::type2}, {"pi3", wire::PiType::type3}};
constexpr std::string_view kPiFirstOption = "first";
constexpr std::string_view kGuard32Option = "guard32";
constexpr std::string_view kGuard64Option = "guard64";
constexpr std::string_view kStorageTagOption = "sts=";

bool is_protection_option(std::string_view text) {
    return text == kPiFirstOption || text == kGuard32Option || text == kGuard64Option ||
           text.starts_with(kStorageTagOption) ||
           std::any_of(std::begin(kPiTypeNames), std::end(kPiTypeNames),
                       [&](const PiTypeName& pi) { return pi.name == text; });
}

// LBA of a namespace spec: "512", "4096", or "DATA+MD" with metadata.
void parse_block_format(std::string_view text, const std::string& what, NamespaceConfig& ns) {
    const auto plus = text.find('+');
    ns.lba_size = parse_lba_size(text.substr(0, plus), what);
    if (plus == std::string_view::npos) {
        return;
    }
    const std::string_view metadata = text.substr(plus + 1);
    const std::uint64_t size =
        parse_number(metadata, what, std::numeric_limits<std::uint32_t>::max());
    if (std::find(std::begin(kMetadataSizes), std::end(kMetadataSizes), size) ==
        std::end(kMetadataSizes)) {
        throw UsageError(what + ": metadata size must be 8, 16, 32 or 64, got " +
                         std::string(metadata));
    }
    ns.metadata_size = static_cast<std::uint32_t>(size);
}

// The words after the LBA: a PI type, where the PI sits, its guard, its
// storage tag size.
void parse_protection_options(std::span<const std::string_view> options, const std::string& what,
                              NamespaceConfig& ns) {
    if (options.empty()) {
        return;
    }
    if (ns.metadata_size == 0) {
        throw UsageError(what + ": " + quoted(options[0]) +
                         " needs metadata: give the LBA as DATA+MD (e.g. 512+8)");
    }
    bool first = false;
    bool guard32 = false;
    bool guard64 = false;
    std::optional<std::uint64_t> storage_tag_bits;
    for (const std::string_view option : options) {
        const auto* pi = std::find_if(std::begin(kPiTypeNames), std::end(kPiTypeNames),
                                      [&](const PiTypeName& p) { return p.name == option; });
        bool* flag = option == kPiFirstOption   ? &first
                     : option == kGuard32Option ? &guard32
                     : option == kGuard64Option ? &guard64
                                                : nullptr;
        if (pi != std::end(kPiTypeNames)) {
            if (ns.pi_type != wire::PiType::none) {
                throw UsageError(what + ": more than one PI type (pi1, pi2, pi3)");
            }
            ns.pi_type = pi->type;
        } else if (option.starts_with(kStorageTagOption)) {
            if (storage_tag_bits) {
                throw UsageError(what + ": \"sts\" is given twice");
            }
            storage_tag_bits = parse_number(option.substr(kStorageTagOption.size()), what,
                                            wire::kMaxStorageTag32Bits);
        } else if (flag != nullptr) {
            if (*flag) {
                throw UsageError(what + ": " + quoted(option) + " is given twice");
            }
            *flag = true;
        } else {
            throw UsageError(what + ": unknown option " + quoted(option) +
                             " (expected pi1, pi2, pi3, first, guard32, guard64 or sts=BITS)");
        }
    }
    if ((first || guard32 || guard64 || storage_tag_bits) && ns.pi_type == wire::PiType::none) {
        const std::string_view option = first     ? kPiFirstOption
                                        : guard32 ? kGuard32Option
                                        : guard64 ? kGuard64Option
                                                  : std::string_view("sts");
        throw UsageError(what + ": " + std::string(option) + " needs a PI type (pi1, pi2 or pi3)");
    }
    if (guard32 && guard64) {
        throw UsageError(what + ": guard32 and guard64 exclude each other");
    }
    ns.pi_first = first;
    ns.pi_guard = guard32   ? wire::PiGuard::crc32
                  : guard64 ? wire::PiGuard::crc64
                            : wire::PiGuard::crc16;
    const unsigned sts = static_cast<unsigned>(storage_tag_bits.value_or(
        ns.pi_guard == wire::PiGuard::crc32 ? wire::kMinStorageTag32Bits : 0));
    if (!wire::storage_tag_bits_valid(ns.pi_guard, sts)) {
        throw UsageError(
            what + ": sts=" + std::to_string(sts) + " is outside what the guard allows " +
            "(0-32 bits with the 16-bit guard, 16-64 with guard32, 0-48 with guard64)");
    }
    ns.storage_tag_bits = static_cast<std::uint8_t>(sts);
    if (ns.block_format().pi_bytes() > ns.metadata_size) {
        throw UsageError(what + ": " + (guard32 ? "guard32" : "guard64") +
                         " needs 16 bytes of PI, more than the " +
                         std::to_string(ns.metadata_size) + " bytes of metadata");
    }
}

constexpr std::string_view kZonedOption = "zoned=";
constexpr std::uint64_t kMaxZoneCount = std::numeric_limits<std::uint32_t>::max();

// The zone options of ZONE_SIZE[,cap=BYTES][,max_open=N][,max_active=N][,conv=N],
// checked against the namespace's size and LBA.
ZonedConfig parse_zoned(std::string_view text, const std::string& what, const NamespaceConfig& ns) {
    if (ns.metadata_size != 0) {
        throw UsageError(what + ": a zoned namespace takes no metadata (LBA 512 or 4096)");
    }
    const std::vector<std::string_view> fields = split_all(text, ',');
    ZonedConfig zoned;
    zoned.zone_bytes = parse_size(fields[0], what + ": zone size");
    std::optional<std::uint64_t> capacity;
    std::optional<std::uint64_t> conventional;
    for (const std::string_view field : std::span(fields).subspan(1)) {
        const auto eq = field.find('=');
        const std::string_view key = field.substr(0, eq);
        const std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : field.substr(eq + 1);
        const bool known =
            key == "cap" || key == "max_open" || key == "max_active" || key == "conv";
        if (!known || value.empty()) {
            throw UsageError(what + ": unknown zone option " + quoted(field) +
                             " (expected cap=BYTES, max_open=N, max_active=N or conv=N)");
        }
        const bool twice = (key == "cap" && capacity) || (key == "max_open" && zoned.max_open) ||
                           (key == "max_active" && zoned.max_active) ||
                           (key == "conv" && conventional);
        if (twice) {
            throw UsageError(what + ": \"" + std::string(key) + "\" is given twice");
        }
        const std::string about = what + ": " + std::string(key);
        if (key == "cap") {
            capacity = parse_size(value, about);
        } else if (key == "conv") {
            conventional = parse_number(value, about, kMaxZoneCount);
        } else {
            const auto limit =
                static_cast<std::uint32_t>(parse_number(value, about, kMaxZoneCount));
            if (limit == 0) {
                throw UsageError(about + " must be at least 1");
            }
            (key == "max_open" ? zoned.max_open : zoned.max_active) = limit;
        }
    }
    if (zoned.zone_bytes % ns.lba_size != 0) {
        throw UsageError(what + ": the zone size " + std::to_string(zoned.zone_bytes) +
                         " is not a multiple of the LBA size " + std::to_string(ns.lba_size));
    }
    if (ns.size_bytes % zoned.zone_bytes != 0) {
        throw UsageError(what + ": SIZE " + std::to_string(ns.size_bytes) +
                         " is not a whole number of zones of " + std::to_string(zoned.zone_bytes) +
                         " bytes");
    }
    const std::uint64_t zones = ns.size_bytes / zoned.zone_bytes;
    if (zones > kMaxZoneCount) {
        throw UsageError(what + ": " + std::to_string(zones) + " zones, more than " +
                         std::to_string(kMaxZoneCount));
    }
    zoned.capacity_bytes = capacity.value_or(zoned.zone_bytes);
    if (zoned.capacity_bytes > zoned.zone_bytes || zoned.capacity_bytes % ns.lba_size != 0) {
        throw UsageError(what + ": cap=" + std::to_string(zoned.capacity_bytes) +
                         " must be a multiple of the LBA size " + std::to_string(ns.lba_size) +
                         " no larger than the zone size " + std::to_string(zoned.zone_bytes));
    }
    zoned.conventional = static_cast<std::uint32_t>(conventional.value_or(0));
    if (zoned.conventional >= zones) {
        throw UsageError(what + ": conv=" + std::to_string(zoned.conventional) +
                         " leaves no sequential zone (" + std::to_string(zones) + " zones in all)");
    }
    if (zoned.max_open && zoned.max_active && *zoned.max_open > *zoned.max_active) {
        throw UsageError(what + ": max_open=" + std::to_string(*zoned.max_open) +
                         " is above max_active=" + std::to_string(*zoned.max_active) +
                         " (an open zone is an active one)");
    }
    return zoned;
}

}  // namespace

NamespaceConfig parse_namespace(std::string_view spec) {
    const std::string what = "--namespace " + std::string(spec);
    NamespaceConfig ns;
    if (spec.starts_with("ram:")) {
        ns.backing = NamespaceConfig::Backing::ram;
        std::vector<std::string_view> parts = split_all(spec.substr(4), ':');
        std::optional<std::string_view> zoned;
        if (parts.size() > 1 && parts.back().starts_with(kZonedOption)) {
            zoned = parts.back().substr(kZonedOption.size());
            parts.pop_back();
        }
        for (const std::string_view part : parts) {
            if (part.starts_with(kZonedOption)) {
                throw UsageError(what + ": zoned= comes last (ram:SIZE[:LBA]:zoned=ZONE_SIZE...)");
            }
        }
        ns.size_bytes = parse_size(parts[0], what);
        if (parts.size() > 1) {
            parse_block_format(parts[1], what, ns);
            parse_protection_options(std::span(parts).subspan(2), what, ns);
        }
        if (ns.size_bytes < ns.lba_size || ns.size_bytes % ns.lba_size != 0) {
            throw UsageError(what + ": size must be a non-zero multiple of the LBA size " +
                             std::to_string(ns.lba_size));
        }
        if (zoned) {
            ns.zoned = parse_zoned(*zoned, what, ns);
        }
    } else if (spec.starts_with("file:")) {
        ns.backing = NamespaceConfig::Backing::file;
        // The path may hold colons: the LBA is the last part that is one
        // ("512", "4096") or, when protection options follow it, the last
        // "DATA+MD" part.
        const std::vector<std::string_view> parts = split_all(spec.substr(5), ':');
        if (parts.back().starts_with(kZonedOption)) {
            throw UsageError(what + ": zoned namespaces are RAM only (ram:SIZE[:LBA]:zoned=...)");
        }
        std::size_t lba_at = 0;  // 0: the whole text is the path
        for (std::size_t i = parts.size(); i-- > 1;) {
            if (is_extended_lba_text(parts[i])) {
                lba_at = i;
                break;
            }
        }
        if (lba_at == 0 && parts.size() > 1) {
            if (is_lba_text(parts.back())) {
                lba_at = parts.size() - 1;
            } else if (is_protection_option(parts.back())) {
                throw UsageError(what + ": " + quoted(parts.back()) +
                                 " needs metadata: give the LBA as DATA+MD (e.g. 512+8)");
            }
        }
        std::string_view path = spec.substr(5);
        if (lba_at != 0) {
            parse_block_format(parts[lba_at], what, ns);
            parse_protection_options(std::span(parts).subspan(lba_at + 1), what, ns);
            path = std::string_view(
                parts[0].data(),
                static_cast<std::size_t>(parts[lba_at - 1].data() + parts[lba_at - 1].size() -
                                         parts[0].data()));
        }
        if (path.empty()) {
            throw UsageError(what + ": the file path is empty");
        }
        ns.path = std::string(path);
    } else {
        throw UsageError(what + ": expected ram:SIZE[:LBA] or file:PATH[:LBA]");
    }
    return ns;
}

}  // namespace nvmeof::target
