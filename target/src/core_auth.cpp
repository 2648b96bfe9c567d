// CommandCore: the controller side of DH-HMAC-CHAP. A Connect from a host
// with a --dhchap-key sets AUTHREQ.ATR and leaves the queue unauthenticated;
// Authentication Send/Receive then drive one auth::ControllerTransaction per
// queue, and only its success lets other commands through.
#include <cstdio>
#include <cstring>

#include "core.hpp"
#include "core_internal.hpp"
#include "nvmeof/wire/auth.hpp"

namespace nvmeof::target {
namespace {

using wire::FabricsType;
using wire::GenericStatus;

// Larger than any DH-HMAC-CHAP message (an ffdhe8192 Reply is 1168 bytes);
// Linux hosts ask for 4096.
constexpr std::uint32_t kMaxAuthMessage = 8192;

bool is_negotiate(std::span<const std::uint8_t> message) {
    try {
        return wire::peek_auth_message(message) == wire::AuthMessage::negotiate;
    } catch (const wire::AuthMessageError&) {
        return false;
    }
}

}  // namespace

void CommandCore::require_authentication(QueueState& queue, const Subsystem& subsystem,
                                         std::string_view hostnqn, Completion& done) {
    if (subsystem.discovery) {
        return;
    }
    const auto keys = config_.dhchap.hosts.find(hostnqn);
    if (keys == config_.dhchap.hosts.end()) {
        return;
    }
    queue.auth_required = true;
    queue.authenticated = false;
    queue.hostnqn = std::string(hostnqn);
    queue.auth.reset();
    done.dw0 |= 1u << wire::kAuthreqAtrBit;
}

DataPlan CommandCore::plan_authentication(QueueState& queue, const wire::Sqe& sqe,
                                          std::size_t in_capsule_bytes) {
    if (!queue.connected || find_controller(queue.cntlid) == nullptr) {
        return failed_plan(GenericStatus::command_sequence_error);
    }
    const wire::AuthCommand cmd = wire::as_auth(sqe);
    if (cmd.secp != wire::kAuthSecurityProtocol || cmd.spsp0 != wire::kAuthSpsp0 ||
        cmd.spsp1 != wire::kAuthSpsp1 || cmd.length == 0 || cmd.length > kMaxAuthMessage) {
        return failed_plan(GenericStatus::invalid_field);
    }
    if (!queue.auth_required) {
        return failed_plan(GenericStatus::command_sequence_error);  // no key for this host
    }
    DataPlan plan;
    plan.direction = static_cast<FabricsType>(cmd.fctype) == FabricsType::authentication_send
                         ? wire::DataDirection::host_to_controller
                         : wire::DataDirection::controller_to_host;
    plan.length = cmd.length;
    check_data_pointer(queue, sqe, in_capsule_bytes, plan);
    return plan;
}

Completion CommandCore::execute_authentication(QueueState& queue, const wire::Sqe& sqe,
                                               std::span<std::uint8_t> data) {
    const bool send =
        static_cast<FabricsType>(wire::as_fabrics(sqe).fctype) == FabricsType::authentication_send;
    Controller* ctrl = find_controller(queue.cntlid);
    const auto keys = config_.dhchap.hosts.find(queue.hostnqn);
    if (ctrl == nullptr || keys == config_.dhchap.hosts.end()) {
        return Completion{wire::Status::generic(GenericStatus::command_sequence_error, true)};
    }
    // Every AUTH_Negotiate starts a transaction afresh (the host may re-authenticate).
    if (!queue.auth || (send && is_negotiate(data))) {
        auth::ControllerAuthConfig setup;
        setup.host_secret = *keys->second.host_key;
        setup.controller_secret = keys->second.controller_key;
        setup.host_nqn = queue.hostnqn;
        setup.subsystem_nqn = ctrl->subsystem->nqn;
        setup.hashes = config_.dhchap.hashes;
        setup.dh_groups = config_.dhchap.dh_groups;
        queue.auth = std::make_shared<auth::ControllerTransaction>(std::move(setup));
    }
    auth::ControllerTransaction& transaction = *queue.auth;
    const bool had_failed = !transaction.failure().empty();
    Completion done;
    if (send) {
        transaction.on_send(data);
    } else {
        const wire::Bytes message = transaction.receive();
        if (message.size() > data.size()) {
            return Completion{wire::Status::generic(GenericStatus::data_sgl_length_invalid, true)};
        }
        std::memcpy(data.data(), message.data(), message.size());
        done.data_length = static_cast<std::uint32_t>(message.size());
    }
    if (!had_failed && !transaction.failure().empty()) {
        std::fprintf(stderr, "nvmeof-target: authentication of %s on qid %u failed: %s\n",
                     queue.hostnqn.c_str(), unsigned{queue.qid}, transaction.failure().c_str());
    }
    if (transaction.authenticated() && !queue.authenticated) {
        queue.authenticated = true;
        std::fprintf(stderr, "nvmeof-target: %s authenticated on qid %u of controller %u\n",
                     queue.hostnqn.c_str(), unsigned{queue.qid}, unsigned{queue.cntlid});
    }
    return done;
}

}  // namespace nvmeof::target
