// Controller bring-up and teardown (§9.1, §9.2 of the wire digest).
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "host/controller_impl.hpp"
#include "host/in_capsule.hpp"
#include "host/negotiation.hpp"
#include "nvmeof/option_rules.hpp"
#include "nvmeof/wire.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPropertyPollInterval{1};
constexpr std::chrono::milliseconds kMinReadyWait{500};
constexpr std::chrono::milliseconds kShutdownWait{5000};  // Linux shutdown_timeout

std::string qid_text(std::uint16_t qid) {
    return "qid " + std::to_string(qid);
}

}  // namespace

ControllerImpl::ControllerImpl(const Options& options) : options_(options) {}

ControllerImpl::~ControllerImpl() {
    close();
}

// The rules every front end checks too (nvmeof/option_rules.hpp), here as
// the connect's own error.
void ControllerImpl::validate_options() const {
    try {
        validate(options_);
    } catch (const InvalidOption& e) {
        throw ConnectError(ConnectFailure::invalid_options, "options", e.what());
    }
}

wire::RemoteBuffer ControllerImpl::scratch(std::size_t offset, std::size_t length) const {
    return {reinterpret_cast<std::uint64_t>(scratch_.get() + offset), length, scratch_memory_.rkey};
}

void ControllerImpl::connect(std::function<bool()> cancelled) {
    validate_options();
    load_dhchap_secrets();
    deadline_ = ConnectDeadline(options_.timeout, std::move(cancelled));
    identity_ = resolve_host_identity(options_);
    // "a,b": several paths to the subsystem; a reconnect moves to the next. A
    // path whose address does not resolve is left out of the list, as one that
    // cannot connect is skipped below, while another path resolves.
    std::optional<ConnectError> first_unresolved;
    std::vector<std::pair<std::string, std::string>> unresolved;  // entry, why
    for (const TargetPath& path : split_target(options_.target)) {
        const std::uint16_t port = path.port.value_or(options_.port);
        try {
            paths_.push_back(resolve_peer(path.host, port, options_.source));
        } catch (const ConnectError& e) {
            if (e.cause() != ConnectFailure::address_unreachable) {
                throw;  // the options or the source address: every path would fail alike
            }
            if (!first_unresolved) {
                first_unresolved = e;
            }
            const bool ipv6 = path.host.find(':') != std::string::npos;
            unresolved.emplace_back(
                (ipv6 ? "[" + path.host + "]" : path.host) + ":" + std::to_string(port), e.what());
        }
    }
    if (paths_.empty()) {
        throw *first_unresolved;
    }
    path_ = 0;
    peer_ = paths_.front();
    for (const auto& [entry, why] : unresolved) {
        log_error("controller %s: path %s skipped: %s", name().c_str(), entry.c_str(), why.c_str());
    }
    log_debug("connecting to %s as %s (host ID %s, %s)", peer_.target_text.c_str(),
              identity_.nqn.c_str(), identity_.id_text.c_str(), identity_.origin.c_str());

    transport_ =
        HostTransport::create({options_.transport, options_.header_digest, options_.data_digest});
    // The first path that resolves; connect_preferred_path() goes on from it.
    for (;;) {
        try {
            admin_ = transport_->create_queue(
                QueueConfig{0, wire::kAdminQueueSize, 0, wire::QueueKind::admin, options_.timeout,
                            options_.timeout, deadline_},
                peer_);
            break;
        } catch (const ConnectError& e) {
            if (path_ + 1 >= paths_.size() || e.cause() == ConnectFailure::invalid_options ||
                e.cause() == ConnectFailure::cancelled) {
                throw;
            }
            log_error("controller %s: path %s failed: %s; trying the next path", name().c_str(),
                      peer_.target_text.c_str(), e.what());
            peer_ = paths_[++path_];
            deadline_ = deadline_.renewed(options_.timeout);
        }
    }
    transport_->open(*admin_);
    scratch_ = std::make_unique<std::byte[]>(kScratchSize);
    scratch_memory_.address = scratch_.get();
    scratch_memory_.length = kScratchSize;
    try {
        transport_->register_memory(scratch_memory_);
    } catch (const Error& e) {
        throw ConnectError(ConnectFailure::device_error, "allocating connect resources", e.what());
    }
    // The admin queue is 32 entries (nvmet refuses more); the device must hold it.
    const LocalQueueLimits local = transport_->limits();
    const QueueSizeDecision admin_size =
        negotiate_queue_size({wire::kAdminQueueSize, wire::kAdminQueueSize, 0,
                              local.max_queue_entries, local.max_completion_entries});
    if (admin_size.size != wire::kAdminQueueSize) {
        throw ConnectError(ConnectFailure::negotiation, "admin queue",
                           "the RDMA device cannot hold a 32-entry admin queue (" +
                               std::string(admin_size.limit) + ")");
    }
    admin_->set_owner(this);
    admin_->set_failure_listener(this);
    connect_preferred_path();

    limits_.admin_queue_size = wire::kAdminQueueSize;
    limits_.source_address = admin_->local_address();
    limits_.device_name = transport_->device_name();
    limits_.target_address = peer_.target_text;
    limits_.subsystem_nqn = options_.subsystem_nqn;
    limits_.host_nqn = identity_.nqn;
    limits_.host_id = identity_.id_text;
    limits_.host_identity_origin = identity_.origin;
    if (options_.keep_alive_ms != 0) {
        keep_alive_.emplace(*admin_, std::chrono::milliseconds(options_.keep_alive_ms),
                            KeepAlive::Clock::now());
    }
    reconnect_stats_.path = peer_.target_text;
    if (reconnect_enabled()) {
        // A failure from now on holds the transfers in flight for the reconnect.
        for (auto& queue : io_) {
            queue->set_outage_policy(OutagePolicy::hold);
        }
    }
    state_ = ControllerState::live;
    deadline_.forget_cancel();
    arm_async_event();
    log_debug("controller %u live: %u I/O queues of %u entries, MDTS %llu bytes",
              unsigned{limits_.cntlid}, limits_.io_queues, unsigned{limits_.queue_size},
              static_cast<unsigned long long>(limits_.mdts_bytes));
}

