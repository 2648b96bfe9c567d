#include "nvmeof/wire/auth.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace nvmeof::wire {
namespace {

inline constexpr std::size_t kMaxIdListLength = 30;

Sqe auth_command(FabricsType type, std::uint32_t length, const SglDescriptor& data) {
    AuthCommand cmd{};
    cmd.opcode = kFabricsOpcode;
    cmd.flags = kCommandFlagsSgl;
    cmd.fctype = static_cast<std::uint8_t>(type);
    cmd.sgl1 = data;
    cmd.spsp0 = kAuthSpsp0;
    cmd.spsp1 = kAuthSpsp1;
    cmd.secp = kAuthSecurityProtocol;
    cmd.length = length;
    return std::bit_cast<Sqe>(cmd);
}

// resize + memcpy rather than insert: GCC 12 warns (falsely) about insert
// into an empty vector.
void append_raw(Bytes& out, const void* data, std::size_t length) {
    if (length == 0) {
        return;
    }
    const std::size_t at = out.size();
    out.resize(at + length);
    std::memcpy(out.data() + at, data, length);
}

template <typename Head>
void append(Bytes& out, const Head& head) {
    append_raw(out, &head, sizeof head);
}

void append_bytes(Bytes& out, const Bytes& bytes) {
    append_raw(out, bytes.data(), bytes.size());
}

[[noreturn]] void malformed(AuthFailure reason, const std::string& what) {
    throw AuthMessageError(reason, what);
}

// Copies the fixed head out of `bytes` after checking it is there and names
// the message it should be.
template <typename Head>
Head read_head(std::span<const std::uint8_t> bytes, AuthType type, AuthMessage id) {
    const std::string name(auth_message_name(id));
    if (bytes.size() < sizeof(Head)) {
        malformed(AuthFailure::incorrect_payload,
                  name + ": " + std::to_string(bytes.size()) + " bytes, shorter than its " +
                      std::to_string(sizeof(Head)) + "-byte header");
    }
    Head head;
    std::memcpy(&head, bytes.data(), sizeof head);
    const auto* raw = reinterpret_cast<const std::uint8_t*>(&head);
    if (raw[1] != static_cast<std::uint8_t>(id)) {
        malformed(AuthFailure::incorrect_protocol_message,
                  "expected " + name + ", got AUTH-Id " + std::to_string(raw[1]));
    }
    if (raw[0] != static_cast<std::uint8_t>(type)) {
        malformed(AuthFailure::incorrect_protocol_message,
                  name + ": AUTH-Type " + std::to_string(raw[0]) + " is wrong for this message");
    }
    return head;
}

void need(std::span<const std::uint8_t> bytes, std::size_t total, std::string_view what) {
    if (bytes.size() < total) {
        malformed(AuthFailure::incorrect_payload,
                  std::string(what) + ": " + std::to_string(bytes.size()) +
                      " bytes, but its lengths add up to " + std::to_string(total));
    }
}

Bytes slice(std::span<const std::uint8_t> bytes, std::size_t offset, std::size_t length) {
    return Bytes(bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                 bytes.begin() + static_cast<std::ptrdiff_t>(offset + length));
}

}  // namespace

Sqe authentication_send_command(std::uint32_t transfer_length, const SglDescriptor& data) {
    return auth_command(FabricsType::authentication_send, transfer_length, data);
}

Sqe authentication_receive_command(std::uint32_t allocation_length, const SglDescriptor& data) {
    return auth_command(FabricsType::authentication_receive, allocation_length, data);
}

AuthCommand as_auth(const Sqe& sqe) {
    return std::bit_cast<AuthCommand>(sqe);
}

