// I/O command sets and zoned namespaces at identification: the command set
// combination a controller runs with CC.CSS 110b, a namespace's CSI, and a
// zoned namespace's geometry and Zone Append limit (Identify CNS 0x03, 0x05,
// 0x06 and 0x1C, the CSI 2 Commands Supported and Effects log).
#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "base/log.hpp"
#include "host/controller_impl.hpp"
#include "host/negotiation.hpp"
#include "nvmeof/wire.hpp"

namespace nvmeof {

using namespace detail;

void ControllerImpl::select_command_sets() {
    if (!io_command_sets_) {
        return;
    }
    const std::string step = "Identify I/O Command Set Combinations";
    const Response response = execute(
        *admin_,
        wire::identify_command_set_combinations(
            limits_.cntlid,
            wire::keyed_data_block(scratch(kScratchIdentifyOffset, wire::kIdentifyDataSize))),
        step);
    if (!response.status.ok()) {
        // (Linux's nvmet has no CNS 0x1C): the combination the controller
        // started with, index 0, is what it runs.
        log_debug("controller %u: %s refused (%s): combination 0 in use", unsigned{limits_.cntlid},
                  step.c_str(), describe(response.status).c_str());
        return;
    }
    wire::IoCommandSetCombinations list{};
    std::memcpy(&list, scratch_.get() + kScratchIdentifyOffset, sizeof list);
    const auto index = command_set_combination(list, wire::kIocsNvm | wire::kIocsZoned);
    if (!index || *index == 0) {
        return;  // combination 0 holds both, or none does: the controller's own stays
    }
    const Response set = execute(*admin_,
                                 wire::set_features_command(wire::FeatureId::io_command_set_profile,
                                                            *index & wire::kIoCommandSetIndexMask),
                                 "Set Features I/O Command Set Profile");
    if (!set.status.ok()) {
        log_error("controller %u: I/O command set combination %u (NVM and zoned) refused: %s",
                  unsigned{limits_.cntlid}, unsigned{*index}, describe(set.status).c_str());
        return;
    }
    limits_.command_set_combination = *index;
}

std::uint8_t ControllerImpl::namespace_command_set(std::uint32_t nsid) {
    if (!io_command_sets_) {
        return wire::kCsiNvm;  // CC.CSS 000b: every namespace it serves is NVM
    }
    const Response response = execute(
        *admin_,
        wire::identify_command(
            wire::IdentifyCns::namespace_descriptors, nsid,
            wire::keyed_data_block(scratch(kScratchIdentifyOffset, wire::kIdentifyDataSize))),
        "Identify Namespace Identification Descriptors " + std::to_string(nsid));
    if (!response.status.ok()) {
        return wire::kCsiNvm;  // no descriptor list: no CSI descriptor either
    }
    const auto* page =
        reinterpret_cast<const std::uint8_t*>(scratch_.get() + kScratchIdentifyOffset);
    try {
        return wire::namespace_csi(std::span<const std::uint8_t, wire::kIdentifyDataSize>(
                                       page, wire::kIdentifyDataSize))
            .value_or(wire::kCsiNvm);
    } catch (const std::exception& e) {
        throw Error("namespace " + std::to_string(nsid) +
                    ": its identification descriptors: " + e.what());
    }
}

std::uint64_t ControllerImpl::zone_append_limit() {
    if (zone_append_limit_) {
        return zone_append_supported_ ? *zone_append_limit_ : 0;
    }
    execute_ok(*admin_,
               wire::identify_command_set_controller(
                   wire::kCsiZoned, wire::keyed_data_block(
                                        scratch(kScratchIdentifyOffset, wire::kIdentifyDataSize))),
               "Identify Controller (Zoned Namespace command set)");
    wire::IdentifyZonedController zoned{};
    std::memcpy(&zoned, scratch_.get() + kScratchIdentifyOffset, sizeof zoned);
    const std::uint64_t zasl = wire::zone_append_size_limit(zoned.zasl, cap_.min_page_size());
    // Zone Append is optional to a controller's zoned command set as Linux's
    // host reads it: supported where the CSI 2 effects log says so (a
    // controller without the log is taken at its word: Identify made it zoned).
    zone_append_supported_ = true;
    if ((lpa_ & wire::kLpaCommandsSupportedEffects) != 0) {
        execute_ok(*admin_,
                   wire::get_log_page_command(
                       wire::LogPageId::commands_supported, 0,
                       wire::keyed_data_block(scratch(kScratchIdentifyOffset,
                                                      sizeof(wire::CommandsSupportedEffectsLog))),
                       0, wire::kCsiZoned),
                   "Get Log Page Commands Supported and Effects (Zoned Namespace command set)");
        wire::CommandsSupportedEffectsLog effects{};
        std::memcpy(&effects, scratch_.get() + kScratchIdentifyOffset, sizeof effects);
        zone_append_supported_ =
            (effects.iocs[static_cast<std::uint8_t>(wire::IoOpcode::zone_append)] &
             wire::kEffectsCommandSupported) != 0;
    }
    zone_append_limit_ = zasl;
    return zone_append_supported_ ? zasl : 0;
}

ZonedInfo ControllerImpl::read_zoned_namespace(std::uint32_t nsid,
                                               const wire::IdentifyNamespace& id,
                                               const NamespaceInfo& info) {
    const std::string what = "namespace " + std::to_string(nsid);
    execute_ok(
        *admin_,
        wire::identify_command_set_namespace(
            nsid, wire::kCsiZoned,
            wire::keyed_data_block(scratch(kScratchIdentifyOffset, wire::kIdentifyDataSize))),
        "Identify Namespace " + std::to_string(nsid) + " (Zoned Namespace command set)");
    wire::IdentifyZonedNamespace zns{};
    std::memcpy(&zns, scratch_.get() + kScratchIdentifyOffset, sizeof zns);
    wire::ZonedGeometry geometry;
    try {
        geometry = wire::zoned_geometry(zns, id.format_index());
    } catch (const std::exception& e) {
        throw Error(what + ": " + e.what());
    }
    ZonedInfo zones;
    zones.zone_blocks = geometry.zone_blocks;
    zones.zone_count = (info.size_lbas + geometry.zone_blocks - 1) / geometry.zone_blocks;
    zones.max_open_zones = geometry.max_open;
    zones.max_active_zones = geometry.max_active;
    zones.descriptor_extension_bytes = geometry.descriptor_extension_bytes;
    zones.variable_zone_capacity = (geometry.zoc & wire::kZocVariableZoneCapacity) != 0;
    zones.zone_active_excursions = (geometry.zoc & wire::kZocZoneActiveExcursions) != 0;
    zones.read_across_zone_boundaries = (geometry.ozcs & wire::kOzcsReadAcrossZoneBoundaries) != 0;
    // Never split, so at most one command's worth: ZASL (MDTS where it is 0)
    // and the largest transfer (whose 24-bit keyed SGL keeps it below 65,536
    // blocks, NLB's limit).
    const std::uint64_t zasl = zone_append_limit();
    if (zone_append_supported_) {
        zones.zone_append_max_bytes =
            zasl != 0 ? std::min(zasl, limits_.max_transfer_bytes) : limits_.max_transfer_bytes;
    }
    return zones;
}

}  // namespace nvmeof
