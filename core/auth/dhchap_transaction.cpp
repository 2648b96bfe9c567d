#include "auth/dhchap_transaction.hpp"

#include <algorithm>
#include <cstdio>

namespace nvmeof::auth {
namespace {

using wire::AuthFailure;
using wire::AuthMessage;

std::string agreed_text(DhchapHash hash, DhGroup group) {
    return std::string(wire::hash_name(hash)) + "/" + std::string(wire::dh_group_name(group));
}

template <typename Parse>
auto parse_or_fail(Parse&& parse) {
    try {
        return parse();
    } catch (const wire::AuthMessageError& e) {
        throw AuthError(true, e.reason(), e.what());
    }
}

// A peer's Failure message as an AuthError naming its reason. A message that
// only looks like one (its AUTH-Id says Failure, the rest does not parse) is
// an AuthError too: the callers promise nothing else escapes.
[[noreturn]] void peer_failed(ByteView message, std::string_view who) {
    const wire::Failure failure = parse_or_fail([&] { return wire::parse_failure(message); });
    char codes[48];
    std::snprintf(codes, sizeof codes, " (reason code 0x%02x, explanation 0x%02x)",
                  unsigned{failure.reason}, unsigned{failure.explanation});
    throw AuthError(false, static_cast<AuthFailure>(failure.explanation),
                    std::string(who) + " refused authentication: " +
                        wire::auth_failure_text(failure.explanation) + codes);
}

bool is_failure(ByteView message) {
    return message.size() >= 2 && (message[1] == static_cast<std::uint8_t>(AuthMessage::failure1) ||
                                   message[1] == static_cast<std::uint8_t>(AuthMessage::failure2));
}

}  // namespace

HostTransaction::HostTransaction(HostAuthConfig config) : config_(std::move(config)) {}

Bytes HostTransaction::negotiate() const {
    wire::Negotiate message;
    message.transaction_id = config_.transaction_id;
    message.hashes = config_.hashes;
    message.dh_groups = config_.dh_groups;
    return wire::build_negotiate(message);
}

Bytes HostTransaction::reply_to(ByteView challenge_message) {
    if (is_failure(challenge_message)) {
        peer_failed(challenge_message, "the controller");
    }
    const wire::Challenge challenge =
        parse_or_fail([&] { return wire::parse_challenge(challenge_message); });
    if (challenge.transaction_id != config_.transaction_id) {
        throw AuthError(true, AuthFailure::incorrect_payload,
                        "DH-HMAC-CHAP_Challenge: transaction id " +
                            std::to_string(challenge.transaction_id) + ", expected " +
                            std::to_string(config_.transaction_id));
    }
    if (std::find(config_.hashes.begin(), config_.hashes.end(), challenge.hash) ==
        config_.hashes.end()) {
        throw AuthError(true, AuthFailure::hash_unusable,
                        "the controller chose hash " +
                            std::string(wire::hash_name(challenge.hash)) +
                            ", which this host did not offer");
    }
    if (std::find(config_.dh_groups.begin(), config_.dh_groups.end(), challenge.dh_group) ==
        config_.dh_groups.end()) {
        throw AuthError(true, AuthFailure::dhgroup_unusable,
                        "the controller chose DH group " +
                            std::string(wire::dh_group_name(challenge.dh_group)) +
                            ", which this host did not offer");
    }
    hash_ = challenge.hash;
    dh_group_ = challenge.dh_group;
    wire::Reply reply;
    reply.transaction_id = config_.transaction_id;
    if (dh_group_ != DhGroup::null) {
        const DhKey key = DhKey::generate(dh_group_);
        try {
            session_secret_ = key.shared_secret(challenge.dh_value);
        } catch (const SecretError& e) {
            throw AuthError(true, AuthFailure::incorrect_payload,
                            std::string("DH-HMAC-CHAP_Challenge: ") + e.what());
        }
        reply.dh_value = key.public_value();
    }
    const Bytes host_key = transform_key(config_.host_secret, config_.host_nqn);
    const Bytes c1 = augmented_challenge(hash_, challenge.challenge, session_secret_);
    reply.response = host_response({hash_, host_key, c1, challenge.seqnum, config_.transaction_id,
                                    0, config_.host_nqn, config_.subsystem_nqn});
    if (config_.controller_secret) {
        reply.bidirectional = true;
        controller_challenge_ = random_bytes(wire::hash_length(hash_));
        s2_ = random_seqnum();
        reply.controller_challenge = controller_challenge_;
        reply.seqnum = s2_;
    }
    return wire::build_reply(reply);
}

std::optional<Bytes> HostTransaction::finish(ByteView success1_message) {
    if (is_failure(success1_message)) {
        peer_failed(success1_message, "the controller");
    }
    const auto hl = static_cast<std::uint8_t>(wire::hash_length(hash_));
    const wire::Success1 success =
        parse_or_fail([&] { return wire::parse_success1(hl, success1_message); });
    if (success.transaction_id != config_.transaction_id) {
        throw AuthError(true, AuthFailure::incorrect_payload,
                        "DH-HMAC-CHAP_Success1: transaction id " +
                            std::to_string(success.transaction_id) + ", expected " +
                            std::to_string(config_.transaction_id));
    }
    if (!config_.controller_secret) {
        return std::nullopt;
    }
    if (success.controller_response.empty()) {
        throw AuthError(true, AuthFailure::failed,
                        "the controller sent no response to the host's challenge "
                        "(bidirectional authentication was asked for)");
    }
    const Bytes controller_key = transform_key(*config_.controller_secret, config_.subsystem_nqn);
    const Bytes c2 = augmented_challenge(hash_, controller_challenge_, session_secret_);
    const Bytes expected =
        controller_response({hash_, controller_key, c2, s2_, config_.transaction_id, 0,
                             config_.host_nqn, config_.subsystem_nqn});
    if (!equal_secret(expected, success.controller_response)) {
        throw AuthError(true, AuthFailure::failed,
                        "the controller's response does not match dhchap_ctrl_secret "
                        "(wrong controller key?)");
    }
    return wire::build_success2(config_.transaction_id);
}

Bytes HostTransaction::failure2(AuthFailure reason) const {
    return wire::build_failure(AuthMessage::failure2, config_.transaction_id, reason);
}

std::string HostTransaction::agreed() const {
    return agreed_text(hash_, dh_group_);
}

ControllerTransaction::ControllerTransaction(ControllerAuthConfig config)
    : config_(std::move(config)) {}

void ControllerTransaction::fail(AuthFailure reason, const std::string& why) {
    if (state_ == State::failed) {
        return;
    }
    state_ = State::failed;
    failure_reason_ = reason;
    failure_pending_ = true;
    failure_ = why;
}

void ControllerTransaction::on_send(ByteView message) {
    try {
        if (is_failure(message)) {
            const wire::Failure failure = wire::parse_failure(message);
            fail(
                static_cast<AuthFailure>(failure.explanation),
                "the host aborted authentication: " + wire::auth_failure_text(failure.explanation));
            failure_pending_ = false;  // the host already knows
            return;
        }
        switch (state_) {
            case State::negotiate:
                on_negotiate(message);
                return;
            case State::reply:
                on_reply(message);
                return;
            case State::success2: {
                const std::uint16_t tid = wire::parse_success2(message);
                if (tid != transaction_id_) {
                    fail(AuthFailure::incorrect_payload,
                         "DH-HMAC-CHAP_Success2: wrong transaction id");
                    return;
                }
                state_ = State::done;
                return;
            }
            default:
                fail(AuthFailure::incorrect_protocol_message,
                     "unexpected Authentication Send in this step of the transaction");
                return;
        }
    } catch (const wire::AuthMessageError& e) {
        fail(e.reason(), e.what());
    } catch (const SecretError& e) {
        fail(AuthFailure::incorrect_payload, e.what());
    }
}

void ControllerTransaction::on_negotiate(ByteView message) {
    const wire::Negotiate negotiate = wire::parse_negotiate(message);
    transaction_id_ = negotiate.transaction_id;
    if (negotiate.sc_c != 0) {
        fail(AuthFailure::concat_mismatch, "the host asked for a secure channel (SC_C " +
                                               std::to_string(negotiate.sc_c) + "), not supported");
        return;
    }
    auto pick = [](const auto& preferred, const auto& offered) {
        for (const auto& choice : preferred) {
            if (std::find(offered.begin(), offered.end(), choice) != offered.end()) {
                return std::optional(choice);
            }
        }
        return std::optional<std::decay_t<decltype(preferred.front())>>();
    };
    const auto hash = pick(config_.hashes, negotiate.hashes);
    if (!hash) {
        fail(AuthFailure::hash_unusable, "the host offers none of this controller's hashes");
        return;
    }
    const auto group = pick(config_.dh_groups, negotiate.dh_groups);
    if (!group) {
        fail(AuthFailure::dhgroup_unusable, "the host offers none of this controller's DH groups");
        return;
    }
    hash_ = *hash;
    dh_group_ = *group;
    challenge_ = random_bytes(wire::hash_length(hash_));
    seqnum_ = random_seqnum();
    if (dh_group_ != DhGroup::null) {
        dh_key_ = DhKey::generate(dh_group_);
    }
    state_ = State::challenge;
}

void ControllerTransaction::on_reply(ByteView message) {
    const wire::Reply reply = wire::parse_reply(message, hash_, dh_group_);
    if (reply.transaction_id != transaction_id_) {
        fail(AuthFailure::incorrect_payload, "DH-HMAC-CHAP_Reply: wrong transaction id");
        return;
    }
    Bytes session_secret;
    if (dh_key_) {
        session_secret = dh_key_->shared_secret(reply.dh_value);
    }
    const Bytes host_key = transform_key(config_.host_secret, config_.host_nqn);
    const Bytes c1 = augmented_challenge(hash_, challenge_, session_secret);
    const Bytes expected = host_response({hash_, host_key, c1, seqnum_, transaction_id_, 0,
                                          config_.host_nqn, config_.subsystem_nqn});
    if (!equal_secret(expected, reply.response)) {
        fail(AuthFailure::failed, "the host's response does not match its key (wrong key?)");
        return;
    }
    if (reply.bidirectional) {
        if (!config_.controller_secret) {
            fail(AuthFailure::failed,
                 "the host asked for bidirectional authentication but no controller key is set");
            return;
        }
        const Bytes controller_key =
            transform_key(*config_.controller_secret, config_.subsystem_nqn);
        const Bytes c2 = augmented_challenge(hash_, reply.controller_challenge, session_secret);
        controller_response_ =
            controller_response({hash_, controller_key, c2, reply.seqnum, transaction_id_, 0,
                                 config_.host_nqn, config_.subsystem_nqn});
    }
    state_ = State::success1;
}

Bytes ControllerTransaction::receive() {
    switch (state_) {
        case State::challenge: {
            wire::Challenge challenge;
            challenge.transaction_id = transaction_id_;
            challenge.hash = hash_;
            challenge.dh_group = dh_group_;
            challenge.seqnum = seqnum_;
            challenge.challenge = challenge_;
            if (dh_key_) {
                challenge.dh_value = dh_key_->public_value();
            }
            state_ = State::reply;
            return wire::build_challenge(challenge);
        }
        case State::success1: {
            wire::Success1 success;
            success.transaction_id = transaction_id_;
            success.controller_response = controller_response_;
            state_ = controller_response_.empty() ? State::done : State::success2;
            return wire::build_success1(success,
                                        static_cast<std::uint8_t>(wire::hash_length(hash_)));
        }
        case State::failed:
            failure_pending_ = false;
            return wire::build_failure(AuthMessage::failure1, transaction_id_, failure_reason_);
        default:
            fail(AuthFailure::incorrect_protocol_message,
                 "unexpected Authentication Receive in this step of the transaction");
            failure_pending_ = false;
            return wire::build_failure(AuthMessage::failure1, transaction_id_, failure_reason_);
    }
}

}  // namespace nvmeof::auth