std::string_view auth_message_name(AuthMessage id) {
    switch (id) {
        case AuthMessage::negotiate:
            return "AUTH_Negotiate";
        case AuthMessage::challenge:
            return "DH-HMAC-CHAP_Challenge";
        case AuthMessage::reply:
            return "DH-HMAC-CHAP_Reply";
        case AuthMessage::success1:
            return "DH-HMAC-CHAP_Success1";
        case AuthMessage::success2:
            return "DH-HMAC-CHAP_Success2";
        case AuthMessage::failure1:
            return "AUTH_Failure1";
        case AuthMessage::failure2:
            return "AUTH_Failure2";
    }
    return "unknown authentication message";
}

bool known_hash(std::uint8_t id) {
    return id >= static_cast<std::uint8_t>(DhchapHash::sha256) &&
           id <= static_cast<std::uint8_t>(DhchapHash::sha512);
}

bool known_dh_group(std::uint8_t id) {
    return id <= static_cast<std::uint8_t>(DhGroup::ffdhe8192);
}

std::size_t hash_length(DhchapHash hash) {
    switch (hash) {
        case DhchapHash::sha256:
            return 32;
        case DhchapHash::sha384:
            return 48;
        case DhchapHash::sha512:
            return 64;
    }
    return 0;
}

std::size_t dh_value_length(DhGroup group) {
    switch (group) {
        case DhGroup::null:
            return 0;
        case DhGroup::ffdhe2048:
            return 2048 / 8;
        case DhGroup::ffdhe3072:
            return 3072 / 8;
        case DhGroup::ffdhe4096:
            return 4096 / 8;
        case DhGroup::ffdhe6144:
            return 6144 / 8;
        case DhGroup::ffdhe8192:
            return 8192 / 8;
    }
    return 0;
}

std::string_view hash_name(DhchapHash hash) {
    switch (hash) {
        case DhchapHash::sha256:
            return "sha256";
        case DhchapHash::sha384:
            return "sha384";
        case DhchapHash::sha512:
            return "sha512";
    }
    return "unknown hash";
}

std::string_view dh_group_name(DhGroup group) {
    switch (group) {
        case DhGroup::null:
            return "null";
        case DhGroup::ffdhe2048:
            return "ffdhe2048";
        case DhGroup::ffdhe3072:
            return "ffdhe3072";
        case DhGroup::ffdhe4096:
            return "ffdhe4096";
        case DhGroup::ffdhe6144:
            return "ffdhe6144";
        case DhGroup::ffdhe8192:
            return "ffdhe8192";
    }
    return "unknown group";
}

std::string auth_failure_text(std::uint8_t explanation) {
    switch (static_cast<AuthFailure>(explanation)) {
        case AuthFailure::failed:
            return "authentication failed (wrong key?)";
        case AuthFailure::not_usable:
            return "authentication protocol not usable";
        case AuthFailure::concat_mismatch:
            return "secure channel concatenation mismatch";
        case AuthFailure::hash_unusable:
            return "hash function not usable";
        case AuthFailure::dhgroup_unusable:
            return "DH group not usable";
        case AuthFailure::incorrect_payload:
            return "incorrect payload";
        case AuthFailure::incorrect_protocol_message:
            return "incorrect protocol message";
    }
    return "reason code explanation 0x" + std::to_string(explanation);
}

Bytes build_negotiate(const Negotiate& message) {
    if (message.hashes.empty() || message.hashes.size() > kMaxIdListLength ||
        message.dh_groups.empty() || message.dh_groups.size() > kMaxIdListLength) {
        throw std::invalid_argument("AUTH_Negotiate needs 1..30 hashes and 1..30 DH groups");
    }
    AuthNegotiateHead head{};
    head.auth_type = static_cast<std::uint8_t>(AuthType::common);
    head.auth_id = static_cast<std::uint8_t>(AuthMessage::negotiate);
    head.transaction_id = message.transaction_id;
    head.sc_c = message.sc_c;
    head.napd = 1;
    AuthProtocolDescriptor descriptor{};
    descriptor.auth_id = kDhchapAuthId;
    descriptor.halen = static_cast<std::uint8_t>(message.hashes.size());
    descriptor.dhlen = static_cast<std::uint8_t>(message.dh_groups.size());
    std::transform(message.hashes.begin(), message.hashes.end(), descriptor.hash_ids,
                   [](DhchapHash h) { return static_cast<std::uint8_t>(h); });
    std::transform(message.dh_groups.begin(), message.dh_groups.end(), descriptor.dh_group_ids,
                   [](DhGroup g) { return static_cast<std::uint8_t>(g); });
    Bytes out;
    append(out, head);
    append(out, descriptor);
    return out;
}

