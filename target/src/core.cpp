// CommandCore: construction, the common part of plan/execute, Fabrics commands
// (Connect, Property Get/Set) and controller lifecycle.
#include "core.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core_internal.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/registers.hpp"
#include "nvmeof/wire/sgl.hpp"

namespace nvmeof::target {

using wire::ConnectData;
using wire::DataDirection;
using wire::FabricsStatus;
using wire::FabricsType;
using wire::GenericStatus;
using wire::Sqe;
using wire::Status;

namespace {

// NVMe/TCP's Transport SGL Data Block descriptor: 0x5A.
constexpr std::uint8_t kTransportDataBlock =
    wire::sgl_identifier(wire::SglType::transport_data_block, wire::SglSubtype::transport_specific);

}  // namespace

bool Subsystem::allows(std::string_view hostnqn) const {
    return allowed_hosts.empty() ||
           std::find(allowed_hosts.begin(), allowed_hosts.end(), hostnqn) != allowed_hosts.end();
}

Namespace* Subsystem::find_namespace(std::uint32_t nsid) {
    if (nsid == 0 || nsid > namespaces.size()) {
        return nullptr;
    }
    return &namespaces[nsid - 1];
}

bool Subsystem::has_zoned_namespace() const {
    return std::any_of(namespaces.begin(), namespaces.end(),
                       [](const Namespace& ns) { return ns.zones != nullptr; });
}

Completion connect_invalid_parameter(bool in_data, std::uint16_t offset) {
    Completion done;
    done.status = Status::fabrics(FabricsStatus::connect_invalid_parameters, true);
    done.dw0 = wire::connect_invalid_parameter_result(in_data, offset);
    return done;
}

CommandCore::CommandCore(const TargetConfig& config, Stats& stats)
    : config_(config), stats_(stats) {
    auto discovery = std::make_unique<Subsystem>();
    discovery->nqn = wire::kDiscoveryNqn;
    discovery->discovery = true;
    subsystems_.push_back(std::move(discovery));
    for (const auto& sc : config.subsystems) {
        auto subsystem = std::make_unique<Subsystem>();
        subsystem->nqn = sc.nqn;
        subsystem->allowed_hosts = sc.allowed_hosts;
        for (const auto& nc : sc.namespaces) {
            Namespace ns;
            ns.nsid = static_cast<std::uint32_t>(subsystem->namespaces.size() + 1);
            ns.format = nc.block_format();
            ns.storage = open_storage(nc);
            ns.blocks = ns.storage->size_bytes() / ns.format.extended_bytes();
            if (nc.zoned) {
                ns.zones = std::make_unique<ZoneSet>(zone_layout(nc));
                apply_zone_faults(ns);
            }
            subsystem->namespaces.push_back(std::move(ns));
        }
        subsystems_.push_back(std::move(subsystem));
    }
    listen_address_ = config.listen_address;
    listen_port_ = config.port;
    ana_states_.assign(config.more_ports.size() + 1, wire::AnaState::optimized);
    for (const auto& [index, state] : config.ana_states) {
        ana_states_.at(index) = state;
    }
}

void CommandCore::set_ana_state(std::size_t port_index, wire::AnaState state) {
    ana_states_.at(port_index) = state;
    ++ana_change_count_;
    unsigned told = 0;
    for (auto& [cntlid, ctrl] : controllers_) {
        if (!ctrl.subsystem->discovery && ctrl.port_index == port_index) {
            ctrl.ana_notice_pending = true;
            ++told;
        }
    }
    std::fprintf(stderr,
                 "nvmeof-target: port index %zu: ANA state %s (change count %llu), %u controllers "
                 "to notify\n",
                 port_index, std::string(wire::ana_state_name(state)).c_str(),
                 static_cast<unsigned long long>(ana_change_count_), told);
}

std::optional<std::uint32_t> CommandCore::take_async_event(std::uint16_t cntlid) {
    Controller* ctrl = find_controller(cntlid);
    if (ctrl == nullptr || !ctrl->ana_notice_pending || ctrl->held_async_events == 0) {
        return std::nullopt;
    }
    ctrl->ana_notice_pending = false;
    --ctrl->held_async_events;
    return wire::async_event_result(wire::ana_change_event());
}

CommandCore::~CommandCore() {
    flush_all();
}

void CommandCore::flush_all() {
    for (auto& subsystem : subsystems_) {
        for (auto& ns : subsystem->namespaces) {
            ns.storage->flush();
        }
    }
}

void CommandCore::set_listen_address(std::string address, std::uint16_t port) {
    listen_address_ = std::move(address);
    listen_port_ = port;
}

Subsystem* CommandCore::find_subsystem(std::string_view nqn) {
    for (auto& subsystem : subsystems_) {
        if (subsystem->nqn == nqn) {
            return subsystem.get();
        }
    }
    return nullptr;
}

Controller* CommandCore::find_controller(std::uint16_t cntlid) {
    const auto it = controllers_.find(cntlid);
    return it == controllers_.end() ? nullptr : &it->second;
}

void CommandCore::log_fault(const std::string& line) {
    ++stats_.faults_injected;
    std::fprintf(stderr, "nvmeof-target: fault: %s\n", line.c_str());
}

// ---- plan ------------------------------------------------------------------

DataPlan CommandCore::plan(QueueState& queue, const Sqe& sqe, std::size_t in_capsule_bytes) {
    stats_.count(command_kind(sqe, queue.kind()));
    const auto psdt = static_cast<std::uint8_t>((sqe.flags & wire::kPsdtMask) >> wire::kPsdtShift);
    if ((sqe.flags & wire::kFuseMask) != 0 || psdt != wire::kPsdtSglMptrContiguous) {
        return failed_plan(GenericStatus::invalid_field);
    }
    if (sqe.opcode == wire::kFabricsOpcode) {
        return plan_fabrics(queue, sqe, in_capsule_bytes);
    }
    Controller* ctrl = queue.connected ? find_controller(queue.cntlid) : nullptr;
    if (ctrl == nullptr) {
        return failed_plan(GenericStatus::command_sequence_error);
    }
    if (queue.auth_required && !queue.authenticated) {
        DataPlan refused;
        refused.status = Status::fabrics(FabricsStatus::authentication_required, true);
        return refused;
    }
    // Only Fabrics commands run while the controller is disabled or shut down.
    const wire::ControllerStatus csts{ctrl->csts};
    if (!wire::ControllerConfig{ctrl->cc}.enabled() || !csts.ready()) {
        return failed_plan(GenericStatus::command_sequence_error);
    }
    return queue.kind() == wire::QueueKind::admin ? plan_admin(queue, *ctrl, sqe, in_capsule_bytes)
                                                  : plan_io(queue, *ctrl, sqe, in_capsule_bytes);
}

bool CommandCore::check_data_pointer(const QueueState& queue, const Sqe& sqe,
                                     std::size_t in_capsule_bytes, DataPlan& plan) const {
    const wire::SglDescriptor& sgl = sqe.dptr;
    auto refuse = [&](GenericStatus status) {
        plan.status = Status::generic(status, true);
        return false;
    };
    auto length_ok = [&](std::uint32_t sgl_length) {
        const std::uint32_t expected = plan.direction == DataDirection::none ? 0 : plan.length;
        if (plan.minimum_length ? sgl_length >= expected : sgl_length == expected) {
            return true;
        }
        std::fprintf(stderr,
                     "nvmeof-target: QID %u CID %u: %s refused (Data SGL Length Invalid): SGL "
                     "length %u bytes, the command moves %s%u%s%s\n",
                     unsigned{queue.qid}, unsigned{sqe.command_id},
                     wire::command_name(sqe, queue.kind()).data(), sgl_length,
                     plan.minimum_length ? "at least " : "", expected,
                     *plan.length_rule != '\0' ? ": " : "", plan.length_rule);
        return false;
    };
    const bool tcp = queue.transport == Transport::tcp;
    // NVMe/TCP names data the host does not put in the capsule with a
    // Transport SGL Data Block (type 5, subtype 0xA: Linux's and SPDK's hosts
    // send 0x5A); keys mean nothing without RDMA, so a keyed one is refused
    // there, as nvmet-tcp does.
    // A descriptor of length 0 moves nothing whatever its type: nvmet-tcp
    // ignores it, and a host may send any for a command without data.
    if (tcp && plan.length == 0 && sgl.unkeyed_length() == 0) {
        return true;
    }
    if (tcp && sgl.identifier == kTransportDataBlock) {
        if (!length_ok(sgl.unkeyed_length())) {
            return refuse(GenericStatus::data_sgl_length_invalid);
        }
        if (plan.length > 0) {
            plan.source = DataSource::transport;
        }
        return true;
    }
    if (sgl.is_keyed() && !tcp) {
        if (sgl.subtype() != wire::SglSubtype::address &&
            sgl.subtype() != wire::SglSubtype::invalidate_key) {
            return refuse(GenericStatus::sgl_descriptor_type_invalid);
        }
        if (!length_ok(sgl.keyed_length())) {
            return refuse(GenericStatus::data_sgl_length_invalid);
        }
        if (plan.length > 0) {
            plan.source = DataSource::keyed;
            plan.remote_address = sgl.address;
            plan.rkey = sgl.keyed_key();
        }
        return true;
    }
    if (sgl.identifier == wire::kDataBlockOffset) {
        // In-capsule data only carries host→controller data (nvmet).
        if (plan.direction != DataDirection::host_to_controller) {
            return refuse(GenericStatus::invalid_field);
        }
        const std::uint64_t end = sgl.address + sgl.unkeyed_length();
        if (sgl.address > queue.in_capsule_capacity || end > queue.in_capsule_capacity) {
            return refuse(GenericStatus::sgl_offset_invalid);
        }
        if (!length_ok(sgl.unkeyed_length()) || sgl.address + plan.length > in_capsule_bytes) {
            return refuse(GenericStatus::data_sgl_length_invalid);
        }
        plan.source = DataSource::in_capsule;
        plan.in_capsule_offset = static_cast<std::uint32_t>(sgl.address);
        return true;
    }
    return refuse(GenericStatus::sgl_descriptor_type_invalid);
}

DataPlan CommandCore::plan_fabrics(QueueState& queue, const Sqe& sqe,
                                   std::size_t in_capsule_bytes) {
    const auto fctype = static_cast<FabricsType>(wire::as_fabrics(sqe).fctype);
    DataPlan plan;
    if (fctype == FabricsType::connect) {
        if (queue.connected) {
            return failed_plan(GenericStatus::command_sequence_error);
        }
        plan.direction = DataDirection::host_to_controller;
        plan.length = wire::kConnectDataSize;
        check_data_pointer(queue, sqe, in_capsule_bytes, plan);
        return plan;
    }
    if (fctype == FabricsType::authentication_send ||
        fctype == FabricsType::authentication_receive) {
        return plan_authentication(queue, sqe, in_capsule_bytes);
    }
    if (fctype != FabricsType::property_get && fctype != FabricsType::property_set) {
        return failed_plan(GenericStatus::invalid_opcode);
    }
    if (!queue.connected || find_controller(queue.cntlid) == nullptr) {
        return failed_plan(GenericStatus::command_sequence_error);
    }
    if (queue.auth_required && !queue.authenticated) {
        plan.status = Status::fabrics(FabricsStatus::authentication_required, true);
        return plan;
    }
    if (queue.kind() == wire::QueueKind::io) {
        return failed_plan(GenericStatus::invalid_opcode);  // properties live on the admin queue
    }
    check_data_pointer(queue, sqe, in_capsule_bytes, plan);
    return plan;
}

// ---- execute ---------------------------------------------------------------

Completion CommandCore::execute(QueueState& queue, const Sqe& sqe, const DataPlan& plan,
                                std::span<std::uint8_t> data) {
    if (!plan.status.ok()) {
        return Completion{plan.status};
    }
    if (plan.inject) {
        return Completion{plan.injected};
    }
    if (sqe.opcode == wire::kFabricsOpcode) {
        const auto fctype = static_cast<FabricsType>(wire::as_fabrics(sqe).fctype);
        if (fctype == FabricsType::connect) {
            return execute_connect(queue, sqe, data);
        }
        if (fctype == FabricsType::authentication_send ||
            fctype == FabricsType::authentication_receive) {
            return execute_authentication(queue, sqe, data);
        }
        Controller* ctrl = find_controller(queue.cntlid);
        if (ctrl == nullptr) {
            return Completion{Status::generic(GenericStatus::command_sequence_error, true)};
        }
        return fctype == FabricsType::property_get ? execute_property_get(*ctrl, sqe)
                                                   : execute_property_set(*ctrl, sqe);
    }
    Controller* ctrl = find_controller(queue.cntlid);
    if (ctrl == nullptr) {
        return Completion{Status::generic(GenericStatus::command_sequence_error, true)};
    }
    return queue.kind() == wire::QueueKind::admin ? execute_admin(*ctrl, sqe, data)
                                                  : execute_io(*ctrl, sqe, data);
}

wire::Cqe CommandCore::make_cqe(QueueState& queue, const Sqe& sqe, const Completion& done) {
    // SQHD advances as each command completes, like nvmet.
    auto& head = queue.sq_head;
    head = static_cast<std::uint16_t>((head + 1u) % (queue.sqsize + 1u));
    wire::Cqe cqe{};
    cqe.dw0 = done.dw0;
    cqe.dw1 = done.dw1;
    cqe.sq_head = queue.sq_flow_control_disabled ? std::uint16_t{0xFFFF} : head;
    cqe.sq_id = queue.qid;
    cqe.command_id = sqe.command_id;
    cqe.status = done.status.cqe_field();
    if (!done.status.ok()) {
        ++stats_.errors;
    }
    return cqe;
}

Completion CommandCore::execute_connect(QueueState& queue, const Sqe& sqe,
                                        std::span<const std::uint8_t> data) {
    const wire::ConnectCommand cmd = wire::as_connect(sqe);
    ConnectData cd{};
    std::memcpy(&cd, data.data(), std::min(data.size(), sizeof cd));
    const std::string_view subnqn = wire::field_text(cd.subnqn, sizeof cd.subnqn);
    const std::string_view hostnqn = wire::field_text(cd.hostnqn, sizeof cd.hostnqn);

    if (config_.faults.connect_status) {
        log_fault(
            "connect-status: failing the Connect of QID " + std::to_string(cmd.qid) + " from " +
            std::string(hostnqn) + " with " +
            wire::describe(*config_.faults.connect_status, wire::context_of(sqe, queue.kind())));
        return Completion{*config_.faults.connect_status};
    }
    if (cmd.recfmt != 0) {
        return Completion{Status::fabrics(FabricsStatus::connect_incompatible_format, true)};
    }
    if (cmd.qid != queue.qid) {
        return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, qid));
    }
    if (cmd.sqsize == 0) {
        return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, sqsize));
    }
    Subsystem* subsystem = find_subsystem(subnqn);

    if (cmd.qid == 0) {
        if (cmd.sqsize >= wire::kAdminQueueSize) {
            return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, sqsize));
        }
        if (cd.cntlid != wire::kDynamicControllerId) {
            return connect_invalid_parameter(true, offsetof(ConnectData, cntlid));
        }
        if (subsystem == nullptr) {
            return connect_invalid_parameter(true, offsetof(ConnectData, subnqn));
        }
        if (!subsystem->allows(hostnqn)) {
            return Completion{Status::fabrics(FabricsStatus::connect_invalid_host, true)};
        }
        const std::uint16_t cntlid = allocate_cntlid();
        if (cntlid == 0) {
            return Completion{Status::fabrics(FabricsStatus::connect_controller_busy, true)};
        }
        Controller& ctrl = controllers_[cntlid];
        ctrl.cntlid = cntlid;
        ctrl.subsystem = subsystem;
        ctrl.hostnqn = std::string(hostnqn);
        ctrl.host_id = cd.host_id;
        ctrl.local_address = queue.local_address;
        ctrl.port_index = queue.port_index;
        ctrl.kato_ms = effective_kato_ms(ctrl, cmd.kato);
        ctrl.last_keep_alive = Clock::now();
        ctrl.io_queue_live.assign(subsystem->discovery ? 1u : config_.limits.max_io_queues + 1u,
                                  false);
        ++stats_.controllers;
        std::fprintf(stderr, "nvmeof-target: controller %u created for %s on %s (KATO %u ms)\n",
                     static_cast<unsigned>(cntlid), ctrl.hostnqn.c_str(), subsystem->nqn.c_str(),
                     ctrl.kato_ms);
        queue.cntlid = cntlid;
    } else {
        if (subsystem == nullptr) {
            return connect_invalid_parameter(true, offsetof(ConnectData, subnqn));
        }
        Controller* ctrl = find_controller(cd.cntlid);
        if (ctrl == nullptr || ctrl->subsystem != subsystem || ctrl->hostnqn != hostnqn) {
            return connect_invalid_parameter(true, offsetof(ConnectData, cntlid));
        }
        const bool zero_host_id = std::all_of(cd.host_id.begin(), cd.host_id.end(),
                                              [](std::uint8_t b) { return b == 0; });
        if (!zero_host_id && cd.host_id != ctrl->host_id) {
            return connect_invalid_parameter(true, offsetof(ConnectData, host_id));
        }
        if (cmd.qid >= ctrl->io_queue_live.size()) {
            return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, qid));
        }
        if (cmd.sqsize > config_.limits.mqes) {
            return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, sqsize));
        }
        // I/O queues need an enabled controller (SPDK refuses with IPO QID).
        if (!wire::ControllerStatus{ctrl->csts}.ready()) {
            return connect_invalid_parameter(false, offsetof(wire::ConnectCommand, qid));
        }
        if (ctrl->io_queue_live[cmd.qid]) {
            return Completion{Status::generic(GenericStatus::command_sequence_error, true)};
        }
        ctrl->io_queue_live[cmd.qid] = true;
        queue.cntlid = ctrl->cntlid;
    }
    queue.connected = true;
    queue.sqsize = cmd.sqsize;
    queue.sq_head = 0;
    queue.sq_flow_control_disabled = (cmd.cattr & kConnectAttrDisableSqFlowControl) != 0;
    Completion done;
    done.dw0 = queue.cntlid;
    require_authentication(queue, *subsystem, hostnqn, done);
    return done;
}

