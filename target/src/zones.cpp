#include "zones.hpp"

#include <algorithm>
#include <cstring>

namespace nvmeof::target {

using wire::GenericStatus;
using wire::Status;
using wire::ZonedStatus;
using wire::ZoneSendAction;
using wire::ZoneState;

namespace {

// Every zone error is final for that command: retrying meets the same zone.
Status zone_error(ZonedStatus status) {
    return Status::zoned(status, true);
}

bool is_open(ZoneState state) {
    return state == ZoneState::implicitly_opened || state == ZoneState::explicitly_opened;
}

bool is_active(ZoneState state) {
    return is_open(state) || state == ZoneState::closed;
}

// ZS of a conventional zone: ZBC's "not write pointer" condition.
constexpr auto kConventionalZoneState = static_cast<ZoneState>(0);

bool listed(const ZoneSet::Zone& zone, wire::ZoneReportFilter filter) {
    using wire::ZoneReportFilter;
    if (filter == ZoneReportFilter::all) {
        return true;
    }
    if (zone.conventional) {
        return false;
    }
    switch (filter) {
        case ZoneReportFilter::empty:
            return zone.state == ZoneState::empty;
        case ZoneReportFilter::implicitly_opened:
            return zone.state == ZoneState::implicitly_opened;
        case ZoneReportFilter::explicitly_opened:
            return zone.state == ZoneState::explicitly_opened;
        case ZoneReportFilter::closed:
            return zone.state == ZoneState::closed;
        case ZoneReportFilter::full:
            return zone.state == ZoneState::full;
        case ZoneReportFilter::read_only:
            return zone.state == ZoneState::read_only;
        case ZoneReportFilter::offline:
            return zone.state == ZoneState::offline;
        default:
            return false;
    }
}

}  // namespace

ZoneSet::ZoneSet(const ZoneLayout& layout) : layout_(layout), zones_(layout.count) {
    for (std::uint32_t i = 0; i < layout_.count; ++i) {
        Zone& zone = zones_[i];
        zone.start = std::uint64_t{i} * layout_.zone_blocks;
        zone.write_pointer = zone.written_end = zone.start;
        zone.conventional = i < layout_.conventional;
    }
}

std::uint32_t ZoneSet::reported_max_open() const {
    return layout_.max_open == 0 ? wire::kNoZoneResourceLimit : layout_.max_open - 1;
}

std::uint32_t ZoneSet::reported_max_active() const {
    return layout_.max_active == 0 ? wire::kNoZoneResourceLimit : layout_.max_active - 1;
}

void ZoneSet::set_state(Zone& zone, ZoneState state) {
    open_ -= is_open(zone.state) ? 1 : 0;
    active_ -= is_active(zone.state) ? 1 : 0;
    zone.state = state;
    open_ += is_open(state) ? 1 : 0;
    active_ += is_active(state) ? 1 : 0;
}

Status ZoneSet::make_room(const Zone& zone) {
    if (zone.state == ZoneState::empty && layout_.max_active != 0 &&
        active_ >= layout_.max_active) {
        return zone_error(ZonedStatus::too_many_active_zones);
    }
    if (layout_.max_open == 0 || open_ < layout_.max_open) {
        return Status::success();
    }
    Zone* oldest = nullptr;
    for (Zone& candidate : zones_) {
        if (candidate.state == ZoneState::implicitly_opened &&
            (oldest == nullptr || candidate.last_write < oldest->last_write)) {
            oldest = &candidate;
        }
    }
    if (oldest == nullptr) {
        return zone_error(ZonedStatus::too_many_open_zones);  // all explicitly opened
    }
    set_state(*oldest, ZoneState::closed);
    return Status::success();
}

Status ZoneSet::write_at(Zone& zone, std::uint64_t slba, std::uint64_t blocks) {
    switch (zone.state) {
        case ZoneState::full:
            return zone_error(ZonedStatus::zone_is_full);
        case ZoneState::read_only:
            return zone_error(ZonedStatus::zone_is_read_only);
        case ZoneState::offline:
            return zone_error(ZonedStatus::zone_is_offline);
        default:
            break;
    }
    if (slba != zone.write_pointer) {
        return zone_error(ZonedStatus::zone_invalid_write);
    }
    if (blocks > end_of_capacity(zone) - slba) {
        return zone_error(ZonedStatus::zone_boundary_error);
    }
    if (zone.state == ZoneState::empty || zone.state == ZoneState::closed) {
        if (const Status room = make_room(zone); !room.ok()) {
            return room;
        }
        set_state(zone, ZoneState::implicitly_opened);
    }
    zone.write_pointer += blocks;
    zone.written_end = std::max(zone.written_end, zone.write_pointer);
    zone.last_write = ++writes_;
    if (zone.write_pointer == end_of_capacity(zone)) {
        set_state(zone, ZoneState::full);
    }
    return Status::success();
}

Status ZoneSet::write(std::uint64_t slba, std::uint64_t blocks) {
    Zone& zone = zones_.at(index_of(slba));
    if (zone.conventional) {
        // Conventional zones take writes anywhere, across their boundaries
        // too, but not into a sequential zone.
        return index_of(slba + blocks - 1) < layout_.conventional
                   ? Status::success()
                   : zone_error(ZonedStatus::zone_boundary_error);
    }
    return write_at(zone, slba, blocks);
}

Status ZoneSet::append(std::uint64_t zslba, std::uint64_t blocks, std::uint64_t& written) {
    Zone& zone = zones_.at(index_of(zslba));
    if (zone.start != zslba || zone.conventional) {
        return Status::generic(GenericStatus::invalid_field, true);
    }
    const std::uint64_t at = zone.write_pointer;
    if (const Status status = write_at(zone, at, blocks); !status.ok()) {
        return status;
    }
    written = at;
    return Status::success();
}

Status ZoneSet::read(std::uint64_t slba, std::uint64_t blocks) const {
    for (std::uint32_t i = index_of(slba); i <= index_of(slba + blocks - 1); ++i) {
        if (zones_[i].state == ZoneState::offline) {
            return zone_error(ZonedStatus::zone_is_offline);
        }
    }
    return Status::success();
}

Status ZoneSet::act(Zone& zone, ZoneSendAction action, std::vector<BlockRange>& zeroed) {
    const ZoneState state = zone.state;
    const Status invalid = zone_error(ZonedStatus::invalid_zone_state_transition);
    switch (action) {
        case ZoneSendAction::open:
            if (state == ZoneState::empty || state == ZoneState::closed) {
                if (const Status room = make_room(zone); !room.ok()) {
                    return room;
                }
            } else if (state != ZoneState::implicitly_opened &&
                       state != ZoneState::explicitly_opened) {
                return invalid;
            }
            set_state(zone, ZoneState::explicitly_opened);
            return Status::success();
        case ZoneSendAction::close:
            if (!is_active(state)) {
                return invalid;
            }
            set_state(zone, ZoneState::closed);
            return Status::success();
        case ZoneSendAction::finish:
            if (state != ZoneState::empty && state != ZoneState::full && !is_active(state)) {
                return invalid;
            }
            zone.write_pointer = end_of_capacity(zone);
            set_state(zone, ZoneState::full);
            return Status::success();
        case ZoneSendAction::reset:
            if (state != ZoneState::empty && state != ZoneState::full && !is_active(state)) {
                return invalid;
            }
            if (zone.written_end > zone.start) {
                zeroed.push_back({zone.start, zone.written_end - zone.start});
            }
            zone.write_pointer = zone.written_end = zone.start;
            set_state(zone, ZoneState::empty);
            return Status::success();
        case ZoneSendAction::offline:
            if (state != ZoneState::read_only && state != ZoneState::offline) {
                return invalid;
            }
            set_state(zone, ZoneState::offline);
            return Status::success();
        default:
            // Set Zone Descriptor Extension too: ZDES is 0, zones have none.
            return Status::generic(GenericStatus::invalid_field, true);
    }
}

Status ZoneSet::open_all_closed() {
    std::vector<Zone*> closed;
    std::uint32_t explicitly_opened = 0;
    for (Zone& zone : zones_) {
        if (zone.state == ZoneState::closed) {
            closed.push_back(&zone);
        }
        explicitly_opened += zone.state == ZoneState::explicitly_opened ? 1 : 0;
    }
    // All or none: implicitly opened zones may be closed to make room, the
    // explicitly opened ones stay open.
    if (layout_.max_open != 0 && explicitly_opened + closed.size() > layout_.max_open) {
        return zone_error(ZonedStatus::too_many_open_zones);
    }
    for (Zone* zone : closed) {
        (void)make_room(*zone);  // cannot fail: fewer explicitly opened zones than the limit
        set_state(*zone, ZoneState::explicitly_opened);
    }
    return Status::success();
}

Status ZoneSet::send(const wire::ZoneSendRequest& request, std::vector<BlockRange>& zeroed) {
    if (!request.select_all) {
        if (request.slba >= blocks()) {
            return Status::generic(GenericStatus::lba_out_of_range, true);
        }
        Zone& zone = zones_[index_of(request.slba)];
        if (zone.start != request.slba || zone.conventional) {
            return Status::generic(GenericStatus::invalid_field, true);
        }
        return act(zone, request.action, zeroed);
    }
    // Select All: the action on every zone in a state it applies to.
    auto each = [&](auto applies) {
        for (Zone& zone : zones_) {
            if (!zone.conventional && applies(zone.state)) {
                (void)act(zone, request.action, zeroed);  // valid from those states
            }
        }
        return Status::success();
    };
    switch (request.action) {
        case ZoneSendAction::open:
            return open_all_closed();
        case ZoneSendAction::close:
            return each([](ZoneState s) { return is_open(s); });
        case ZoneSendAction::finish:
            return each([](ZoneState s) { return is_active(s); });
        case ZoneSendAction::reset:
            return each([](ZoneState s) { return is_active(s) || s == ZoneState::full; });
        case ZoneSendAction::offline:
            return each([](ZoneState s) { return s == ZoneState::read_only; });
        default:
            return Status::generic(GenericStatus::invalid_field, true);
    }
}

wire::ZoneDescriptor ZoneSet::descriptor(const Zone& zone) const {
    if (zone.conventional) {
        return wire::zone_descriptor(kConventionalZoneType, kConventionalZoneState, zone.start,
                                     layout_.zone_blocks, kNoWritePointer);
    }
    // The write pointer is not valid in a full, read only or offline zone.
    const bool valid = zone.state != ZoneState::full && zone.state != ZoneState::read_only &&
                       zone.state != ZoneState::offline;
    return wire::zone_descriptor(
        static_cast<std::uint8_t>(wire::ZoneType::sequential_write_required), zone.state,
        zone.start, layout_.capacity_blocks, valid ? zone.write_pointer : kNoWritePointer);
}

void ZoneSet::report(std::uint64_t slba, wire::ZoneReportFilter filter, bool partial,
                     std::span<std::uint8_t> out) const {
    const std::size_t room =
        (out.size() - sizeof(wire::ZoneReportHeader)) / sizeof(wire::ZoneDescriptor);
    std::uint64_t matching = 0;
    std::size_t returned = 0;
    for (std::uint32_t i = index_of(slba); i < layout_.count; ++i) {
        if (!listed(zones_[i], filter)) {
            continue;
        }
        ++matching;
        if (returned < room) {
            const wire::ZoneDescriptor d = descriptor(zones_[i]);
            std::memcpy(out.data() + sizeof(wire::ZoneReportHeader) + returned * sizeof d, &d,
                        sizeof d);
            ++returned;
        } else if (partial) {
            break;
        }
    }
    wire::ZoneReportHeader header{};
    header.nr_zones = partial ? returned : matching;
    std::memcpy(out.data(), &header, sizeof header);
}

bool ZoneSet::force_state(std::uint32_t index, ZoneState state) {
    Zone& zone = zones_.at(index);
    if (zone.conventional) {
        return false;
    }
    if (state == ZoneState::full) {
        zone.write_pointer = end_of_capacity(zone);
    }
    set_state(zone, state);
    return true;
}

}  // namespace nvmeof::target
