// DH-HMAC-CHAP messages and transactions: the wire builders and parsers, and
// the host and controller state machines run against each other.
#include <gtest/gtest.h>

#include <tuple>

#include "auth/dhchap_transaction.hpp"

namespace {

using namespace nvmeof;
using namespace nvmeof::auth;
using wire::AuthFailure;
using wire::AuthMessage;

constexpr const char* kHostNqn =
    "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
constexpr const char* kSubNqn = "nqn.2026-12.io.nvmeof:auth";

Secret make_secret(std::uint8_t transform, std::uint8_t fill, std::size_t length = 32) {
    return Secret{transform, Bytes(length, fill)};
}

TEST(AuthWire, AuthSendReceiveCommandLayout) {
    wire::SglDescriptor sgl{};
    const auto send = wire::as_auth(wire::authentication_send_command(100, sgl));
    EXPECT_EQ(send.opcode, 0x7F);
    EXPECT_EQ(send.fctype, 0x05);
    EXPECT_EQ(send.secp, 0xE9);
    EXPECT_EQ(send.spsp0, 0x01);
    EXPECT_EQ(send.spsp1, 0x01);
    EXPECT_EQ(send.length, 100u);
    EXPECT_EQ(wire::as_auth(wire::authentication_receive_command(4096, sgl)).fctype, 0x06);
}

TEST(AuthWire, NegotiateBytes) {
    wire::Negotiate n;
    n.transaction_id = 0x1234;
    n.hashes = {wire::DhchapHash::sha256, wire::DhchapHash::sha512};
    n.dh_groups = {wire::DhGroup::null, wire::DhGroup::ffdhe4096};
    const Bytes b = wire::build_negotiate(n);
    ASSERT_EQ(b.size(), 8u + 64u);
    EXPECT_EQ(b[0], 0x00);  // common messages
    EXPECT_EQ(b[1], 0x00);  // negotiate
    EXPECT_EQ(b[4], 0x34);
    EXPECT_EQ(b[5], 0x12);
    EXPECT_EQ(b[7], 1);     // NAPD
    EXPECT_EQ(b[8], 0x01);  // DH-HMAC-CHAP
    EXPECT_EQ(b[10], 2);    // HALEN
    EXPECT_EQ(b[11], 2);    // DHLEN
    EXPECT_EQ(b[12], 0x01);
    EXPECT_EQ(b[13], 0x03);
    EXPECT_EQ(b[8 + 34], 0x00);
    EXPECT_EQ(b[8 + 35], 0x03);
    const wire::Negotiate back = wire::parse_negotiate(b);
    EXPECT_EQ(back.transaction_id, 0x1234);
    EXPECT_EQ(back.hashes, n.hashes);
    EXPECT_EQ(back.dh_groups, n.dh_groups);
}

TEST(AuthWire, ChallengeRoundTripAndChecks) {
    wire::Challenge c;
    c.transaction_id = 7;
    c.hash = wire::DhchapHash::sha384;
    c.dh_group = wire::DhGroup::ffdhe2048;
    c.seqnum = 0xA1B2C3D4;
    c.challenge = Bytes(48, 0x5A);
    c.dh_value = Bytes(256, 0x11);
    const Bytes b = wire::build_challenge(c);
    ASSERT_EQ(b.size(), 16u + 48u + 256u);
    EXPECT_EQ(b[1], 0x01);
    EXPECT_EQ(b[6], 48);
    EXPECT_EQ(b[8], 0x02);
    EXPECT_EQ(b[9], 0x01);
    EXPECT_EQ(b[10], 0x00);  // DHVLEN 256, little-endian
    EXPECT_EQ(b[11], 0x01);
    EXPECT_EQ(b[12], 0xD4);
    const wire::Challenge back = wire::parse_challenge(b);
    EXPECT_EQ(back.seqnum, c.seqnum);
    EXPECT_EQ(back.challenge, c.challenge);
    EXPECT_EQ(back.dh_value, c.dh_value);

    Bytes truncated(b.begin(), b.end() - 1);
    EXPECT_THROW(wire::parse_challenge(truncated), wire::AuthMessageError);
    Bytes bad_hash = b;
    bad_hash[8] = 9;
    try {
        wire::parse_challenge(bad_hash);
        FAIL() << "unknown hash accepted";
    } catch (const wire::AuthMessageError& e) {
        EXPECT_EQ(e.reason(), AuthFailure::hash_unusable);
    }
    Bytes bad_hl = b;
    bad_hl[6] = 32;
    EXPECT_THROW(wire::parse_challenge(bad_hl), wire::AuthMessageError);
    Bytes bad_type = b;
    bad_type[0] = 0;
    EXPECT_THROW(wire::parse_challenge(bad_type), wire::AuthMessageError);
    EXPECT_THROW(wire::parse_challenge(Bytes{}), wire::AuthMessageError);
}

TEST(AuthWire, ReplySuccessFailure) {
    wire::Reply r;
    r.transaction_id = 3;
    r.response = Bytes(32, 0xAA);
    r.bidirectional = true;
    r.seqnum = 99;
    r.controller_challenge = Bytes(32, 0xBB);
    const Bytes b = wire::build_reply(r);
    ASSERT_EQ(b.size(), 16u + 64u);
    EXPECT_EQ(b[8], 1);  // CVALID
    const wire::Reply back = wire::parse_reply(b, wire::DhchapHash::sha256, wire::DhGroup::null);
    EXPECT_TRUE(back.bidirectional);
    EXPECT_EQ(back.seqnum, 99u);
    EXPECT_EQ(back.controller_challenge, r.controller_challenge);
    EXPECT_THROW(wire::parse_reply(b, wire::DhchapHash::sha512, wire::DhGroup::null),
                 wire::AuthMessageError);
    EXPECT_THROW(wire::parse_reply(b, wire::DhchapHash::sha256, wire::DhGroup::ffdhe2048),
                 wire::AuthMessageError);

    const Bytes s1 = wire::build_success1({3, Bytes(32, 0xCC)}, 32);
    ASSERT_EQ(s1.size(), 48u);
    EXPECT_EQ(wire::parse_success1(32, s1).controller_response, Bytes(32, 0xCC));
    EXPECT_TRUE(
        wire::parse_success1(32, wire::build_success1({3, {}}, 32)).controller_response.empty());
    EXPECT_EQ(wire::parse_success2(wire::build_success2(0x55)), 0x55);

    const Bytes f = wire::build_failure(AuthMessage::failure1, 3, AuthFailure::failed);
    ASSERT_EQ(f.size(), 8u);
    const wire::Failure parsed = wire::parse_failure(f);
    EXPECT_EQ(parsed.which, AuthMessage::failure1);
    EXPECT_EQ(parsed.reason, 1);
    EXPECT_EQ(parsed.explanation, 1);
    EXPECT_EQ(wire::peek_auth_message(f), AuthMessage::failure1);
    EXPECT_THROW(wire::peek_auth_message(Bytes{0x01, 0x77}), wire::AuthMessageError);
}

TEST(AuthSecret, FormatParseAndErrors) {
    const Secret s = make_secret(2, 0x42, 48);
    const std::string text = format_secret(s);
    EXPECT_TRUE(text.starts_with("DHHC-1:02:"));
    const Secret back = parse_secret(text);
    EXPECT_EQ(back.transform, 2);
    EXPECT_EQ(back.key, s.key);
    EXPECT_THROW(parse_secret("DHHC-1:01:abc"), SecretError);
    EXPECT_THROW(parse_secret(""), SecretError);
    std::string flipped = text;
    flipped[12] = flipped[12] == 'A' ? 'B' : 'A';
    try {
        parse_secret(flipped);
        FAIL() << "corrupted secret accepted";
    } catch (const SecretError& e) {
        EXPECT_NE(std::string(e.what()).find("CRC"), std::string::npos) << e.what();
    }
}

struct Outcome {
    bool host_ok = false;
    bool controller_ok = false;
    std::string host_error;
    AuthFailure host_reason = AuthFailure::failed;
    bool host_error_local = false;
    std::string controller_failure;
};

// Runs one transaction the way the host and the target drive it.
Outcome run(HostAuthConfig host_config, ControllerAuthConfig ctrl_config) {
    HostTransaction host(std::move(host_config));
    ControllerTransaction ctrl(std::move(ctrl_config));
    Outcome out;
    try {
        ctrl.on_send(host.negotiate());
        const Bytes reply = host.reply_to(ctrl.receive());
        ctrl.on_send(reply);
        const auto success2 = host.finish(ctrl.receive());
        if (success2) {
            ctrl.on_send(*success2);
        }
        out.host_ok = true;
    } catch (const AuthError& e) {
        out.host_error = e.what();
        out.host_reason = e.reason();
        out.host_error_local = e.local();
        if (e.local()) {
            ctrl.on_send(host.failure2(e.reason()));
        }
    }
    out.controller_ok = ctrl.authenticated();
    out.controller_failure = ctrl.failure();
    return out;
}

HostAuthConfig host_config(const Secret& key, std::optional<Secret> ctrl_key = {}) {
    HostAuthConfig c;
    c.host_secret = key;
    c.controller_secret = std::move(ctrl_key);
    c.host_nqn = kHostNqn;
    c.subsystem_nqn = kSubNqn;
    c.transaction_id = 5;
    return c;
}

ControllerAuthConfig ctrl_config(const Secret& key, std::optional<Secret> ctrl_key,
                                 wire::DhchapHash hash, wire::DhGroup group) {
    ControllerAuthConfig c;
    c.host_secret = key;
    c.controller_secret = std::move(ctrl_key);
    c.host_nqn = kHostNqn;
    c.subsystem_nqn = kSubNqn;
    c.hashes = {hash};
    c.dh_groups = {group};
    return c;
}

class AuthTransaction
    : public ::testing::TestWithParam<std::tuple<wire::DhchapHash, wire::DhGroup, bool>> {};

TEST_P(AuthTransaction, BothSidesAgree) {
    const auto [hash, group, bidirectional] = GetParam();
    const Secret key = make_secret(static_cast<std::uint8_t>(hash), 0x21);
    const std::optional<Secret> ctrl_key =
        bidirectional ? std::optional(make_secret(0, 0x77, 64)) : std::nullopt;
    const Outcome out = run(host_config(key, ctrl_key), ctrl_config(key, ctrl_key, hash, group));
    EXPECT_TRUE(out.host_ok) << out.host_error;
    EXPECT_TRUE(out.controller_ok) << out.controller_failure;
}

INSTANTIATE_TEST_SUITE_P(EveryHashAndGroup, AuthTransaction,
                         ::testing::Combine(::testing::ValuesIn(wire::kAllDhchapHashes),
                                            ::testing::ValuesIn(wire::kAllDhGroups),
                                            ::testing::Bool()));

TEST(AuthTransactionFailures, WrongHostKeyIsRefusedWithReasonFailed) {
    const Outcome out = run(host_config(make_secret(1, 0x01)),
                            ctrl_config(make_secret(1, 0x02), std::nullopt,
                                        wire::DhchapHash::sha256, wire::DhGroup::ffdhe2048));
    EXPECT_FALSE(out.host_ok);
    EXPECT_FALSE(out.controller_ok);
    EXPECT_FALSE(out.host_error_local);
    EXPECT_EQ(out.host_reason, AuthFailure::failed);
    EXPECT_NE(out.host_error.find("authentication failed"), std::string::npos) << out.host_error;
    EXPECT_NE(out.controller_failure.find("does not match"), std::string::npos);
}

TEST(AuthTransactionFailures, WrongControllerKeyIsCaughtByTheHost) {
    const Secret key = make_secret(0, 0x01);
    const Outcome out =
        run(host_config(key, make_secret(0, 0x03)),
            ctrl_config(key, make_secret(0, 0x04), wire::DhchapHash::sha512, wire::DhGroup::null));
    EXPECT_FALSE(out.host_ok);
    EXPECT_TRUE(out.host_error_local);
    EXPECT_NE(out.host_error.find("controller key"), std::string::npos) << out.host_error;
    EXPECT_FALSE(out.controller_ok);
    EXPECT_NE(out.controller_failure.find("host aborted"), std::string::npos);
}

TEST(AuthTransactionFailures, BidirectionalWithoutControllerKeyFails) {
    const Secret key = make_secret(0, 0x01);
    const Outcome out =
        run(host_config(key, make_secret(0, 0x03)),
            ctrl_config(key, std::nullopt, wire::DhchapHash::sha256, wire::DhGroup::null));
    EXPECT_FALSE(out.host_ok);
    EXPECT_FALSE(out.controller_ok);
}

TEST(AuthTransactionFailures, HashTheHostDoesNotOfferIsNamed) {
    const Secret key = make_secret(0, 0x01);
    HostAuthConfig h = host_config(key);
    h.hashes = {wire::DhchapHash::sha256};
    const Outcome out =
        run(h, ctrl_config(key, std::nullopt, wire::DhchapHash::sha512, wire::DhGroup::null));
    EXPECT_FALSE(out.host_ok);
    EXPECT_EQ(out.host_reason, AuthFailure::hash_unusable);
    EXPECT_NE(out.host_error.find("hash function not usable"), std::string::npos) << out.host_error;
}

TEST(AuthTransactionFailures, GroupTheHostDoesNotOfferIsNamed) {
    const Secret key = make_secret(0, 0x01);
    HostAuthConfig h = host_config(key);
    h.dh_groups = {wire::DhGroup::null};
    const Outcome out =
        run(h, ctrl_config(key, std::nullopt, wire::DhchapHash::sha256, wire::DhGroup::ffdhe3072));
    EXPECT_FALSE(out.host_ok);
    EXPECT_EQ(out.host_reason, AuthFailure::dhgroup_unusable);
    EXPECT_NE(out.host_error.find("DH group not usable"), std::string::npos) << out.host_error;
}

TEST(AuthTransactionFailures, ControllerRefusesMessagesOutOfOrder) {
    ControllerTransaction ctrl(ctrl_config(make_secret(0, 1), std::nullopt,
                                           wire::DhchapHash::sha256, wire::DhGroup::null));
    ctrl.on_send(wire::build_success2(0));
    EXPECT_FALSE(ctrl.authenticated());
    const wire::Failure f = wire::parse_failure(ctrl.receive());
    EXPECT_EQ(f.explanation, static_cast<std::uint8_t>(AuthFailure::incorrect_protocol_message));
}

TEST(AuthTransactionFailures, ControllerSurvivesGarbage) {
    ControllerTransaction ctrl(ctrl_config(make_secret(0, 1), std::nullopt,
                                           wire::DhchapHash::sha256, wire::DhGroup::null));
    ctrl.on_send(Bytes{0x00, 0x00, 0x01});
    EXPECT_FALSE(ctrl.authenticated());
    EXPECT_FALSE(ctrl.failure().empty());
    EXPECT_EQ(wire::peek_auth_message(ctrl.receive()), AuthMessage::failure1);
}

}  // namespace