Negotiate parse_negotiate(std::span<const std::uint8_t> bytes) {
    const auto head = read_head<AuthNegotiateHead>(bytes, AuthType::common, AuthMessage::negotiate);
    if (head.napd == 0) {
        malformed(AuthFailure::incorrect_payload,
                  "AUTH_Negotiate: no protocol descriptor (NAPD 0)");
    }
    need(bytes, sizeof head + head.napd * sizeof(AuthProtocolDescriptor), "AUTH_Negotiate");
    Negotiate out;
    out.transaction_id = head.transaction_id;
    out.sc_c = head.sc_c;
    for (unsigned i = 0; i < head.napd; ++i) {
        AuthProtocolDescriptor d;
        std::memcpy(&d, bytes.data() + sizeof head + i * sizeof d, sizeof d);
        if (d.auth_id != kDhchapAuthId) {
            continue;  // another protocol: not ours to read
        }
        if (d.halen > kMaxIdListLength || d.dhlen > kMaxIdListLength) {
            malformed(AuthFailure::incorrect_payload, "AUTH_Negotiate: HALEN " +
                                                          std::to_string(d.halen) + " or DHLEN " +
                                                          std::to_string(d.dhlen) + " is above 30");
        }
        for (unsigned h = 0; h < d.halen; ++h) {
            if (known_hash(d.hash_ids[h])) {
                out.hashes.push_back(static_cast<DhchapHash>(d.hash_ids[h]));
            }
        }
        for (unsigned g = 0; g < d.dhlen; ++g) {
            if (known_dh_group(d.dh_group_ids[g])) {
                out.dh_groups.push_back(static_cast<DhGroup>(d.dh_group_ids[g]));
            }
        }
        return out;
    }
    malformed(AuthFailure::not_usable, "AUTH_Negotiate: no DH-HMAC-CHAP protocol descriptor");
}

Bytes build_challenge(const Challenge& message) {
    DhchapChallengeHead head{};
    head.auth_type = static_cast<std::uint8_t>(AuthType::dhchap);
    head.auth_id = static_cast<std::uint8_t>(AuthMessage::challenge);
    head.transaction_id = message.transaction_id;
    head.hl = static_cast<std::uint8_t>(message.challenge.size());
    head.hash_id = static_cast<std::uint8_t>(message.hash);
    head.dh_group_id = static_cast<std::uint8_t>(message.dh_group);
    head.dhvlen = static_cast<std::uint16_t>(message.dh_value.size());
    head.seqnum = message.seqnum;
    Bytes out;
    append(out, head);
    append_bytes(out, message.challenge);
    append_bytes(out, message.dh_value);
    return out;
}