void ControllerImpl::associate() {
    transport_->connect_queue(*admin_, 0, 0);
    limits_.cntlid = fabrics_connect(*admin_, 0, wire::kAdminQueueSize, wire::kDynamicControllerId);
    admin_->mark_live();
    enable();
    identify_controller();
    zone_append_limit_.reset();  // read again from this association's controller
    if (!limits_.discovery) {
        select_command_sets();
        enable_extended_lba_formats();
        create_io_queues();  // a discovery controller has none (Linux skips them too)
    }
}

Response ControllerImpl::execute(HostQueue& queue, const wire::Sqe& command,
                                 const std::string& step) {
    if (associating()) {
        deadline_.check(step);
        queue.set_request_timeout(deadline_.left());
    }
    try {
        Request request(&queue, queue.submit_command(command));
        while (!request.done()) {
            queue.poll_cq();
            if (associating()) {
                deadline_.check_cancelled(step);
            }
            if (!request.done()) {
                std::this_thread::yield();
            }
        }
        Response response = request.response();
        if (response.status.transport != TransportErrc::none) {
            raise_for_status(response.status);
        }
        return response;
    } catch (const TransportError& e) {
        if (!associating()) {
            throw;
        }
        ConnectError::Details d;
        d.sys_errno = e.sys_errno();
        if (e.code() == TransportErrc::timeout) {
            throw ConnectError(ConnectFailure::timeout, step, deadline_.ran_out(), d);
        }
        throw ConnectError(ConnectFailure::device_error, step, e.what(), d);
    }
}

Response ControllerImpl::execute_ok(HostQueue& queue, const wire::Sqe& command,
                                    const std::string& step) {
    Response response = execute(queue, command, step);
    if (!response.status.ok() && associating()) {
        ConnectError::Details d;
        d.status = response.status.nvme;
        d.result = response.cqe.dw0;
        throw ConnectError(ConnectFailure::command_failed, step, describe(response.status), d);
    }
    response.raise_for_status();
    return response;
}

