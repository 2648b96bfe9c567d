// Zoned namespaces (the NVMe Zoned Namespace command set, CSI 2): what
// Identify says of a zoned namespace, a zone as a report describes it, and the
// actions on zones. Namespace (nvmeof/namespace.hpp) reports zones, acts on
// them and appends; IoQueue submits Op::zone_append without waiting.
//
//   auto ns = ctrl.namespace_at(1);
//   if (ns.info().zoned) {
//       ns.zone_action(nvmeof::ZoneAction::reset, 0, nvmeof::ZoneSelect::all);
//       for (const nvmeof::Zone& z : ns.report_zones()) { ... }
//       const std::uint64_t lba = ns.zone_append(buffer, 0, 8);
//   }
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace nvmeof {

// A zoned namespace's geometry and limits (NamespaceInfo::zones).
struct ZonedInfo {
    std::uint64_t zone_blocks = 0;  // zone size (ZSZE): zone i starts at block i × zone_blocks
    std::uint64_t zone_count = 0;   // size_lbas / zone_blocks, rounded up
    // Open and active resources (MOR + 1 and MAR + 1); 0: no limit.
    std::uint32_t max_open_zones = 0;
    std::uint32_t max_active_zones = 0;
    // The largest Zone Append in bytes of data: ZASL (Identify CNS 06h), or the
    // MDTS where ZASL is 0, at most what one command carries. 0: the controller
    // does not support Zone Append (Commands Supported and Effects, CSI 2).
    std::uint64_t zone_append_max_bytes = 0;
    // Bytes of a zone descriptor extension (ZDES × 64); 0: none, and no
    // extended report.
    std::uint32_t descriptor_extension_bytes = 0;
    bool variable_zone_capacity = false;       // ZOC bit 0
    bool zone_active_excursions = false;       // ZOC bit 1
    bool read_across_zone_boundaries = false;  // OZCS bit 0
};

// ZT. The ZNS specification defines sequential write required zones only; a
// conventional zone (ZBC's type 1) is what some targets report for zones
// written anywhere.
enum class ZoneType : std::uint8_t { conventional = 0x1, sequential_write_required = 0x2 };

// ZS.
enum class ZoneState : std::uint8_t {
    empty = 0x1,
    implicitly_opened = 0x2,
    explicitly_opened = 0x3,
    closed = 0x4,
    read_only = 0xD,
    full = 0xE,
    offline = 0xF,
};
// "empty", "implicitly opened", ...; "unknown" for a value not listed.
std::string_view zone_state_name(ZoneState state) noexcept;

// Which zones a report lists (ZRASF).
enum class ZoneFilter : std::uint8_t {
    all = 0x0,
    empty = 0x1,
    implicitly_opened = 0x2,
    explicitly_opened = 0x3,
    closed = 0x4,
    full = 0x5,
    read_only = 0x6,
    offline = 0x7,
};

// Zone Management Send actions (ZSA).
enum class ZoneAction : std::uint8_t {
    close = 0x1,
    finish = 0x2,
    open = 0x3,
    reset = 0x4,
    offline = 0x5
};
// "close", "finish", ...
std::string_view zone_action_name(ZoneAction action) noexcept;
// The zone starting at the LBA given, or every zone in a state the action
// applies to (Select All; the LBA is ignored).
enum class ZoneSelect : std::uint8_t { one, all };

// A zone's write pointer where it has none (full, read only, offline; a
// conventional zone), as the controller reports it.
inline constexpr std::uint64_t kNoWritePointer = ~std::uint64_t{0};

// One zone of a report.
struct Zone {
    std::uint64_t start = 0;                        // ZSLBA
    std::uint64_t capacity = 0;                     // ZCAP: blocks writable from start
    std::uint64_t write_pointer = kNoWritePointer;  // WP
    ZoneState state = ZoneState::empty;
    ZoneType type = ZoneType::sequential_write_required;
    std::uint8_t attributes = 0;                                                       // ZA
    bool finished_by_controller() const noexcept { return (attributes & 0x01) != 0; }  // ZFC
    bool finish_recommended() const noexcept { return (attributes & 0x02) != 0; }      // FZR
    bool reset_recommended() const noexcept { return (attributes & 0x04) != 0; }       // RZR
};

// How a report is asked for.
struct ZoneReportOptions {
    ZoneFilter filter = ZoneFilter::all;
    // Partial Report: `matching` counts the zones returned; without it, every
    // zone from the start LBA on that the filter lists.
    bool partial = false;
    // Extended Report: descriptors followed by their extensions (refused where
    // the namespace has none); the extensions stay in the buffer.
    bool extended = false;
};

// One Zone Management Receive as the controller answered it.
struct ZoneReport {
    std::uint64_t matching = 0;  // the header's Number of Zones
    std::vector<Zone> zones;     // the descriptors the buffer held
};

}  // namespace nvmeof
