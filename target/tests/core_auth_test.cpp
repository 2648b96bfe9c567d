// CommandCore with DH-HMAC-CHAP keys: Connect asks for authentication, nothing
// but Authentication Send/Receive runs before it succeeds, and a wrong key
// leaves the queue locked.
#include "auth/dhchap_transaction.hpp"
#include "core_harness.hpp"
#include "nvmeof/wire/auth.hpp"

namespace nvmeof::target::testing {
namespace {

const auth::Secret kKey{1, wire::Bytes(32, 0x42)};

TargetConfig auth_config() {
    TargetConfig config = default_config();
    config.dhchap.hosts[kHostnqn].host_key = kKey;
    return config;
}

// Runs the host's half of the transaction through the core.
bool authenticate(CoreHarness& h, QueueState& q, const auth::Secret& key) {
    auth::HostAuthConfig setup;
    setup.host_secret = key;
    setup.host_nqn = kHostnqn;
    setup.subsystem_nqn = kSubnqn;
    auth::HostTransaction host(setup);
    auto send = [&](const wire::Bytes& message) {
        const auto sqe = wire::authentication_send_command(
            static_cast<std::uint32_t>(message.size()), CoreHarness::keyed(message.size()));
        EXPECT_TRUE(h.run(q, sqe, message).status().ok());
    };
    auto receive = [&] {
        const Result r =
            h.run(q, wire::authentication_receive_command(4096, CoreHarness::keyed(4096)));
        EXPECT_TRUE(r.status().ok());
        return r.data;
    };
    try {
        send(host.negotiate());
        send(host.reply_to(receive()));
        host.finish(receive());
        return true;
    } catch (const auth::AuthError&) {
        return false;
    }
}

TEST(CoreAuth, ConnectAsksForAuthenticationAndOtherCommandsWait) {
    CoreHarness h(auth_config());
    QueueState admin = CoreHarness::new_queue(0);
    const Result connect = h.connect(admin);
    ASSERT_TRUE(connect.status().ok());
    EXPECT_TRUE(wire::parse_connect_result(connect.cqe.dw0).authentication_required);
    EXPECT_EQ(h.property_get(admin, wire::Property::cap).status(),
              fabrics(wire::FabricsStatus::authentication_required));
    ASSERT_TRUE(authenticate(h, admin, kKey));
    EXPECT_TRUE(h.property_get(admin, wire::Property::cap).status().ok());
}

TEST(CoreAuth, WrongKeyKeepsTheQueueLocked) {
    CoreHarness h(auth_config());
    QueueState admin = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(admin).status().ok());
    EXPECT_FALSE(authenticate(h, admin, auth::Secret{1, wire::Bytes(32, 0x43)}));
    EXPECT_EQ(h.property_get(admin, wire::Property::cap).status(),
              fabrics(wire::FabricsStatus::authentication_required));
}

TEST(CoreAuth, HostsWithoutAKeyNeedNoAuthentication) {
    CoreHarness h(auth_config());
    QueueState admin = CoreHarness::new_queue(0);
    const Result connect = h.connect(admin, kSubnqn, "nqn.2014-08.org.nvmexpress:uuid:host-b");
    ASSERT_TRUE(connect.status().ok());
    EXPECT_FALSE(wire::parse_connect_result(connect.cqe.dw0).authentication_required);
    EXPECT_TRUE(h.property_get(admin, wire::Property::cap).status().ok());
    // Authentication Send there is out of sequence.
    const wire::Bytes negotiate =
        wire::build_failure(wire::AuthMessage::failure2, 0, wire::AuthFailure::failed);
    EXPECT_EQ(h.run(admin, wire::authentication_send_command(8, CoreHarness::keyed(8)), negotiate)
                  .status(),
              generic(wire::GenericStatus::command_sequence_error));
}

TEST(CoreAuth, WrongSecurityProtocolIsAnInvalidField) {
    CoreHarness h(auth_config());
    QueueState admin = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(admin).status().ok());
    wire::Sqe sqe = wire::authentication_receive_command(4096, CoreHarness::keyed(4096));
    reinterpret_cast<std::uint8_t*>(&sqe)[43] = 0xEA;
    EXPECT_EQ(h.run(admin, sqe).status(), generic(wire::GenericStatus::invalid_field));
}

}  // namespace
}  // namespace nvmeof::target::testing
