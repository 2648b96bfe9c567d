// CommandCore: NVM I/O commands (Read, Write, Compare, Flush, Write Zeroes,
// Dataset Management) and the I/O faults; io_protection.cpp runs those of
// namespaces with protection information, io_zoned.cpp those of zoned
// namespaces (Zone Append, Zone Management Send and Receive, the zone checks).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core_internal.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target {

using wire::DataDirection;
using wire::GenericStatus;
using wire::IoOpcode;
using wire::Sqe;
using wire::Status;

namespace {

bool range_ok(const Namespace& ns, std::uint64_t slba, std::uint64_t blocks) {
    return slba <= ns.blocks && blocks <= ns.blocks - slba;
}

}  // namespace

Completion storage_status(int error) {
    if (error == 0) {
        return Completion{};
    }
    std::fprintf(stderr, "nvmeof-target: storage error: %s\n", std::strerror(error));
    return Completion{Status::generic(GenericStatus::internal_error, true)};
}

DataPlan CommandCore::plan_io(QueueState& queue, Controller& ctrl, const Sqe& sqe,
                              std::size_t in_capsule_bytes) {
    const std::uint64_t io_index = ++io_commands_seen_;
    const auto opcode = static_cast<IoOpcode>(sqe.opcode);
    // The commands whose blocks cross the wire (Compare's as a Write's).
    const bool is_rw =
        opcode == IoOpcode::read || opcode == IoOpcode::write || opcode == IoOpcode::compare;
    // The Zoned Namespace command set's own commands: a zoned namespace's only.
    const bool zone_command = is_zone_command(opcode);
    if (!is_rw && opcode != IoOpcode::flush && opcode != IoOpcode::write_zeroes &&
        opcode != IoOpcode::dataset_management && !zone_command) {
        return failed_plan(GenericStatus::invalid_opcode);
    }
    DataPlan plan;
    Namespace* ns = ctrl.subsystem->find_namespace(sqe.nsid);
    if (zone_command && (ns == nullptr || ns->zones == nullptr)) {
        return failed_plan(GenericStatus::invalid_opcode);
    }
    if (ns == nullptr && !(opcode == IoOpcode::flush && sqe.nsid == wire::kBroadcastNsid)) {
        return failed_plan(GenericStatus::invalid_namespace_or_format);
    }
    // Path errors leave DNR clear: the host is to retry on another path.
    switch (ana_states_.at(queue.port_index)) {
        case wire::AnaState::optimized:
        case wire::AnaState::non_optimized:
            break;
        case wire::AnaState::inaccessible:
            plan.status = Status::path(wire::PathStatus::asymmetric_access_inaccessible, false);
            return plan;
        case wire::AnaState::persistent_loss:
            plan.status = Status::path(wire::PathStatus::asymmetric_access_persistent_loss, false);
            return plan;
        case wire::AnaState::change:
            plan.status = Status::path(wire::PathStatus::asymmetric_access_transition, false);
            return plan;
    }
    std::uint64_t slba = 0;
    std::uint64_t blocks = 0;
    std::uint64_t transfer_bytes = 0;
    switch (opcode) {
        case IoOpcode::read:
        case IoOpcode::write:
        case IoOpcode::compare:
            slba = wire::command_slba(sqe);
            blocks = wire::command_block_count(sqe);
            transfer_bytes = blocks * wire_block_bytes(*ns, sqe, blocks, plan.length_rule);
            plan.direction = wire::direction_of(sqe.opcode);
            plan.length = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(transfer_bytes, wire::kMaxKeyedSglLength + 1ull));
            break;
        case IoOpcode::write_zeroes:
            slba = wire::command_slba(sqe);
            blocks = wire::command_block_count(sqe);
            break;
        case IoOpcode::dataset_management:
            plan.direction = DataDirection::host_to_controller;
            plan.length =
                wire::dsm_range_count(sqe) * static_cast<std::uint32_t>(sizeof(wire::DsmRange));
            plan.minimum_length = true;  // nvmet accepts a longer SGL
            break;
        case IoOpcode::zone_append:
            transfer_bytes = std::uint64_t{wire::command_block_count(sqe)} * ns->format.data_bytes;
            plan.direction = DataDirection::host_to_controller;
            plan.length = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(transfer_bytes, wire::kMaxKeyedSglLength + 1ull));
            plan.length_rule = "NLB blocks";
            break;
        case IoOpcode::zone_management_receive:
            plan.direction = DataDirection::controller_to_host;
            plan.length = static_cast<std::uint32_t>(std::min<std::uint64_t>(
                wire::parse_zone_management_receive(sqe).length, wire::kMaxKeyedSglLength + 1ull));
            plan.length_rule = "NUMD + 1 dwords";
            break;
        default:
            break;
    }
    if (!check_data_pointer(queue, sqe, in_capsule_bytes, plan)) {
        return plan;
    }
    // MDTS counts the metadata interleaved with the data (NVMe Base, MDTS).
    if (is_rw && transfer_bytes > config_.limits.max_transfer_bytes()) {
        return failed_plan(GenericStatus::invalid_field);  // MDTS exceeded
    }
    if ((is_rw || opcode == IoOpcode::write_zeroes) && !range_ok(*ns, slba, blocks)) {
        return failed_plan(GenericStatus::lba_out_of_range);
    }
    if (is_rw || opcode == IoOpcode::write_zeroes) {
        plan.status = check_protection_fields(*ns, sqe);
        if (!plan.status.ok()) {
            return plan;
        }
    }
    if (zone_command) {
        plan.status = check_zone_command(*ns, sqe, config_.limits);
        if (!plan.status.ok()) {
            return plan;
        }
    }
    if ((opcode == IoOpcode::write || opcode == IoOpcode::zone_append) &&
        plan.source == DataSource::in_capsule) {
        ++stats_.in_capsule_writes;
    }

    const char* name = wire::command_name(sqe, wire::QueueKind::io).data();
    // SCT 1 codes mean something else per command set: named as the host names them.
    const wire::StatusContext context = wire::context_of(sqe, wire::QueueKind::io);
    for (const auto& fault : config_.faults.fail_io) {
        if (fault.nth == io_index) {
            plan.inject = true;
            plan.injected = fault.status;
            log_fault("fail-io: I/O command " + std::to_string(io_index) + " (" + name + ", QID " +
                      std::to_string(queue.qid) + ", CID " + std::to_string(sqe.command_id) +
                      ") fails with " + wire::describe(fault.status, context));
            return plan;
        }
    }
    if (is_rw) {
        for (const auto& fault : config_.faults.fail_lba) {
            if (slba <= fault.last && slba + blocks - 1 >= fault.first) {
                plan.inject = true;
                plan.injected = fault.status;
                log_fault("fail-lba: " + std::string(name) + " of LBA " + std::to_string(slba) +
                          "+" + std::to_string(blocks) + " (QID " + std::to_string(queue.qid) +
                          ", CID " + std::to_string(sqe.command_id) + ") fails with " +
                          wire::describe(fault.status, context));
                return plan;
            }
        }
    }
    return plan;
}