std::uint16_t CommandCore::allocate_cntlid() {
    for (std::uint32_t tries = 0; tries < kMaxControllerId; ++tries) {
        const std::uint16_t candidate = next_cntlid_;
        next_cntlid_ =
            static_cast<std::uint16_t>(next_cntlid_ >= kMaxControllerId ? 1 : next_cntlid_ + 1);
        if (!controllers_.contains(candidate)) {
            return candidate;
        }
    }
    return 0;
}

std::uint32_t CommandCore::effective_kato_ms(const Controller& ctrl,
                                             std::uint32_t requested) const {
    if (requested == 0) {
        // Disabled for I/O controllers; nvmet and SPDK give discovery 120 s.
        return ctrl.subsystem != nullptr && ctrl.subsystem->discovery ? kDiscoveryKatoMs : 0;
    }
    const std::uint32_t unit = std::max<std::uint32_t>(config_.limits.kas, 1) * wire::kKasUnitMs;
    return (requested + unit - 1) / unit * unit;
}

void CommandCore::queue_disconnected(QueueState& queue) {
    if (!queue.connected) {
        return;
    }
    queue.connected = false;
    Controller* ctrl = find_controller(queue.cntlid);
    if (ctrl == nullptr) {
        return;
    }
    if (queue.qid == 0) {
        std::fprintf(stderr, "nvmeof-target: controller %u deleted (admin queue gone)\n",
                     static_cast<unsigned>(ctrl->cntlid));
        controllers_.erase(ctrl->cntlid);
        flush_all();
    } else if (queue.qid < ctrl->io_queue_live.size()) {
        ctrl->io_queue_live[queue.qid] = false;
    }
}