std::uint64_t ControllerImpl::property_get(wire::Property property, const std::string& step) {
    return execute_ok(*admin_, wire::property_get_command(property), step).cqe.result64();
}

void ControllerImpl::property_set(wire::Property property, std::uint64_t value,
                                  const std::string& step) {
    execute_ok(*admin_, wire::property_set_command(property, value), step);
}

std::uint16_t ControllerImpl::fabrics_connect(HostQueue& queue, std::uint16_t qid,
                                              std::uint16_t size, std::uint16_t cntlid) {
    const std::string step = "Fabrics Connect (" + qid_text(qid) + ")";
    const wire::ConnectData data =
        wire::connect_data(identity_.id, options_.subsystem_nqn, identity_.nqn, cntlid);
    std::memcpy(scratch_.get() + kScratchConnectOffset, &data, sizeof data);
    // Keyed on every queue: nvmet's admin receive buffers cannot take it in-capsule.
    // KATO belongs to the controller: I/O queue Connects leave it 0 (reserved there).
    const wire::Sqe command = wire::connect_command(
        qid, size, qid == 0 ? options_.keep_alive_ms : 0,
        wire::keyed_data_block(scratch(kScratchConnectOffset, wire::kConnectDataSize)));
    const Response response = execute(queue, command, step);
    if (!response.status.ok()) {
        const wire::Status status = response.status.nvme;
        std::string message =
            wire::describe(status, {wire::kFabricsOpcode, wire::QueueKind::admin});
        if (status.is(wire::FabricsStatus::connect_invalid_parameters)) {
            message += ": invalid " + wire::connect_parameter_name(
                                          wire::parse_connect_invalid_parameter(response.cqe.dw0));
        } else if (status.is(wire::FabricsStatus::connect_invalid_host)) {
            message += ": host " + identity_.nqn + " is not allowed";
        } else if (status.is(wire::GenericStatus::keep_alive_timeout_invalid)) {
            message +=
                options_.keep_alive_ms == 0
                    ? ": the target refuses KATO 0; set a keep-alive timeout (keep_alive_ms, e.g. "
                      "5000)"
                    : ": the target refuses KATO " + std::to_string(options_.keep_alive_ms) + " ms";
        }
        ConnectError::Details d;
        d.status = status;
        d.result = response.cqe.dw0;
        throw ConnectError(ConnectFailure::connect_status, step, message, d);
    }
    const wire::ConnectResult result = wire::parse_connect_result(response.cqe.dw0);
    if (result.authentication_required) {
        if (result.secure_channel_required) {
            throw ConnectError(ConnectFailure::unsupported_controller, step,
                               "the target requires a secure channel (TLS), not implemented");
        }
        authenticate(queue, qid);
    }
    return result.cntlid;
}

