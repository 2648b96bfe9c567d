// The zones of a zoned namespace (NVM Express Zoned Namespace Command Set 1.1):
// each zone's state and write pointer, the open and active resources, and the
// transitions the specification lays out for writes, Zone Append and Zone
// Management Send. No data moves here: CommandCore stores the blocks, and
// zeroes those of a zone that is reset.
//
// States (wire::ZoneState): empty, implicitly opened (by a write), explicitly
// opened (by Open Zone), closed, full, read only, offline. The opened ones
// hold an open resource, the opened and closed ones an active resource; at a
// limit, opening a zone first closes the implicitly opened zone written
// longest ago, and fails with Too Many Open Zones when there is none (every
// open zone explicitly opened) or Too Many Active Zones.
//
// Conventional zones (the first `conventional` ones) have no write pointer and
// no state: written anywhere, never opened, reported with ZBC's conventional
// zone type, which the ZNS specification lacks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nvmeof/wire/status.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target {

struct ZoneLayout {
    std::uint64_t zone_blocks = 0;      // ZSZE
    std::uint64_t capacity_blocks = 0;  // ZCAP of a sequential zone
    std::uint32_t count = 0;
    std::uint32_t conventional = 0;  // the first ones
    std::uint32_t max_open = 0;      // 0: no limit
    std::uint32_t max_active = 0;    // 0: no limit
};

// ZBC's zone type and condition of a conventional zone, as reported: the ZNS
// specification defines sequential write required zones only.
inline constexpr std::uint8_t kConventionalZoneType = 0x1;
inline constexpr std::uint64_t kNoWritePointer = ~std::uint64_t{0};

class ZoneSet {
  public:
    struct Zone {
        std::uint64_t start = 0;
        std::uint64_t write_pointer = 0;
        std::uint64_t written_end = 0;  // blocks from here on were never written since a reset
        wire::ZoneState state = wire::ZoneState::empty;
        bool conventional = false;
        std::uint64_t last_write = 0;  // a count: which implicitly opened zone closes first
    };
    // Blocks whose data must read as zeroes again: the written part of a reset zone.
    struct BlockRange {
        std::uint64_t slba = 0;
        std::uint64_t blocks = 0;
    };

    explicit ZoneSet(const ZoneLayout& layout);

    const ZoneLayout& layout() const { return layout_; }
    std::uint64_t blocks() const { return layout_.zone_blocks * layout_.count; }
    std::uint32_t index_of(std::uint64_t lba) const {
        return static_cast<std::uint32_t>(lba / layout_.zone_blocks);
    }
    const Zone& zone(std::uint32_t index) const { return zones_.at(index); }
    std::uint32_t open_zones() const { return open_; }
    std::uint32_t active_zones() const { return active_; }
    // MOR and MAR as Identify reports them: 0's based, all ones for no limit.
    std::uint32_t reported_max_open() const;
    std::uint32_t reported_max_active() const;

    // Each below takes an LBA range inside the namespace and changes nothing
    // when it fails.
    // Write or Write Zeroes: at the write pointer of a sequential zone (Zone
    // Invalid Write), inside its capacity (Zone Boundary Error), not full,
    // read only or offline; or inside conventional zones alone. The write
    // pointer then moves past the blocks (implicitly opening, or filling).
    wire::Status write(std::uint64_t slba, std::uint64_t blocks);
    // Zone Append to the sequential zone starting at `zslba` (else Invalid
    // Field in Command): the blocks go at its write pointer, `written` says
    // where.
    wire::Status append(std::uint64_t zslba, std::uint64_t blocks, std::uint64_t& written);
    // Read or Compare: Zone Is Offline where the range touches an offline zone
    // (reads may cross zone boundaries; unwritten blocks read as zeroes).
    wire::Status read(std::uint64_t slba, std::uint64_t blocks) const;
    // Zone Management Send. `zeroed` receives what reset zones had written.
    wire::Status send(const wire::ZoneSendRequest& request, std::vector<BlockRange>& zeroed);
    // Zone Management Receive's report: the header and the descriptors of the
    // zones from the one holding `slba` on that `filter` lists, as many as
    // `out` holds; nr_zones counts every match, or with `partial` those
    // returned. `out` holds at least the header.
    void report(std::uint64_t slba, wire::ZoneReportFilter filter, bool partial,
                std::span<std::uint8_t> out) const;

    // Faults: the zone holding `lba` becomes offline, read only or full (its
    // resources released). False for a conventional zone.
    bool force_state(std::uint32_t index, wire::ZoneState state);

  private:
    void set_state(Zone& zone, wire::ZoneState state);
    // Open and active resources for `zone` (empty or closed) to open; may close
    // the implicitly opened zone written longest ago.
    wire::Status make_room(const Zone& zone);
    wire::Status write_at(Zone& zone, std::uint64_t slba, std::uint64_t blocks);
    wire::Status act(Zone& zone, wire::ZoneSendAction action, std::vector<BlockRange>& zeroed);
    wire::Status open_all_closed();
    std::uint64_t end_of_capacity(const Zone& zone) const {
        return zone.start + layout_.capacity_blocks;
    }
    wire::ZoneDescriptor descriptor(const Zone& zone) const;

    ZoneLayout layout_;
    std::vector<Zone> zones_;
    std::uint32_t open_ = 0;
    std::uint32_t active_ = 0;
    std::uint64_t writes_ = 0;
};

}  // namespace nvmeof::target