std::vector<std::uint16_t> CommandCore::expired_controllers(Clock::time_point now) {
    std::vector<std::uint16_t> expired;
    for (auto& [cntlid, ctrl] : controllers_) {
        if (ctrl.kato_ms == 0) {
            continue;
        }
        if (now - ctrl.last_keep_alive > std::chrono::milliseconds(ctrl.kato_ms)) {
            std::fprintf(stderr,
                         "nvmeof-target: controller %u: keep-alive timeout (%u ms) expired, "
                         "dropping its queues\n",
                         static_cast<unsigned>(cntlid), ctrl.kato_ms);
            ctrl.csts |= 1u << wire::ControllerStatus::kFatalShift;
            ctrl.kato_ms = 0;  // reported once
            expired.push_back(cntlid);
        }
    }
    return expired;
}

// ---- properties ------------------------------------------------------------

std::uint64_t capabilities_value(const Limits& limits, bool io_command_sets) {
    wire::Capabilities::Fields f;
    f.mqes = limits.mqes;
    f.timeout = kReadyTimeout500ms;
    f.command_sets = 1u << wire::Capabilities::kCssNvmBit;  // NVM only: no CSI lists needed
    if (io_command_sets) {
        f.command_sets |= 1u << wire::Capabilities::kCssIoCommandSetsBit;
    }
    return wire::Capabilities::make(f).raw;
}