void ControllerImpl::enable() {
    cap_ = wire::Capabilities{property_get(wire::Property::cap, "Property Get CAP")};
    if (cap_.min_page_size() > 4096) {
        throw ConnectError(
            ConnectFailure::unsupported_controller, "Property Get CAP",
            "minimum memory page size " + std::to_string(cap_.min_page_size()) + " is above 4096");
    }
    // I/O command sets where CAP.CSS bit 6 offers them, as Linux's host does:
    // a zoned namespace is served only then, and CC.CSS 110b serves NVM
    // namespaces as 000b does (select_command_sets() picks the combination).
    io_command_sets_ = cap_.supports_io_command_sets();
    const auto css = io_command_sets_ ? wire::CommandSetSelected::io_command_sets
                                      : wire::CommandSetSelected::nvm;
    limits_.io_command_sets = io_command_sets_;
    limits_.command_set_combination = 0;
    wire::ControllerConfig::Fields fields;
    fields.command_set = css;
    property_set(wire::Property::cc, wire::ControllerConfig::make(fields).raw, "Property Set CC");
    fields.enable = true;
    property_set(wire::Property::cc, wire::ControllerConfig::make(fields).raw,
                 "Property Set CC.EN");
    enabled_ = true;
    const auto wait = std::max(std::chrono::milliseconds(cap_.timeout_ms()), kMinReadyWait);
    const auto deadline = std::min(Clock::now() + wait, deadline_.at());
    for (;;) {
        const wire::ControllerStatus csts{
            static_cast<std::uint32_t>(property_get(wire::Property::csts, "Property Get CSTS"))};
        if (csts.fatal()) {
            throw ConnectError(ConnectFailure::controller_fatal, "waiting for CSTS.RDY",
                               "the controller reports CSTS.CFS (fatal status) after CC.EN = 1");
        }
        if (csts.ready()) {
            return;
        }
        if (Clock::now() >= deadline) {
            deadline_.check("waiting for CSTS.RDY");
            ConnectError::Details d;
            d.sys_errno = ETIMEDOUT;
            throw ConnectError(
                ConnectFailure::timeout, "waiting for CSTS.RDY",
                "CSTS.RDY stayed 0 for " + std::to_string(wait.count()) + " ms (CAP.TO)", d);
        }
        std::this_thread::sleep_for(kPropertyPollInterval);
    }
}

void ControllerImpl::identify_controller() {
    const std::string step = "Identify Controller";
    execute_ok(*admin_,
               wire::identify_command(wire::IdentifyCns::controller, 0,
                                      wire::keyed_data_block(scratch(kScratchIdentifyOffset,
                                                                     wire::kIdentifyDataSize))),
               step);
    wire::IdentifyController id{};
    std::memcpy(&id, scratch_.get() + kScratchIdentifyOffset, sizeof id);
    auto unsupported = [&](const std::string& why) {
        throw ConnectError(ConnectFailure::unsupported_controller, step, why);
    };
    if (transport_->needs_keyed_sgls() && (id.sgls & wire::kSglsKeyedDataBlock) == 0) {
        unsupported("the controller does not support keyed SGL data blocks (SGLS bit 2)");
    }
    if (id.icdoff != 0) {
        unsupported("ICDOFF " + std::to_string(id.icdoff) + " is not 0");
    }
    if (id.cntlid != limits_.cntlid) {
        unsupported("Identify CNTLID " + std::to_string(id.cntlid) +
                    " differs from the Connect CNTLID " + std::to_string(limits_.cntlid));
    }
    limits_.mdts_bytes = mdts_bytes(id.mdts, cap_.min_page_size());
    limits_.max_transfer_bytes = max_transfer_bytes(limits_.mdts_bytes);
    limits_.ioccsz = id.ioccsz;
    limits_.in_capsule_bytes =
        in_capsule_write_limit({options_.in_capsule_writes, id.ioccsz, id.sgls, id.icdoff,
                                transport_->limits().max_send_gather});
    limits_.maxcmd = id.maxcmd;
    limits_.mqes_entries = cap_.max_queue_entries();
    limits_.namespaces = id.nn;
    limits_.oncs = id.oncs;
    lpa_ = id.lpa;
    limits_.kas = id.kas;
    limits_.kas_ms = id.kas * wire::kKasUnitMs;
    limits_.keep_alive_ms = options_.keep_alive_ms;
    ana_reporting_ = (id.cmic & wire::kCmicAnaReporting) != 0;
    extended_lba_formats_ = (id.ctratt & wire::kCtrattExtendedLbaFormats) != 0;
    limits_.extended_lba_formats = extended_lba_formats_;
    limits_.discovery = id.cntrltype == wire::kControllerTypeDiscovery ||
                        options_.subsystem_nqn == wire::kDiscoveryNqn;
    limits_.model = std::string(id.model());
    limits_.serial = std::string(id.serial());
    limits_.firmware = std::string(id.firmware());
    check_keep_alive_granularity();
}

