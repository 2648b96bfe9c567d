// DH-HMAC-CHAP on one queue, right after its Fabrics Connect asked for it
// (AUTHREQ.ATR): AUTH_Negotiate, Challenge, Reply, Success1 and, when the
// controller must prove its key too, Success2 — over Authentication Send and
// Receive with the connect scratch buffer.
#include <algorithm>
#include <cstring>
#include <optional>

#include "auth/dhchap_transaction.hpp"
#include "base/log.hpp"
#include "host/controller_impl.hpp"
#include "host/dhchap_secret.hpp"
#include "nvmeof/wire.hpp"
#include "nvmeof/wire/auth.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace {

constexpr std::chrono::milliseconds kFailureNoticeWait{1000};

// Connect's own check (options validated before it) stays: a file named by
// "@path" may change in between.
std::optional<auth::Secret> load_secret(const std::string& value, const char* option) {
    if (value.empty()) {
        return std::nullopt;
    }
    try {
        return detail::read_dhchap_secret(value, option);
    } catch (const InvalidArgument& e) {
        throw ConnectError(ConnectFailure::invalid_options, "options", e.what());
    }
}

}  // namespace

void ControllerImpl::load_dhchap_secrets() {
    dhchap_secret_ = load_secret(options_.dhchap_secret, "dhchap_secret");
    dhchap_ctrl_secret_ = load_secret(options_.dhchap_ctrl_secret, "dhchap_ctrl_secret");
}

void ControllerImpl::auth_send(HostQueue& queue, const wire::Bytes& message,
                               const std::string& step) {
    if (message.size() > kScratchAuthSize) {
        throw ConnectError(ConnectFailure::authentication, step,
                           "authentication message of " + std::to_string(message.size()) +
                               " bytes does not fit the buffer");
    }
    std::memcpy(scratch_.get() + kScratchAuthOffset, message.data(), message.size());
    execute_ok(queue,
               wire::authentication_send_command(
                   static_cast<std::uint32_t>(message.size()),
                   wire::keyed_data_block(scratch(kScratchAuthOffset, message.size()))),
               step + ": Authentication Send");
}

wire::Bytes ControllerImpl::auth_receive(HostQueue& queue, const std::string& step) {
    // Zeroed first: the CQE does not say how much arrived, and stale bytes
    // from the last message must not parse as part of this one.
    std::memset(scratch_.get() + kScratchAuthOffset, 0, kScratchAuthSize);
    execute_ok(queue,
               wire::authentication_receive_command(
                   kScratchAuthSize,
                   wire::keyed_data_block(scratch(kScratchAuthOffset, kScratchAuthSize))),
               step + ": Authentication Receive");
    const auto* begin = reinterpret_cast<const std::uint8_t*>(scratch_.get() + kScratchAuthOffset);
    return wire::Bytes(begin, begin + kScratchAuthSize);
}

void ControllerImpl::authenticate(HostQueue& queue, std::uint16_t qid) {
    const std::string step = "DH-HMAC-CHAP (qid " + std::to_string(qid) + ")";
    if (!dhchap_secret_) {
        throw ConnectError(ConnectFailure::authentication, step,
                           "the target requires in-band authentication (DH-HMAC-CHAP) and no "
                           "dhchap_secret is set");
    }
    auth::HostAuthConfig config;
    config.host_secret = *dhchap_secret_;
    config.controller_secret = dhchap_ctrl_secret_;
    config.host_nqn = identity_.nqn;
    config.subsystem_nqn = options_.subsystem_nqn;
    config.transaction_id = auth_transaction_id_++;
    auth::HostTransaction transaction(std::move(config));
    try {
        auth_send(queue, transaction.negotiate(), step);
        auth_send(queue, transaction.reply_to(auth_receive(queue, step)), step);
        wire::Bytes success1;
        try {
            success1 = auth_receive(queue, step);
        } catch (const ConnectError& e) {
            // Linux nvmet ends the controller on a wrong response as well as sending
            // AUTH_Failure1; when the teardown wins, the Receive times out or the queue drops.
            if (e.cause() != ConnectFailure::timeout && e.cause() != ConnectFailure::device_error) {
                throw;
            }
            throw ConnectError(ConnectFailure::authentication, step,
                               "the controller did not answer the DH-HMAC-CHAP_Reply (a target "
                               "such as Linux nvmet drops the controller when the response is "
                               "wrong: wrong dhchap_secret?): " +
                                   std::string(e.what()));
        }
        if (const auto success2 = transaction.finish(success1)) {
            auth_send(queue, *success2, step);
        }
    } catch (const auth::AuthError& e) {
        if (e.local()) {
            // Tell the controller why, best effort and briefly: Linux nvmet ends the
            // controller instead of answering, and the error below is what matters.
            const ConnectDeadline whole = deadline_;
            deadline_ = ConnectDeadline(std::min(kFailureNoticeWait, deadline_.left()));
            try {
                auth_send(queue, transaction.failure2(e.reason()), step);
            } catch (const Error&) {
            }
            deadline_ = whole;
        }
        throw ConnectError(ConnectFailure::authentication, step, e.what());
    }
    log_debug("qid %u authenticated (%s%s)", unsigned{qid}, transaction.agreed().c_str(),
              dhchap_ctrl_secret_ ? ", bidirectional" : "");
}

}  // namespace nvmeof