Completion CommandCore::execute_property_get(Controller& ctrl, const Sqe& sqe) {
    const wire::PropertyGetCommand cmd = wire::as_property_get(sqe);
    const auto size = static_cast<wire::PropertySize>(cmd.attrib & wire::kPropertySizeMask);
    const auto property = static_cast<wire::Property>(cmd.offset);
    Completion done;
    std::uint64_t value = 0;
    switch (property) {
        case wire::Property::cap:
            value = capabilities_value(config_.limits, ctrl.subsystem->has_zoned_namespace());
            break;
        case wire::Property::vs:
            value = kReportedVersion.raw;
            break;
        case wire::Property::cc:
            value = ctrl.cc;
            break;
        case wire::Property::csts:
            value = ctrl.csts;
            break;
        default:
            return Completion{Status::generic(GenericStatus::invalid_field, true)};
    }
    // nvmet: CAP only as 8 bytes, the others only as 4.
    if (size != wire::property_size(property)) {
        return Completion{Status::generic(GenericStatus::invalid_field, true)};
    }
    done.dw0 = static_cast<std::uint32_t>(value);
    done.dw1 = static_cast<std::uint32_t>(value >> 32);
    return done;
}

Completion CommandCore::execute_property_set(Controller& ctrl, const Sqe& sqe) {
    const wire::PropertySetCommand cmd = wire::as_property_set(sqe);
    const auto size = static_cast<wire::PropertySize>(cmd.attrib & wire::kPropertySizeMask);
    if (static_cast<wire::Property>(cmd.offset) != wire::Property::cc ||
        size != wire::PropertySize::four_bytes) {
        return Completion{Status::generic(GenericStatus::invalid_field, true)};
    }
    update_cc(ctrl, static_cast<std::uint32_t>(cmd.value));
    return Completion{};
}

