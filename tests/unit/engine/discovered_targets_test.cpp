#include <gtest/gtest.h>

#include <string>

#include "discovered_targets.hpp"

namespace e = nvmeof::engine;
namespace w = nvmeof::wire;

namespace {

w::DiscoveryRecord nvm(std::string nqn, std::string address = "10.0.0.2",
                       std::string port = "4420") {
    w::DiscoveryRecord r;
    r.subsystem_nqn = std::move(nqn);
    r.address = std::move(address);
    r.service_id = std::move(port);
    return r;
}

e::TargetSpec service() {
    e::TargetSpec s;
    s.address = "10.0.0.1";
    s.port = 4420;
    s.nsid = 3;
    s.host_nqn = "nqn.2026-12.io.nvmeof:host";
    s.source = "10.0.0.9";
    return s;
}

}  // namespace

TEST(DiscoveredTargets, EveryRdmaNvmSubsystemWithTheJobsNamespaceAndIdentity) {
    const auto found =
        e::targets_from_discovery(service(), {nvm("nqn.a"), nvm("nqn.b", "10.0.0.3", "4421")});
    ASSERT_EQ(found.targets.size(), 2u);
    EXPECT_TRUE(found.skipped.empty());
    EXPECT_EQ(found.targets[0].address, "10.0.0.2");
    EXPECT_EQ(found.targets[0].subsystem_nqn, "nqn.a");
    EXPECT_EQ(found.targets[1].address, "10.0.0.3");
    EXPECT_EQ(found.targets[1].port, 4421);
    for (const auto& t : found.targets) {
        EXPECT_EQ(t.nsid, 3u);
        EXPECT_EQ(t.host_nqn, "nqn.2026-12.io.nvmeof:host");
        EXPECT_EQ(t.source, "10.0.0.9");
        EXPECT_FALSE(e::is_discovery_spec(t));
    }
}

TEST(DiscoveredTargets, SkipsWhatItCannotUseAndSaysWhy) {
    w::DiscoveryRecord referral = nvm("nqn.2014-08.org.nvmexpress.discovery");
    referral.subtype = w::SubsystemType::referral;
    w::DiscoveryRecord itself = nvm("nqn.2014-08.org.nvmexpress.discovery");
    itself.subtype = w::SubsystemType::current_discovery;
    w::DiscoveryRecord tcp = nvm("nqn.tcp");
    tcp.transport = w::TransportType::tcp;
    w::DiscoveryRecord second_path = nvm("nqn.a", "10.0.0.4");
    const auto found =
        e::targets_from_discovery(service(), {referral, itself, tcp, nvm("nqn.a"), second_path,
                                              nvm("nqn.badport", "10.0.0.2", "x"),
                                              nvm("nqn.2014-08.org.nvmexpress.discovery")});
    ASSERT_EQ(found.targets.size(), 1u);
    EXPECT_EQ(found.targets[0].subsystem_nqn, "nqn.a");
    EXPECT_EQ(found.targets[0].address, "10.0.0.2");  // the first path
    for (const char* why :
         {"entry 0", "referral", "entry 1", "discovery subsystem", "entry 2 (nqn.tcp)", "TCP",
          "entry 4 (nqn.a): another path", "entry 5", "not a port",
          "entry 6 (nqn.2014-08.org.nvmexpress.discovery): the discovery NQN"}) {
        EXPECT_NE(found.skipped.find(why), std::string::npos)
            << why << " not in: " << found.skipped;
    }
    EXPECT_EQ(found.skipped.find("entry 3"), std::string::npos) << found.skipped;
}

TEST(DiscoveredTargets, AWildcardAddressMeansTheDiscoveryServicesOwn) {
    for (const char* wildcard : {"", "0.0.0.0", "::"}) {
        const auto found = e::targets_from_discovery(service(), {nvm("nqn.a", wildcard)});
        ASSERT_EQ(found.targets.size(), 1u);
        EXPECT_EQ(found.targets[0].address, "10.0.0.1") << wildcard;
    }
}