// LBAFEE through Host Behavior Support where the controller has extended LBA
// formats. A controller that refuses it is still used, as Linux's host does
// (SPDK's gives up): without LBAFEE a controller may hide those formats, and
// what Identify then reports is what the namespaces get.
void ControllerImpl::enable_extended_lba_formats() {
    limits_.extended_lba_formats_enabled = false;
    if (!extended_lba_formats_) {
        return;
    }
    wire::HostBehaviorSupport behavior{};
    behavior.lbafee = wire::kHostBehaviorEnabled;
    std::memcpy(scratch_.get() + kScratchIdentifyOffset, &behavior, sizeof behavior);
    // Keyed: nvmet's admin queue takes no in-capsule data.
    const Response response =
        execute(*admin_,
                wire::set_host_behavior_support_command(wire::keyed_data_block(
                    scratch(kScratchIdentifyOffset, wire::kHostBehaviorSupportSize))),
                "Set Features Host Behavior Support");
    if (!response.status.ok()) {
        log_debug("controller %u: Host Behavior Support (LBAFEE) refused: %s",
                  unsigned{limits_.cntlid}, describe(response.status).c_str());
        return;
    }
    limits_.extended_lba_formats_enabled = true;
}

// Options::keep_alive_ms against Identify KAS, for every caller (the engine,
// Python, the tools): a timeout finer than the controller's granularity, or
// keep-alive asked of a controller without it, is refused, naming the option.
void ControllerImpl::check_keep_alive_granularity() const {
    if (options_.keep_alive_ms == 0) {
        return;
    }
    const std::string option = "keep_alive_ms=" + std::to_string(options_.keep_alive_ms) + ": ";
    if (limits_.kas_ms == 0) {
        throw ConnectError(ConnectFailure::invalid_options, "Identify Controller",
                           option +
                               "the controller does not support keep-alive (Identify KAS "
                               "is 0); use 0");
    }
    if (options_.keep_alive_ms < limits_.kas_ms) {
        throw ConnectError(ConnectFailure::invalid_options, "Identify Controller",
                           option + "below the controller's keep-alive granularity (KAS) of " +
                               std::to_string(limits_.kas_ms) + " ms");
    }
}

void ControllerImpl::create_io_queues() {
    const Response response = execute_ok(
        *admin_, wire::set_number_of_queues_command({options_.io_queues, options_.io_queues}),
        "Set Features Number of Queues");
    std::uint32_t count = negotiate_io_queue_count(options_.io_queues,
                                                   wire::parse_number_of_queues(response.cqe.dw0));
    const LocalQueueLimits local = transport_->limits();
    QueueSizeDecision size =
        negotiate_queue_size({options_.queue_depth, limits_.mqes_entries, limits_.maxcmd,
                              local.max_queue_entries, local.max_completion_entries});
    // A reconnect: the queues exist (transfers held in them), so the controller
    // must grant at least as many, as large, as before.
    const bool again = !io_.empty();
    if (again) {
        if (count < io_.size() || size.size < limits_.queue_size) {
            throw NoLongerFits("the reconnected controller grants " + std::to_string(count) +
                               " I/O queues of " + std::to_string(size.size) + " entries (" +
                               std::string(size.limit) + "), fewer than the " +
                               std::to_string(io_.size()) + " of " +
                               std::to_string(limits_.queue_size) + " in use");
        }
        count = static_cast<std::uint32_t>(io_.size());
        size.size = limits_.queue_size;
    }
    limits_.queue_size = size.size;
    limits_.usable_slots = static_cast<std::uint16_t>(size.size - 1);
    limits_.queue_size_limit = std::string(size.limit);
    limits_.io_queues = count;
    for (std::uint32_t i = 1; i <= count; ++i) {
        const auto qid = static_cast<std::uint16_t>(i);
        if (again) {
            io_[i - 1]->reopen(peer_, deadline_, limits_.cntlid);
        } else {
            io_.push_back(transport_->create_queue(
                QueueConfig{qid, size.size, limits_.cntlid, wire::QueueKind::io, options_.timeout,
                            io_request_timeout(), deadline_},
                peer_));
        }
        HostQueue& queue = *io_[i - 1];
        transport_->check_same_device(queue, "I/O queue address resolution");
        queue.set_owner(this);
        queue.set_failure_listener(this);
        // A reconnect: in-capsule writes as Identify says now.
        transport_->connect_queue(queue, limits_.max_transfer_bytes, limits_.in_capsule_bytes);
        fabrics_connect(queue, qid, size.size, limits_.cntlid);
        queue.mark_live();
    }
    // Connect commands ran on what was left of the connect deadline; from now
    // on each request gets its configured timeout.
    admin_->set_request_timeout(options_.timeout);
    for (auto& queue : io_) {
        queue->set_request_timeout(io_request_timeout());
    }
}