void CommandCore::update_cc(Controller& ctrl, std::uint32_t value) {
    // The transitions of nvmet_update_cc.
    const wire::ControllerConfig old_cc{ctrl.cc};
    const wire::ControllerConfig new_cc{value};
    ctrl.cc = value;
    const std::uint32_t ready = 1u << wire::ControllerStatus::kReadyShift;
    const std::uint32_t fatal = 1u << wire::ControllerStatus::kFatalShift;
    const std::uint32_t shutdown_complete =
        static_cast<std::uint32_t>(wire::ShutdownStatus::complete)
        << wire::ControllerStatus::kShstShift;
    auto clear = [&] {
        ctrl.csts &= ~ready;
        ctrl.cc = 0;
    };
    if (new_cc.enabled() && !old_cc.enabled()) {
        // CSS 110b (the I/O command sets CAP names) only where CAP names them.
        const bool command_set_ok =
            new_cc.command_set() == wire::CommandSetSelected::nvm ||
            (new_cc.command_set() == wire::CommandSetSelected::io_command_sets &&
             ctrl.subsystem->has_zoned_namespace());
        const bool valid = new_cc.iosqes() == wire::kSqEntrySizeShift &&
                           new_cc.iocqes() == wire::kCqEntrySizeShift && new_cc.mps() == 0 &&
                           new_cc.arbitration() == 0 && command_set_ok;
        if (!valid) {
            std::fprintf(stderr,
                         "nvmeof-target: controller %u: CC 0x%08x refused, setting CSTS.CFS\n",
                         static_cast<unsigned>(ctrl.cntlid), value);
            ctrl.csts = fatal;
        } else {
            ctrl.csts = ready;
        }
    }
    if (!new_cc.enabled() && old_cc.enabled()) {
        clear();
    }
    if (new_cc.shutdown() != wire::ShutdownNotification::none &&
        old_cc.shutdown() == wire::ShutdownNotification::none) {
        clear();
        ctrl.csts |= shutdown_complete;
        flush_all();
    }
    if (new_cc.shutdown() == wire::ShutdownNotification::none &&
        old_cc.shutdown() != wire::ShutdownNotification::none) {
        ctrl.csts &= ~shutdown_complete;
    }
}

}  // namespace nvmeof::target
