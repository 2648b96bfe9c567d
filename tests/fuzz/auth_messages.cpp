// Fuzz target: the DH-HMAC-CHAP messages (Authentication Send/Receive
// payloads) on both sides, and the secrets' text form.
// Input: a selector byte, then
//   0: one message through every parser (and, where it parses, built again
//      and re-parsed: the builders must write what the parsers read);
//   1: a host's Authentication Send payloads (each a 2-byte length, then its
//      bytes) into the controller's transaction, each followed by a Receive;
//   2: the controller's Challenge and Success1 into the host's transaction;
//   3: a secret's text ("DHHC-1:...") and base64.
#include <cstdint>
#include <optional>
#include <string_view>

#include "auth/dhchap_crypto.hpp"
#include "auth/dhchap_transaction.hpp"
#include "fuzz_bytes.hpp"
#include "nvmeof/wire/auth.hpp"

namespace wire = nvmeof::wire;
namespace auth = nvmeof::auth;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

namespace {

constexpr std::string_view kHostNqn =
    "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000f022";
constexpr std::string_view kSubsystemNqn = "nqn.2026-12.io.nvmeof:fuzz";
constexpr std::size_t kMaxSends = 8;

auth::Secret fixed_secret(std::uint8_t fill) {
    auth::Secret secret;
    secret.key.assign(32, fill);
    return secret;
}

// Either side's configuration with the keys the seeds were made with (the
// two config structs share these fields).
template <typename Config>
Config config_for(bool bidirectional) {
    Config config;
    config.host_secret = fixed_secret(0x11);
    if (bidirectional) {
        config.controller_secret = fixed_secret(0x22);
    }
    config.host_nqn = kHostNqn;
    config.subsystem_nqn = kSubsystemNqn;
    return config;
}

void every_parser(std::span<const std::uint8_t> bytes, std::uint8_t hash_id,
                  std::uint8_t group_id) {
    try {
        (void)wire::peek_auth_message(bytes);
    } catch (const wire::AuthMessageError&) {
    }
    try {
        const wire::Negotiate negotiate = wire::parse_negotiate(bytes);
        // The parser drops unknown ids; the builder needs 1..30 known ones of each.
        if (!negotiate.hashes.empty() && !negotiate.dh_groups.empty() &&
            negotiate.hashes.size() <= 30 && negotiate.dh_groups.size() <= 30) {
            const wire::Negotiate again = wire::parse_negotiate(wire::build_negotiate(negotiate));
            require(again.transaction_id == negotiate.transaction_id &&
                        again.hashes == negotiate.hashes && again.dh_groups == negotiate.dh_groups,
                    "AUTH_Negotiate does not survive build and parse");
        }
    } catch (const wire::AuthMessageError&) {
    }
    try {
        const wire::Challenge challenge = wire::parse_challenge(bytes);
        require(challenge.challenge.size() == wire::hash_length(challenge.hash),
                "a challenge whose length is not its hash's");
        const wire::Challenge again = wire::parse_challenge(wire::build_challenge(challenge));
        require(again.challenge == challenge.challenge && again.dh_value == challenge.dh_value &&
                    again.seqnum == challenge.seqnum,
                "DH-HMAC-CHAP_Challenge does not survive build and parse");
    } catch (const wire::AuthMessageError&) {
    }
    const auto hash = static_cast<wire::DhchapHash>(1 + hash_id % 3);
    const wire::DhGroup group = wire::kAllDhGroups[group_id % std::size(wire::kAllDhGroups)];
    try {
        const wire::Reply reply = wire::parse_reply(bytes, hash, group);
        require(reply.response.size() == wire::hash_length(hash),
                "a response whose length is not its hash's");
        require(reply.bidirectional || reply.controller_challenge.empty(),
                "a controller challenge in a unidirectional reply");
    } catch (const wire::AuthMessageError&) {
    }
    try {
        (void)wire::parse_success1(static_cast<std::uint8_t>(wire::hash_length(hash)), bytes);
    } catch (const wire::AuthMessageError&) {
    }
    try {
        (void)wire::parse_success2(bytes);
    } catch (const wire::AuthMessageError&) {
    }
    try {
        (void)wire::parse_failure(bytes);
    } catch (const wire::AuthMessageError&) {
    }
}

void controller_side(ByteReader& in, bool bidirectional) {
    auth::ControllerTransaction transaction(config_for<auth::ControllerAuthConfig>(bidirectional));
    for (std::size_t i = 0; i < kMaxSends && !in.empty(); ++i) {
        const std::uint16_t length = in.take<std::uint16_t>();
        const std::vector<std::uint8_t> message = in.take_bytes(length);
        transaction.on_send(message);  // documented never to throw on bad input
        const wire::Bytes answer = transaction.receive();
        require(!answer.empty(), "an empty Authentication Receive payload");
        require(!transaction.authenticated() || transaction.failure().empty(),
                "authenticated and failed at once");
    }
    // Nothing but the right key's response authenticates, and the fuzzer has no key.
    require(!transaction.authenticated(),
            "the controller authenticated bytes without the host key");
}

void host_side(ByteReader& in, bool bidirectional) {
    auth::HostTransaction transaction(config_for<auth::HostAuthConfig>(bidirectional));
    (void)transaction.negotiate();
    const std::uint16_t length = in.take<std::uint16_t>();
    const std::vector<std::uint8_t> challenge = in.take_bytes(length);
    try {
        (void)transaction.reply_to(challenge);
        const std::optional<wire::Bytes> success2 = transaction.finish(in.rest());
        // A controller response without the controller key cannot match.
        require(!bidirectional, "the host accepted a controller response made without its key");
        require(!success2, "a Success2 without bidirectional authentication");
    } catch (const auth::AuthError&) {
    }
}

void secret_text(std::span<const std::uint8_t> bytes) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    try {
        const auth::Secret secret = auth::parse_secret(text);
        require(secret.key.size() == 32 || secret.key.size() == 48 || secret.key.size() == 64,
                "a parsed secret of an unexpected length");
        require(auth::parse_secret(auth::format_secret(secret)).key == secret.key,
                "a secret does not survive format and parse");
    } catch (const auth::SecretError&) {
    }
    try {
        (void)auth::base64_decode(text);
    } catch (const auth::SecretError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto selector = in.take<std::uint8_t>();
    switch (selector % 4) {
        case 0: {
            const auto hash_id = in.take<std::uint8_t>();
            const auto group_id = in.take<std::uint8_t>();
            every_parser(in.rest(), hash_id, group_id);
            break;
        }
        case 1:
            controller_side(in, (selector & 0x10) != 0);
            break;
        case 2:
            host_side(in, (selector & 0x10) != 0);
            break;
        default:
            secret_text(in.rest());
            break;
    }
    return 0;
}