TEST(DiscoveredTargets, NothingUsableIsOneErrorNamingTheService) {
    w::DiscoveryRecord tcp = nvm("nqn.tcp");
    tcp.transport = w::TransportType::tcp;
    for (const auto& records :
         {std::vector<w::DiscoveryRecord>{}, std::vector<w::DiscoveryRecord>{tcp}}) {
        try {
            e::targets_from_discovery(service(), records);
            FAIL() << "accepted";
        } catch (const e::SpecError& error) {
            const std::string what = error.what();
            EXPECT_NE(what.find("10.0.0.1:4420"), std::string::npos) << what;
            EXPECT_NE(what.find("no NVM subsystem"), std::string::npos) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
            EXPECT_EQ(what.find("TCP") != std::string::npos, !records.empty()) << what;
        }
    }
    e::TargetSpec ipv6 = service();
    ipv6.address = "::1";
    EXPECT_EQ(e::service_name(ipv6), "[::1]:4420");
}

TEST(DiscoveredTargets, CrossesAPipeAsText) {
    w::DiscoveryRecord referral = nvm("nqn.r");
    referral.subtype = w::SubsystemType::referral;
    const auto found = e::targets_from_discovery(
        service(), {referral, nvm("nqn.a"), nvm("nqn.b", "fe80::2", "4421")});
    const auto back = e::decode_discovered(e::encode(found));
    EXPECT_EQ(back.skipped, found.skipped);
    ASSERT_EQ(back.targets.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(e::controller_key(back.targets[i]), e::controller_key(found.targets[i]));
        EXPECT_EQ(back.targets[i].nsid, found.targets[i].nsid);
    }
    EXPECT_EQ(back.targets[1].address, "fe80::2");
}

// A job over TCP (trtype=tcp) reads the log over TCP and uses the subsystems
// listed over TCP; RDMA's records are skipped, saying why.
TEST(DiscoveredTargets, ATcpJobUsesTheTcpRecords) {
    e::TargetSpec tcp_service = service();
    tcp_service.transport = nvmeof::Transport::tcp;
    tcp_service.port = 8009;
    w::DiscoveryRecord tcp = nvm("nqn.tcp", "10.0.0.5", "4420");
    tcp.transport = w::TransportType::tcp;
    const auto found = e::targets_from_discovery(tcp_service, {nvm("nqn.rdma"), tcp});
    ASSERT_EQ(found.targets.size(), 1u);
    EXPECT_EQ(found.targets[0].transport, nvmeof::Transport::tcp);
    EXPECT_EQ(found.targets[0].subsystem_nqn, "nqn.tcp");
    EXPECT_EQ(found.targets[0].address, "10.0.0.5");
    EXPECT_EQ(found.targets[0].port, 4420);
    EXPECT_NE(found.skipped.find("entry 0 (nqn.rdma): trtype RDMA, this job's trtype is TCP"),
              std::string::npos)
        << found.skipped;
    // They cross the pipe as TCP files.
    const auto back = e::decode_discovered(e::encode(found));
    ASSERT_EQ(back.targets.size(), 1u);
    EXPECT_EQ(back.targets[0].transport, nvmeof::Transport::tcp);
    EXPECT_EQ(e::controller_key(back.targets[0]), e::controller_key(found.targets[0]));
    // An RDMA job skips the TCP record.
    const auto rdma = e::targets_from_discovery(service(), {nvm("nqn.rdma"), tcp});
    ASSERT_EQ(rdma.targets.size(), 1u);
    EXPECT_EQ(rdma.targets[0].transport, nvmeof::Transport::rdma);
    EXPECT_NE(rdma.skipped.find("trtype TCP, this job's trtype is RDMA"), std::string::npos)
        << rdma.skipped;
}

TEST(DiscoveredTargets, NothingOverTheJobsTransportNamesIt) {
    e::TargetSpec tcp_service = service();
    tcp_service.transport = nvmeof::Transport::tcp;
    tcp_service.port = 8009;
    try {
        e::targets_from_discovery(tcp_service, {nvm("nqn.rdma")});
        FAIL() << "accepted";
    } catch (const e::SpecError& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find("10.0.0.1:8009 lists no NVM subsystem over TCP"), std::string::npos)
            << what;
    }
}