Completion CommandCore::execute_io(Controller& ctrl, const Sqe& sqe, std::span<std::uint8_t> data) {
    const auto opcode = static_cast<IoOpcode>(sqe.opcode);
    Subsystem& subsystem = *ctrl.subsystem;
    if (opcode == IoOpcode::flush && sqe.nsid == wire::kBroadcastNsid) {
        for (auto& ns : subsystem.namespaces) {
            if (const int error = ns.storage->flush()) {
                return storage_status(error);
            }
        }
        return Completion{};
    }
    Namespace* ns = subsystem.find_namespace(sqe.nsid);
    if (ns == nullptr) {
        return Completion{Status::generic(GenericStatus::invalid_namespace_or_format, true)};
    }
    if (ns->zones != nullptr) {
        if (std::optional<Completion> done = execute_zoned(subsystem, *ns, sqe, data)) {
            return *done;
        }
    }
    const std::uint32_t block_bytes = ns->format.extended_bytes();
    const std::uint64_t offset = wire::command_slba(sqe) * block_bytes;
    const bool protection = ns->format.pi_type != wire::PiType::none;
    switch (opcode) {
        case IoOpcode::read: {
            Completion done = protection ? read_protected(*ns, sqe, data)
                                         : storage_status(ns->storage->read(offset, data));
            if (done.status.ok()) {
                done.data_length = static_cast<std::uint32_t>(data.size());
                stats_.bytes_read += data.size();
                NamespaceStats& counters = stats_.of_namespace(subsystem.nqn, sqe.nsid);
                ++counters.read_commands;
                counters.bytes_read += data.size();
            }
            return done;
        }
        case IoOpcode::write: {
            Completion done = protection ? write_protected(*ns, sqe, data)
                                         : storage_status(ns->storage->write(offset, data));
            if (done.status.ok()) {
                stats_.bytes_written += data.size();
                NamespaceStats& counters = stats_.of_namespace(subsystem.nqn, sqe.nsid);
                ++counters.write_commands;
                counters.bytes_written += data.size();
            }
            return done;
        }
        case IoOpcode::compare:
            return compare(*ns, sqe, data);
        case IoOpcode::flush:
            return storage_status(ns->storage->flush());
        case IoOpcode::write_zeroes:
            if (protection) {
                return write_zeroes_protected(*ns, sqe);
            }
            return storage_status(ns->storage->write_zeroes(
                offset, std::uint64_t{wire::command_block_count(sqe)} * block_bytes));
        case IoOpcode::dataset_management: {
            if ((sqe.cdw11 & wire::kDsmAttributeDeallocate) == 0) {
                return Completion{};  // hints only
            }
            const std::uint32_t count = wire::dsm_range_count(sqe);
            std::vector<wire::DsmRange> ranges(count);
            std::memcpy(ranges.data(), data.data(), count * sizeof(wire::DsmRange));
            for (const auto& range : ranges) {
                if (!range_ok(*ns, range.slba, range.length_blocks)) {
                    return Completion{Status::generic(GenericStatus::lba_out_of_range, true)};
                }
            }
            // Deallocated blocks read back as zeroes (with PI: as never written,
            // see read_protected).
            for (const auto& range : ranges) {
                if (const int error = ns->storage->write_zeroes(
                        range.slba * block_bytes,
                        std::uint64_t{range.length_blocks} * block_bytes)) {
                    return storage_status(error);
                }
            }
            return Completion{};
        }
        default:
            return Completion{Status::generic(GenericStatus::invalid_opcode, true)};
    }
}

Completion CommandCore::compare(Namespace& ns, const Sqe& sqe, std::span<const std::uint8_t> data) {
    // The stored blocks as a Read of the same command would return them: with
    // PI, checked as PRCHK asks and the PI stripped where PRACT keeps it off
    // the wire; what the host sent is compared with that, byte for byte.
    compare_scratch_.resize(data.size());
    const std::span<std::uint8_t> stored(compare_scratch_);
    const Completion read =
        ns.format.pi_type != wire::PiType::none
            ? read_protected(ns, sqe, stored)
            : storage_status(
                  ns.storage->read(wire::command_slba(sqe) * ns.format.extended_bytes(), stored));
    if (!read.status.ok()) {
        return read;
    }
    if (!std::equal(data.begin(), data.end(), stored.begin())) {
        // Retrying cannot help: the same blocks differ again.
        return Completion{
            Status::make(wire::StatusCodeType::media,
                         static_cast<std::uint8_t>(wire::MediaStatus::compare_failure), true)};
    }
    return Completion{};
}

}  // namespace nvmeof::target
