// CommandCore: admin commands (Identify, Set/Get Features, Get Log Page, Keep
// Alive, Abort, Asynchronous Event Request).
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core_internal.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/discovery.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target {

using wire::AdminOpcode;
using wire::DataDirection;
using wire::FeatureId;
using wire::GenericStatus;
using wire::IdentifyCns;
using wire::Sqe;
using wire::Status;

namespace {

constexpr std::uint8_t kRecommendedArbitrationBurst = 6;  // RAB, as nvmet and SPDK
constexpr std::uint8_t kSqEntrySizes = 0x66;              // SQES: 64 bytes min and max
constexpr std::uint8_t kCqEntrySizes = 0x44;              // CQES: 16 bytes
// SGLS, like nvmet: SGLs with no alignment rule (bit 0), Keyed SGL Data Blocks
// (bit 2, RDMA only) and in-capsule data by offset (bit 20).
constexpr std::uint32_t kSglSupportRdma = 0x00100005;
constexpr std::uint32_t kSglSupportTcp = 0x00100001;
constexpr std::uint32_t kResponseCapsuleUnits = 1;  // IORCSZ: 16-byte responses
constexpr std::uint8_t kMaxSglDataDescriptors = 1;  // MSDBD, like nvmet
constexpr std::uint16_t kDiscoveryPortId = 1;
constexpr std::uint64_t kDiscoveryGeneration = 1;  // the configuration never changes
constexpr char kModel[] = "nvmeof-target";
constexpr char kFirmware[] = "0.1.0";
constexpr std::uint8_t kFeatureSelectMask = 0x7;
constexpr std::uint8_t kAbortNotPerformed = 1;
// Get Features select 3 (capabilities), DW0 bit 2: the feature is changeable.
constexpr std::uint32_t kFeatureChangeable = 1u << 2;
// The I/O command set combination a controller of a subsystem with a zoned
// namespace supports (CNS 0x1C, index 0): the NVM and Zoned Namespace command sets.
constexpr std::uint64_t kNvmAndZoned = wire::kIocsNvm | wire::kIocsZoned;
constexpr std::uint8_t kNmicShared = 1;  // NMIC bit 0: may be attached to several controllers
// MC bit 0: metadata can travel as part of an extended data LBA (the only way
// over fabrics).
constexpr std::uint8_t kMcExtendedLba = 1;
// DPC: the protection a namespace can have. There is no Format NVM to change
// it, so that is the one it has (DPS), nothing more.
std::uint8_t protection_capabilities(const wire::BlockFormat& format) {
    if (format.pi_type == wire::PiType::none) {
        return 0;
    }
    const std::uint8_t type = format.pi_type == wire::PiType::type1   ? wire::kDpcType1
                              : format.pi_type == wire::PiType::type2 ? wire::kDpcType2
                                                                      : wire::kDpcType3;
    return type | (format.pi_first ? wire::kDpcPiFirst : wire::kDpcPiLast);
}

// The command sets a controller of `subsystem` serves: NVM's always, the
// Zoned Namespace command set's where a namespace is zoned.
bool serves_command_set(const Subsystem& subsystem, std::uint8_t csi) {
    return csi == wire::kCsiNvm || (csi == wire::kCsiZoned && subsystem.has_zoned_namespace());
}

// Commands Supported and Effects of command set `csi`: every admin command the
// controller serves, and the I/O commands of that set; those that write blocks
// change their content (LBCC).
wire::CommandsSupportedEffectsLog commands_supported_log(std::uint8_t csi) {
    wire::CommandsSupportedEffectsLog log{};
    for (const AdminOpcode opcode :
         {AdminOpcode::get_log_page, AdminOpcode::identify, AdminOpcode::abort,
          AdminOpcode::set_features, AdminOpcode::get_features, AdminOpcode::async_event_request,
          AdminOpcode::keep_alive}) {
        log.acs[static_cast<std::uint8_t>(opcode)] = wire::kEffectsCommandSupported;
    }
    using wire::IoOpcode;
    const auto set = [&](IoOpcode opcode, bool writes) {
        log.iocs[static_cast<std::uint8_t>(opcode)] =
            wire::kEffectsCommandSupported |
            (writes ? wire::kEffectsLogicalBlockContentChange : 0u);
    };
    set(IoOpcode::flush, false);
    set(IoOpcode::write, true);
    set(IoOpcode::read, false);
    set(IoOpcode::compare, false);
    set(IoOpcode::write_zeroes, true);
    set(IoOpcode::dataset_management, true);
    if (csi == wire::kCsiZoned) {
        set(IoOpcode::zone_management_send, true);  // a reset zeroes blocks
        set(IoOpcode::zone_management_receive, false);
        set(IoOpcode::zone_append, true);
    }
    return log;
}

// FNV-1a, for stable serial numbers and namespace GUIDs derived from names.
std::uint64_t fnv1a(std::string_view text, std::uint64_t seed) {
    std::uint64_t hash = 0xcbf29ce484222325ull ^ seed;
    for (const char c : text) {
        hash ^= static_cast<std::uint8_t>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

std::array<std::uint8_t, 16> namespace_guid(const Subsystem& subsystem, std::uint32_t nsid) {
    const std::string key = subsystem.nqn + "/" + std::to_string(nsid);
    std::array<std::uint8_t, 16> guid{};
    const std::uint64_t a = fnv1a(key, 0);
    const std::uint64_t b = fnv1a(key, 0x9e3779b97f4a7c15ull);
    std::memcpy(guid.data(), &a, sizeof a);
    std::memcpy(guid.data() + sizeof a, &b, sizeof b);
    return guid;
}

std::string serial_number(const Subsystem& subsystem) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx",
                  static_cast<unsigned long long>(fnv1a(subsystem.nqn, 0)));
    return text;
}

bool is_discovery_command_allowed(const Sqe& sqe) {
    switch (static_cast<AdminOpcode>(sqe.opcode)) {
        case AdminOpcode::get_log_page:
        case AdminOpcode::identify:
        case AdminOpcode::keep_alive:
        case AdminOpcode::set_features:
        case AdminOpcode::get_features:
        case AdminOpcode::async_event_request:
            return true;
        default:
            return false;
    }
}

}  // namespace

DataPlan CommandCore::plan_admin(QueueState& queue, Controller& ctrl, const Sqe& sqe,
                                 std::size_t in_capsule_bytes) {
    const bool discovery = ctrl.subsystem->discovery;
    if (discovery && !is_discovery_command_allowed(sqe)) {
        return failed_plan(GenericStatus::invalid_opcode);
    }
    DataPlan plan;
    switch (static_cast<AdminOpcode>(sqe.opcode)) {
        case AdminOpcode::identify: {
            const IdentifyCns cns = wire::identify_cns(sqe);
            if (discovery && cns != IdentifyCns::controller) {
                return failed_plan(GenericStatus::invalid_field);
            }
            switch (cns) {
                case IdentifyCns::controller:
                    break;
                case IdentifyCns::namespace_data:
                    if (sqe.nsid == 0 || sqe.nsid == wire::kBroadcastNsid) {
                        return failed_plan(GenericStatus::invalid_namespace_or_format);
                    }
                    break;
                case IdentifyCns::active_namespace_list:
                    if (sqe.nsid >= wire::kBroadcastNsid - 1) {
                        return failed_plan(GenericStatus::invalid_namespace_or_format);
                    }
                    break;
                case IdentifyCns::namespace_descriptors:
                    if (ctrl.subsystem->find_namespace(sqe.nsid) == nullptr) {
                        return failed_plan(GenericStatus::invalid_namespace_or_format);
                    }
                    break;
                case IdentifyCns::io_command_set_namespace: {
                    const std::uint8_t csi = wire::identify_csi(sqe);
                    if (!serves_command_set(*ctrl.subsystem, csi)) {
                        return failed_plan(GenericStatus::invalid_field);
                    }
                    if (sqe.nsid == 0 || sqe.nsid == wire::kBroadcastNsid) {
                        return failed_plan(GenericStatus::invalid_namespace_or_format);
                    }
                    // A zoned namespace answers for both command sets (a zoned
                    // namespace is formatted as the NVM command set's are), an
                    // NVM one for the NVM command set only.
                    const Namespace* ns = ctrl.subsystem->find_namespace(sqe.nsid);
                    if (csi == wire::kCsiZoned && ns != nullptr && ns->zones == nullptr) {
                        return failed_plan(GenericStatus::invalid_field);
                    }
                    break;
                }
                case IdentifyCns::io_command_set_controller:
                    // Linux asks it of VS >= 1.1 controllers; for the NVM
                    // command set (CSI 0) nvmet answers zeroes.
                    if (!serves_command_set(*ctrl.subsystem, wire::identify_csi(sqe))) {
                        return failed_plan(GenericStatus::invalid_field);
                    }
                    break;
                case IdentifyCns::io_command_set_combinations:
                    if (!ctrl.subsystem->has_zoned_namespace()) {
                        return failed_plan(GenericStatus::invalid_field);
                    }
                    break;
                default:
                    return failed_plan(GenericStatus::invalid_field);
            }
            plan.direction = DataDirection::controller_to_host;
            plan.length = wire::kIdentifyDataSize;
            break;
        }
        case AdminOpcode::get_log_page: {
            const wire::LogPageRequest request = wire::parse_get_log_page(sqe);
            const auto lid = request.lid;
            // Commands Supported and Effects where LPA bit 1 says so: a
            // subsystem with a zoned namespace (Linux reads it for CSI 2).
            const bool effects = lid == wire::LogPageId::commands_supported && !discovery &&
                                 ctrl.subsystem->has_zoned_namespace() &&
                                 serves_command_set(*ctrl.subsystem, request.csi);
            const bool supported =
                discovery ? lid == wire::LogPageId::discovery
                          : (lid == wire::LogPageId::error_information ||
                             lid == wire::LogPageId::smart_health || lid == wire::LogPageId::ana ||
                             lid == wire::LogPageId::firmware_slot || effects);
            if (!supported || request.offset % wire::kDwordSize != 0 ||
                request.length > config_.limits.max_transfer_bytes()) {
                return failed_plan(GenericStatus::invalid_field);
            }
            plan.direction = DataDirection::controller_to_host;
            plan.length = static_cast<std::uint32_t>(request.length);
            break;
        }
        case AdminOpcode::set_features:
        case AdminOpcode::get_features:
            // Host Behavior Support carries its 512 bytes both ways; the other
            // features served have none.
            if (!discovery && wire::feature_id(sqe) == FeatureId::host_behavior_support) {
                plan.direction = static_cast<AdminOpcode>(sqe.opcode) == AdminOpcode::set_features
                                     ? DataDirection::host_to_controller
                                     : DataDirection::controller_to_host;
                plan.length = wire::kHostBehaviorSupportSize;
            }
            break;
        case AdminOpcode::keep_alive:
        case AdminOpcode::abort:
            break;
        case AdminOpcode::async_event_request:
            if (ctrl.held_async_events > kAsyncEventLimit) {
                plan.status = Status::make(
                    wire::StatusCodeType::command_specific,
                    static_cast<std::uint8_t>(
                        wire::AdminCommandStatus::asynchronous_event_request_limit_exceeded),
                    true);
                return plan;
            }
            break;
        default:
            return failed_plan(GenericStatus::invalid_opcode);
    }
    if (check_data_pointer(queue, sqe, in_capsule_bytes, plan) &&
        static_cast<AdminOpcode>(sqe.opcode) == AdminOpcode::async_event_request) {
        // Held until an event occurs (an ANA change: take_async_event).
        plan.hold = true;
        ++ctrl.held_async_events;
    }
    return plan;
}

Completion CommandCore::execute_admin(Controller& ctrl, const Sqe& sqe,
                                      std::span<std::uint8_t> data) {
    switch (static_cast<AdminOpcode>(sqe.opcode)) {
        case AdminOpcode::identify:
            return execute_identify(ctrl, sqe, data);
        case AdminOpcode::set_features:
        case AdminOpcode::get_features:
            return execute_features(ctrl, sqe, data);
        case AdminOpcode::get_log_page:
            return execute_get_log_page(ctrl, sqe, data);
        case AdminOpcode::keep_alive:
            ctrl.last_keep_alive = Clock::now();
            return Completion{};
        case AdminOpcode::abort: {
            Completion done;
            done.dw0 = kAbortNotPerformed;
            return done;
        }
        default:
            return Completion{Status::generic(GenericStatus::invalid_opcode, true)};
    }
}

Completion CommandCore::execute_identify(Controller& ctrl, const Sqe& sqe,
                                         std::span<std::uint8_t> data) {
    std::fill(data.begin(), data.end(), std::uint8_t{0});
    Subsystem& subsystem = *ctrl.subsystem;
    Completion done;
    done.data_length = wire::kIdentifyDataSize;
    switch (wire::identify_cns(sqe)) {
        case IdentifyCns::controller: {
            wire::IdentifyController id{};
            wire::copy_to_space_padded(id.sn, sizeof id.sn, serial_number(subsystem));
            wire::copy_to_space_padded(id.mn, sizeof id.mn, kModel);
            wire::copy_to_space_padded(id.fr, sizeof id.fr, kFirmware);
            id.rab = kRecommendedArbitrationBurst;
            id.mdts = config_.limits.mdts;
            id.cntlid = ctrl.cntlid;
            id.ver = kReportedVersion.raw;
            id.cntrltype =
                subsystem.discovery ? wire::kControllerTypeDiscovery : wire::kControllerTypeIo;
            id.aerl = kAsyncEventLimit;
            if (!subsystem.discovery) {
                id.cmic = wire::kCmicMultipleControllers | wire::kCmicAnaReporting;
                id.oaes = wire::kOaesAnaChangeNotice;
                id.anatt = kAnaTransitionTimeS;
                id.anacap = wire::kAnacapOptimized | wire::kAnacapNonOptimized |
                            wire::kAnacapInaccessible | wire::kAnacapPersistentLoss |
                            wire::kAnacapChange | wire::kAnacapGroupIdNoChange;
                id.anagrpmax = kAnaGroupId;
                id.nanagrpid = kAnaGroupId;
                // The guard type of a PI format is in the NVM command set's
                // Identify Namespace (CNS 0x05), which a host reads when this
                // bit is set (Linux: for every namespace); without it a host
                // assumes the 16-bit guard.
                id.ctratt = wire::kCtrattExtendedLbaFormats;
            }
            if (subsystem.has_zoned_namespace()) {
                id.lpa = wire::kLpaCommandsSupportedEffects;
            }
            id.kas = config_.limits.kas;
            id.sqes = kSqEntrySizes;
            id.cqes = kCqEntrySizes;
            id.maxcmd = config_.limits.effective_maxcmd();
            id.nn = static_cast<std::uint32_t>(subsystem.namespaces.size());
            if (!subsystem.discovery) {
                // With ANA reported, Linux's host refuses a controller whose MNAN
                // is 0 ("Invalid MNAN value"): every namespace may be attached.
                id.mnan = id.nn;
            }
            id.oncs = wire::kOncsCompare | wire::kOncsDatasetManagement | wire::kOncsWriteZeroes;
            id.sgls = config_.transport == Transport::tcp ? kSglSupportTcp : kSglSupportRdma;
            wire::copy_to_field(id.subnqn, sizeof id.subnqn, subsystem.nqn);
            id.ioccsz = config_.limits.ioccsz;
            id.iorcsz = kResponseCapsuleUnits;
            id.icdoff = 0;
            id.msdbd = kMaxSglDataDescriptors;
            std::memcpy(data.data(), &id, sizeof id);
            return done;
        }
        case IdentifyCns::namespace_data: {
            const Namespace* ns = subsystem.find_namespace(sqe.nsid);
            if (ns == nullptr) {
                return done;  // an inactive NSID: zeroes, like nvmet
            }
            const wire::BlockFormat& format = ns->format;
            wire::IdentifyNamespace id{};
            id.nsze = id.ncap = id.nuse = ns->blocks;
            id.nlbaf = 0;
            id.nmic = kNmicShared;  // reachable through every port's controllers
            // Never-written and deallocated blocks read as zeroes, their PI as
            // all ones (storage.cpp, mark_unwritten in io_protection.cpp).
            id.dlfeat = wire::kDlfeatReadsZeroes;
            id.anagrpid = kAnaGroupId;
            id.flbas = 0;  // LBA format 0, the only one
            id.lbaf[0].lbads = static_cast<std::uint8_t>(std::countr_zero(format.data_bytes));
            if (format.metadata_bytes != 0) {
                id.lbaf[0].ms = static_cast<std::uint16_t>(format.metadata_bytes);
                id.flbas |= wire::kFlbasExtendedMetadata;
                id.mc = kMcExtendedLba;
                id.dpc = protection_capabilities(format);
                id.dps = static_cast<std::uint8_t>(format.pi_type);
                if (format.pi_type != wire::PiType::none && format.pi_first) {
                    id.dps |= wire::kDpsPiFirst;
                }
            }
            const auto guid = namespace_guid(subsystem, ns->nsid);
            std::memcpy(id.nguid, guid.data(), guid.size());
            std::memcpy(data.data(), &id, sizeof id);
            return done;
        }
        case IdentifyCns::active_namespace_list: {
            wire::ActiveNamespaceList list{};
            std::size_t n = 0;
            for (const auto& ns : subsystem.namespaces) {
                if (ns.nsid > sqe.nsid && n < wire::kActiveNamespaceListEntries) {
                    list.nsid[n++] = ns.nsid;
                }
            }
            std::memcpy(data.data(), &list, sizeof list);
            return done;
        }
        case IdentifyCns::io_command_set_namespace: {
            const Namespace* ns = subsystem.find_namespace(sqe.nsid);
            if (ns == nullptr) {
                return done;  // an inactive NSID: zeroes, as for CNS 0x00
            }
            if (wire::identify_csi(sqe) == wire::kCsiZoned) {
                // No zone operation characteristics; reads may cross zone
                // boundaries; one LBA format with its zone size; no zone
                // descriptor extensions.
                const ZoneSet& zones = *ns->zones;
                wire::IdentifyZonedNamespace id{};
                id.ozcs = wire::kOzcsReadAcrossZoneBoundaries;
                id.mar = zones.reported_max_active();
                id.mor = zones.reported_max_open();
                id.lbafe[0].zsze = zones.layout().zone_blocks;
                std::memcpy(data.data(), &id, sizeof id);
                return done;
            }
            // ELBAF of format 0: its guard type and storage tag size; every
            // storage tag bit is checked (LBSTM).
            wire::IdentifyNvmNamespace id{};
            id.elbaf[0] =
                (static_cast<std::uint32_t>(ns->format.guard) << wire::kElbafPiFormatShift) |
                ns->format.storage_tag_bits;
            id.lbstm = ns->format.storage_tag_max();
            std::memcpy(data.data(), &id, sizeof id);
            return done;
        }
        case IdentifyCns::namespace_descriptors: {
            const auto guid = namespace_guid(subsystem, sqe.nsid);
            const std::span<std::uint8_t, wire::kIdentifyDataSize> page(data.data(),
                                                                        wire::kIdentifyDataSize);
            const std::size_t next =
                wire::append_namespace_descriptor(page, 0, wire::NamespaceIdType::nguid, guid);
            // With CAP.CSS bit 6 a host needs each namespace's command set
            // (Linux: "Command set not reported").
            if (subsystem.has_zoned_namespace()) {
                const std::uint8_t csi = subsystem.find_namespace(sqe.nsid)->zones != nullptr
                                             ? wire::kCsiZoned
                                             : wire::kCsiNvm;
                wire::append_namespace_descriptor(page, next, wire::NamespaceIdType::csi,
                                                  std::span(&csi, 1));
            }
            return done;
        }
        case IdentifyCns::io_command_set_controller:
            if (wire::identify_csi(sqe) == wire::kCsiZoned) {
                wire::IdentifyZonedController id{};
                id.zasl = config_.limits.zasl;
                std::memcpy(data.data(), &id, sizeof id);
            }
            return done;  // for NVM: all zeroes
        case IdentifyCns::io_command_set_combinations: {
            // The one combination, at index 0 (the I/O Command Set Profile's default).
            wire::IoCommandSetCombinations sets{};
            sets.vector[0] = kNvmAndZoned;
            std::memcpy(data.data(), &sets, sizeof sets);
            return done;
        }
        default:
            return done;
    }
}

Completion CommandCore::execute_features(Controller& ctrl, const Sqe& sqe,
                                         std::span<std::uint8_t> data) {
    const bool set = static_cast<AdminOpcode>(sqe.opcode) == AdminOpcode::set_features;
    const FeatureId fid = wire::feature_id(sqe);
    const bool discovery = ctrl.subsystem->discovery;
    const std::uint32_t io_queues_value = (config_.limits.max_io_queues - 1u) |
                                          ((config_.limits.max_io_queues - 1u) << wire::kNcqrShift);
    Completion done;
    if (set) {
        if ((sqe.cdw10 >> wire::kFeatureSaveBit) & 1u) {
            done.status =
                Status::make(wire::StatusCodeType::command_specific,
                             static_cast<std::uint8_t>(
                                 wire::AdminCommandStatus::feature_identifier_not_saveable),
                             true);
            return done;
        }
        switch (fid) {
            case FeatureId::number_of_queues: {
                const wire::QueueCounts asked = wire::parse_number_of_queues(sqe.cdw11);
                // parse_number_of_queues makes them 1's based: 0xFFFF on the wire is 0x10000.
                if (discovery || asked.submission > wire::kMaxQueuesPerController ||
                    asked.completion > wire::kMaxQueuesPerController) {
                    return Completion{Status::generic(GenericStatus::invalid_field, true)};
                }
                done.dw0 = io_queues_value;  // like nvmet: the maximum, whatever was asked
                return done;
            }
            case FeatureId::keep_alive_timer:
                ctrl.kato_ms = effective_kato_ms(ctrl, sqe.cdw11);
                ctrl.last_keep_alive = Clock::now();
                return done;
            case FeatureId::async_event_configuration:
                return done;
            case FeatureId::host_behavior_support:
                if (discovery) {
                    break;
                }
                return set_host_behavior(ctrl, data);
            default:
                break;
        }
        return Completion{Status::generic(GenericStatus::invalid_field, true)};
    }
    const auto select = static_cast<wire::FeatureSelect>((sqe.cdw10 >> wire::kFeatureSelectShift) &
                                                         kFeatureSelectMask);
    if (select > wire::FeatureSelect::capabilities) {
        return Completion{Status::generic(GenericStatus::invalid_field, true)};
    }
    switch (fid) {
        case FeatureId::number_of_queues:
            if (discovery) {
                return Completion{Status::generic(GenericStatus::invalid_field, true)};
            }
            done.dw0 = io_queues_value;
            return done;
        case FeatureId::keep_alive_timer:
            done.dw0 = ctrl.kato_ms;
            return done;
        case FeatureId::async_event_configuration:
            return done;
        case FeatureId::host_behavior_support:
            if (discovery) {
                break;
            }
            // Nothing is saveable and the defaults are all disabled, so every
            // select but "current" reads as zeroes (capabilities: changeable).
            std::fill(data.begin(), data.end(), std::uint8_t{0});
            if (select == wire::FeatureSelect::current) {
                std::memcpy(data.data(), &ctrl.host_behavior, sizeof ctrl.host_behavior);
            } else if (select == wire::FeatureSelect::capabilities) {
                done.dw0 = kFeatureChangeable;
            }
            done.data_length = wire::kHostBehaviorSupportSize;
            return done;
        default:
            break;
    }
    return Completion{Status::generic(GenericStatus::invalid_field, true)};
}

// Each enable is a boolean byte; one the controller has no behaviour for
// (ACRE: no retry delays reported; ETDAS: no telemetry log) is still
// accepted and read back, as SPDK's and the base specification's controllers
// do for a host that merely states what it can handle.
Completion CommandCore::set_host_behavior(Controller& ctrl, std::span<const std::uint8_t> data) {
    wire::HostBehaviorSupport asked{};
    std::memcpy(&asked, data.data(), sizeof asked);
    const std::pair<const char*, std::uint8_t> enables[] = {{"ACRE", asked.acre},
                                                            {"ETDAS", asked.etdas},
                                                            {"LBAFEE", asked.lbafee},
                                                            {"HDISNS", asked.hdisns}};
    for (const auto& [name, value] : enables) {
        if (value > wire::kHostBehaviorEnabled) {
            std::fprintf(
                stderr,
                "nvmeof-target: controller %u: Set Features Host Behavior Support refused: "
                "%s is %u, not 0 or 1\n",
                unsigned{ctrl.cntlid}, name, unsigned{value});
            return Completion{Status::generic(GenericStatus::invalid_field, true)};
        }
    }
    ctrl.host_behavior = asked;
    return Completion{};
}

Completion CommandCore::execute_get_log_page(Controller& ctrl, const Sqe& sqe,
                                             std::span<std::uint8_t> data) {
    const wire::LogPageRequest request = wire::parse_get_log_page(sqe);
    std::fill(data.begin(), data.end(), std::uint8_t{0});
    Completion done;
    done.data_length = static_cast<std::uint32_t>(data.size());
    if (request.lid == wire::LogPageId::ana) {
        wire::AnaGroup group;
        group.id = kAnaGroupId;
        group.change_count = ana_change_count_;
        group.state = ana_states_.at(ctrl.port_index);
        for (const auto& ns : ctrl.subsystem->namespaces) {
            group.nsids.push_back(ns.nsid);
        }
        const std::vector<std::uint8_t> log =
            wire::ana_log(ana_change_count_, std::span(&group, 1), wire::ana_log_groups_only(sqe));
        if (request.offset < log.size()) {
            const std::size_t n = std::min<std::size_t>(log.size() - request.offset, data.size());
            std::memcpy(data.data(), log.data() + request.offset, n);
        }
        return done;
    }
    if (request.lid == wire::LogPageId::commands_supported) {
        const wire::CommandsSupportedEffectsLog log = commands_supported_log(request.csi);
        if (request.offset < sizeof log) {
            const std::size_t n = std::min<std::size_t>(sizeof log - request.offset, data.size());
            std::memcpy(data.data(), reinterpret_cast<const std::uint8_t*>(&log) + request.offset,
                        n);
        }
        return done;
    }
    if (request.lid != wire::LogPageId::discovery) {
        return done;  // error information, SMART, firmware slots: zeroes
    }
    std::vector<wire::DiscoveryRecord> records;
    // A wildcard listener names no address a host could use: report the one this
    // host reached, as nvmet does.
    const bool wildcard = listen_address_ == "0.0.0.0" || listen_address_ == "::";
    const std::string& address =
        wildcard && !ctrl.local_address.empty() ? ctrl.local_address : listen_address_;
    const bool ipv6 = address.find(':') != std::string::npos;
    for (const auto& subsystem : subsystems_) {
        if (subsystem->discovery || !subsystem->allows(ctrl.hostnqn)) {
            continue;
        }
        wire::DiscoveryRecord record;
        // TCP's TSAS is SECTYPE 0 (no TLS), all zeroes, as nvmet fills it.
        record.transport = config_.transport == Transport::tcp ? wire::TransportType::tcp
                                                               : wire::TransportType::rdma;
        record.family = ipv6 ? wire::AddressFamily::ipv6 : wire::AddressFamily::ipv4;
        record.subtype = wire::SubsystemType::nvm;
        record.port_id = kDiscoveryPortId;
        record.cntlid = wire::kDynamicControllerId;
        record.admin_queue_size = wire::kAdminQueueSize;
        record.service_id = std::to_string(listen_port_);
        record.subsystem_nqn = subsystem->nqn;
        record.address = address;
        records.push_back(std::move(record));
    }
    const std::vector<std::uint8_t> log = wire::discovery_log(kDiscoveryGeneration, records);
    if (request.offset < log.size()) {
        const std::size_t n = std::min<std::size_t>(log.size() - request.offset, data.size());
        std::memcpy(data.data(), log.data() + request.offset, n);
    }
    return done;
}

}  // namespace nvmeof::target
