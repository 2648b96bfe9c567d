// CommandCore: zoned namespaces, their zones at start (the layout, the zone-*
// faults) and their I/O commands. Zone Append, Zone Management Send and
// Receive run here; Read, Compare, Write and Write Zeroes pass the zone checks
// here (ZoneSet, zones.hpp) and then run as on any namespace (io.cpp). The
// checks run at execute, not plan: another command may move a write pointer
// while this one's data crosses the wire.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core_internal.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target {

using wire::GenericStatus;
using wire::IoOpcode;
using wire::Sqe;
using wire::Status;

namespace {

Status invalid_field() {
    return Status::generic(GenericStatus::invalid_field, true);
}

struct ZoneFaultEffect {
    const char* option;
    wire::ZoneState state;
    const char* outcome;
};

ZoneFaultEffect zone_fault_effect(ZoneFault::Kind kind) {
    switch (kind) {
        case ZoneFault::Kind::offline:
            return {"zone-offline", wire::ZoneState::offline, "offline"};
        case ZoneFault::Kind::read_only:
            return {"zone-read-only", wire::ZoneState::read_only, "read only"};
        case ZoneFault::Kind::full:
            break;
    }
    return {"zone-full", wire::ZoneState::full, "full"};
}

}  // namespace

ZoneLayout zone_layout(const NamespaceConfig& config) {
    const ZonedConfig& zoned = *config.zoned;
    ZoneLayout layout;
    layout.zone_blocks = zoned.zone_bytes / config.lba_size;
    layout.capacity_blocks = zoned.capacity_bytes / config.lba_size;
    layout.count = static_cast<std::uint32_t>(config.size_bytes / zoned.zone_bytes);
    layout.conventional = zoned.conventional;
    layout.max_active = zoned.max_active.value_or(0);
    // An open zone is an active one: without its own limit, MOR is MAR.
    layout.max_open = zoned.max_open.value_or(layout.max_active);
    return layout;
}

void CommandCore::apply_zone_faults(Namespace& ns) {
    for (const ZoneFault& fault : config_.faults.zone_faults) {
        const ZoneFaultEffect effect = zone_fault_effect(fault.kind);
        if (fault.lba >= ns.blocks) {
            continue;  // past this namespace's end: faults apply to every zoned namespace
        }
        const std::uint32_t index = ns.zones->index_of(fault.lba);
        if (!ns.zones->force_state(index, effect.state)) {
            std::fprintf(stderr,
                         "nvmeof-target: fault %s=%llu: zone %u of NSID %u is conventional, left "
                         "as it is\n",
                         effect.option, static_cast<unsigned long long>(fault.lba), index, ns.nsid);
            continue;
        }
        log_fault(std::string(effect.option) + ": zone " + std::to_string(index) + " of NSID " +
                  std::to_string(ns.nsid) + " (LBA " + std::to_string(ns.zones->zone(index).start) +
                  ") is " + effect.outcome);
    }
}

bool is_zone_command(IoOpcode opcode) {
    return opcode == IoOpcode::zone_append || opcode == IoOpcode::zone_management_send ||
           opcode == IoOpcode::zone_management_receive;
}

Status check_zone_command(const Namespace& ns, const Sqe& sqe, const Limits& limits) {
    switch (static_cast<IoOpcode>(sqe.opcode)) {
        case IoOpcode::zone_append: {
            const std::uint64_t slba = wire::command_slba(sqe);
            const std::uint64_t blocks = wire::command_block_count(sqe);
            if (blocks * ns.format.extended_bytes() > limits.zone_append_limit_bytes()) {
                return invalid_field();  // above ZASL (or MDTS)
            }
            if (slba >= ns.blocks || blocks > ns.blocks - slba) {
                return Status::generic(GenericStatus::lba_out_of_range, true);
            }
            return Status::success();
        }
        case IoOpcode::zone_management_receive: {
            const wire::ZoneReceiveRequest request = wire::parse_zone_management_receive(sqe);
            // No zone descriptor extensions (ZDES 0): no extended report.
            if (request.action != wire::ZoneReceiveAction::report ||
                request.filter > static_cast<std::uint8_t>(wire::ZoneReportFilter::offline) ||
                request.length < sizeof(wire::ZoneReportHeader) ||
                request.length > limits.max_transfer_bytes()) {
                return invalid_field();
            }
            if (request.slba >= ns.blocks) {
                return Status::generic(GenericStatus::lba_out_of_range, true);
            }
            return Status::success();
        }
        default:
            return Status::success();
    }
}

std::optional<Completion> CommandCore::execute_zoned(Subsystem& subsystem, Namespace& ns,
                                                     const Sqe& sqe, std::span<std::uint8_t> data) {
    ZoneSet& zones = *ns.zones;
    const std::uint64_t slba = wire::command_slba(sqe);
    const std::uint64_t blocks = wire::command_block_count(sqe);
    const std::uint32_t block_bytes = ns.format.extended_bytes();
    switch (static_cast<IoOpcode>(sqe.opcode)) {
        case IoOpcode::read:
        case IoOpcode::compare:
            if (const Status status = zones.read(slba, blocks); !status.ok()) {
                return Completion{status};
            }
            return std::nullopt;
        case IoOpcode::write:
        case IoOpcode::write_zeroes:
            if (const Status status = zones.write(slba, blocks); !status.ok()) {
                return Completion{status};
            }
            return std::nullopt;
        case IoOpcode::zone_append: {
            std::uint64_t written = 0;
            if (const Status status = zones.append(slba, blocks, written); !status.ok()) {
                return Completion{status};
            }
            Completion done = storage_status(ns.storage->write(written * block_bytes, data));
            if (done.status.ok()) {
                done.dw0 = static_cast<std::uint32_t>(written);
                done.dw1 = static_cast<std::uint32_t>(written >> 32);
                stats_.bytes_written += data.size();
                NamespaceStats& counters = stats_.of_namespace(subsystem.nqn, ns.nsid);
                ++counters.write_commands;
                counters.bytes_written += data.size();
            }
            return done;
        }
        case IoOpcode::zone_management_send: {
            std::vector<ZoneSet::BlockRange> zeroed;
            const Status status = zones.send(wire::parse_zone_management_send(sqe), zeroed);
            // A reset zone's blocks read as zeroes again.
            for (const ZoneSet::BlockRange& range : zeroed) {
                if (const int error = ns.storage->write_zeroes(range.slba * block_bytes,
                                                               range.blocks * block_bytes)) {
                    return storage_status(error);
                }
            }
            return Completion{status};
        }
        case IoOpcode::zone_management_receive: {
            const wire::ZoneReceiveRequest request = wire::parse_zone_management_receive(sqe);
            std::fill(data.begin(), data.end(), std::uint8_t{0});
            zones.report(request.slba, static_cast<wire::ZoneReportFilter>(request.filter),
                         request.partial, data);
            Completion done;
            done.data_length = static_cast<std::uint32_t>(data.size());
            return done;
        }
        default:
            return std::nullopt;  // Flush, Dataset Management: as on any namespace
    }
}

}  // namespace nvmeof::target