Challenge parse_challenge(std::span<const std::uint8_t> bytes) {
    const auto head =
        read_head<DhchapChallengeHead>(bytes, AuthType::dhchap, AuthMessage::challenge);
    if (!known_hash(head.hash_id)) {
        malformed(AuthFailure::hash_unusable,
                  "DH-HMAC-CHAP_Challenge: unknown hash id " + std::to_string(head.hash_id));
    }
    if (!known_dh_group(head.dh_group_id)) {
        malformed(AuthFailure::dhgroup_unusable, "DH-HMAC-CHAP_Challenge: unknown DH group id " +
                                                     std::to_string(head.dh_group_id));
    }
    Challenge out;
    out.transaction_id = head.transaction_id;
    out.hash = static_cast<DhchapHash>(head.hash_id);
    out.dh_group = static_cast<DhGroup>(head.dh_group_id);
    out.seqnum = head.seqnum;
    if (head.hl != hash_length(out.hash)) {
        malformed(AuthFailure::incorrect_payload,
                  "DH-HMAC-CHAP_Challenge: HL " + std::to_string(head.hl) + " is not the " +
                      std::string(hash_name(out.hash)) + " length " +
                      std::to_string(hash_length(out.hash)));
    }
    if (head.dhvlen != dh_value_length(out.dh_group)) {
        malformed(AuthFailure::incorrect_payload,
                  "DH-HMAC-CHAP_Challenge: DHVLEN " + std::to_string(head.dhvlen) +
                      " does not fit group " + std::string(dh_group_name(out.dh_group)));
    }
    need(bytes, sizeof head + head.hl + head.dhvlen, "DH-HMAC-CHAP_Challenge");
    out.challenge = slice(bytes, sizeof head, head.hl);
    out.dh_value = slice(bytes, sizeof head + head.hl, head.dhvlen);
    return out;
}

Bytes build_reply(const Reply& message) {
    DhchapReplyHead head{};
    head.auth_type = static_cast<std::uint8_t>(AuthType::dhchap);
    head.auth_id = static_cast<std::uint8_t>(AuthMessage::reply);
    head.transaction_id = message.transaction_id;
    head.hl = static_cast<std::uint8_t>(message.response.size());
    head.cvalid = message.bidirectional ? 1 : 0;
    head.dhvlen = static_cast<std::uint16_t>(message.dh_value.size());
    head.seqnum = message.bidirectional ? message.seqnum : 0;
    Bytes out;
    append(out, head);
    append_bytes(out, message.response);
    // The controller-challenge slot is always HL bytes, zero when unused.
    Bytes challenge = message.controller_challenge;
    challenge.resize(message.response.size(), 0);
    if (!message.bidirectional) {
        std::fill(challenge.begin(), challenge.end(), 0);
    }
    append_bytes(out, challenge);
    append_bytes(out, message.dh_value);
    return out;
}

Reply parse_reply(std::span<const std::uint8_t> bytes, DhchapHash hash, DhGroup dh_group) {
    const auto head = read_head<DhchapReplyHead>(bytes, AuthType::dhchap, AuthMessage::reply);
    if (head.hl != hash_length(hash)) {
        malformed(AuthFailure::incorrect_payload, "DH-HMAC-CHAP_Reply: HL " +
                                                      std::to_string(head.hl) + " is not the " +
                                                      std::string(hash_name(hash)) + " length " +
                                                      std::to_string(hash_length(hash)));
    }
    if (head.dhvlen != dh_value_length(dh_group)) {
        malformed(AuthFailure::incorrect_payload,
                  "DH-HMAC-CHAP_Reply: DHVLEN " + std::to_string(head.dhvlen) +
                      " does not fit group " + std::string(dh_group_name(dh_group)));
    }
    need(bytes, sizeof head + 2u * head.hl + head.dhvlen, "DH-HMAC-CHAP_Reply");
    Reply out;
    out.transaction_id = head.transaction_id;
    out.response = slice(bytes, sizeof head, head.hl);
    out.bidirectional = (head.cvalid & 1) != 0;
    out.seqnum = head.seqnum;
    if (out.bidirectional) {
        out.controller_challenge = slice(bytes, sizeof head + head.hl, head.hl);
    }
    out.dh_value = slice(bytes, sizeof head + 2u * head.hl, head.dhvlen);
    return out;
}