std::chrono::milliseconds ControllerImpl::io_request_timeout() const {
    return options_.io_timeout.count() > 0 ? options_.io_timeout : options_.timeout;
}

void ControllerImpl::shutdown() noexcept {
    if (!enabled_ || !admin_ || admin_->failed()) {
        return;
    }
    enabled_ = false;
    // A target that stopped answering must not hold close() for the whole
    // request timeout: the shutdown commands share the shutdown wait.
    admin_->set_request_timeout(std::min(options_.timeout, kShutdownWait));
    try {
        wire::ControllerConfig::Fields fields;
        fields.enable = true;
        fields.shutdown = wire::ShutdownNotification::normal;
        property_set(wire::Property::cc, wire::ControllerConfig::make(fields).raw,
                     "Property Set CC.SHN");
        const auto deadline = Clock::now() + std::min(options_.timeout, kShutdownWait);
        while (Clock::now() < deadline) {
            const wire::ControllerStatus csts{static_cast<std::uint32_t>(
                property_get(wire::Property::csts, "Property Get CSTS"))};
            if (csts.shutdown_status() == wire::ShutdownStatus::complete) {
                return;
            }
            std::this_thread::sleep_for(kPropertyPollInterval);
        }
        log_error("controller %u: shutdown did not complete in time", unsigned{limits_.cntlid});
    } catch (const std::exception& e) {
        log_error("controller %u: shutdown failed: %s", unsigned{limits_.cntlid}, e.what());
    }
}

bool ControllerImpl::target_lost() const noexcept {
    const auto lost = [](const std::unique_ptr<HostQueue>& queue) {
        return queue && queue->state() == QueueState::failed;
    };
    return lost(admin_) || std::any_of(io_.begin(), io_.end(), lost) ||
           (keep_alive_ && !keep_alive_->failure().empty());
}

void ControllerImpl::close() noexcept {
    if (state_ == ControllerState::closed) {
        return;
    }
    state_ = ControllerState::closing;
    for (auto& queue : io_) {
        queue->set_outage_policy(OutagePolicy::fail);  // nothing is held past close
        queue->fail_held(TransportErrc::closed, ESHUTDOWN);
    }
    // Nothing waits on a target already known dead or stalled: no shutdown
    // (CC.SHN would only time out), no wait for DISCONNECTED. Nor after the
    // caller cancelled the connect: it wants out now.
    const bool healthy = !target_lost() && !deadline_.was_cancelled();
    keep_alive_.reset();  // its request's command ID belongs to the admin queue
    async_event_.reset();
    for (auto& queue : io_) {
        queue->disconnect(healthy);
    }
    if (healthy) {
        shutdown();
    }
    if (admin_) {
        admin_->disconnect(healthy);
    }
    for (auto& queue : io_) {
        queue->release();
    }
    if (admin_) {
        admin_->release();
    }
    for (auto& weak : memory_) {
        if (auto record = weak.lock()) {
            record->close();
        }
    }
    memory_.clear();
    scratch_memory_.close();
    if (transport_) {
        transport_->close();
    }
    // The queue objects (now closed: their CM ids only) stay until the controller
    // is destroyed, so Request and IoQueue handles held past close() see a closed
    // queue instead of freed memory.
    state_ = ControllerState::closed;
}

}  // namespace nvmeof