Bytes build_success1(const Success1& message, std::uint8_t hash_len) {
    DhchapSuccess1Head head{};
    head.auth_type = static_cast<std::uint8_t>(AuthType::dhchap);
    head.auth_id = static_cast<std::uint8_t>(AuthMessage::success1);
    head.transaction_id = message.transaction_id;
    head.hl = hash_len;
    head.rvalid = message.controller_response.empty() ? 0 : 1;
    Bytes out;
    append(out, head);
    Bytes response = message.controller_response;
    response.resize(hash_len, 0);
    append_bytes(out, response);
    return out;
}

Success1 parse_success1(std::uint8_t expected_hl, std::span<const std::uint8_t> bytes) {
    const auto head = read_head<DhchapSuccess1Head>(bytes, AuthType::dhchap, AuthMessage::success1);
    Success1 out;
    out.transaction_id = head.transaction_id;
    if ((head.rvalid & 1) == 0) {
        return out;
    }
    if (head.hl != expected_hl) {
        malformed(AuthFailure::incorrect_payload, "DH-HMAC-CHAP_Success1: HL " +
                                                      std::to_string(head.hl) + ", expected " +
                                                      std::to_string(expected_hl));
    }
    need(bytes, sizeof head + head.hl, "DH-HMAC-CHAP_Success1");
    out.controller_response = slice(bytes, sizeof head, head.hl);
    return out;
}

Bytes build_success2(std::uint16_t transaction_id) {
    DhchapSuccess2 message{};
    message.auth_type = static_cast<std::uint8_t>(AuthType::dhchap);
    message.auth_id = static_cast<std::uint8_t>(AuthMessage::success2);
    message.transaction_id = transaction_id;
    Bytes out;
    append(out, message);
    return out;
}

std::uint16_t parse_success2(std::span<const std::uint8_t> bytes) {
    return read_head<DhchapSuccess2>(bytes, AuthType::dhchap, AuthMessage::success2).transaction_id;
}

Bytes build_failure(AuthMessage which, std::uint16_t transaction_id, AuthFailure explanation) {
    AuthFailureMessage message{};
    message.auth_type = static_cast<std::uint8_t>(AuthType::common);
    message.auth_id = static_cast<std::uint8_t>(which);
    message.transaction_id = transaction_id;
    message.reason = kAuthFailureReason;
    message.explanation = static_cast<std::uint8_t>(explanation);
    Bytes out;
    append(out, message);
    return out;
}

AuthMessage peek_auth_message(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < 2) {
        malformed(AuthFailure::incorrect_payload,
                  "authentication message of " + std::to_string(bytes.size()) + " bytes");
    }
    const std::uint8_t id = bytes[1];
    const bool common = id == static_cast<std::uint8_t>(AuthMessage::negotiate) ||
                        id == static_cast<std::uint8_t>(AuthMessage::failure1) ||
                        id == static_cast<std::uint8_t>(AuthMessage::failure2);
    const bool dhchap = id >= static_cast<std::uint8_t>(AuthMessage::challenge) &&
                        id <= static_cast<std::uint8_t>(AuthMessage::success2);
    const auto type = static_cast<std::uint8_t>(common ? AuthType::common : AuthType::dhchap);
    if ((!common && !dhchap) || bytes[0] != type) {
        malformed(AuthFailure::incorrect_protocol_message,
                  "unknown authentication message (AUTH-Type " + std::to_string(bytes[0]) +
                      ", AUTH-Id " + std::to_string(id) + ")");
    }
    return static_cast<AuthMessage>(id);
}

Failure parse_failure(std::span<const std::uint8_t> bytes) {
    const AuthMessage which = peek_auth_message(bytes);
    if (which != AuthMessage::failure1 && which != AuthMessage::failure2) {
        malformed(AuthFailure::incorrect_protocol_message,
                  "expected AUTH_Failure, got " + std::string(auth_message_name(which)));
    }
    const auto message = read_head<AuthFailureMessage>(bytes, AuthType::common, which);
    return {which, message.transaction_id, message.reason, message.explanation};
}

}  // namespace nvmeof::wire
