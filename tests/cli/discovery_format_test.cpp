// nvmeof-discover's text: nvme-cli's names for every code, "unrecognized" for
// the rest, and the JSON layout.
#include <gtest/gtest.h>

#include "../../cli/discovery_format.hpp"

using namespace nvmeof;
namespace w = nvmeof::wire;

namespace {

// The value printed after "key:" in the first entry.
std::string field(const std::string& text, const std::string& key) {
    const auto at = text.find("\n" + key + ":");
    if (at == std::string::npos) {
        return "<missing>";
    }
    auto start = text.find_first_not_of(' ', at + key.size() + 2);
    return text.substr(start, text.find('\n', start) - start);
}

std::string one(const w::DiscoveryRecord& r) {
    return cli::format_discovery_log({5, {r}});
}

}  // namespace

TEST(DiscoveryFormat, HeaderAndEntryLines) {
    w::DiscoveryRecord r;
    r.subsystem_nqn = "nqn.2026-12.io.nvmeof:x";
    r.address = "10.0.0.2";
    r.service_id = "4420";
    r.port_id = 7;
    r.rdma.pkey = 0x12;
    const std::string text = one(r);
    EXPECT_EQ(text.rfind("\nDiscovery Log Number of Records 1, Generation counter 5\n"
                         "=====Discovery Log Entry 0======\ntrtype:  rdma\n",
                         0),
              0u)
        << text;
    EXPECT_EQ(field(text, "portid"), "7");
    EXPECT_EQ(field(text, "rdma_pkey"), "0x0012");
    EXPECT_EQ(field(text, "rdma_prtype"), "not specified");
}

TEST(DiscoveryFormat, NamesAsNvmeCli) {
    w::DiscoveryRecord r;
    r.address = "fd00::1";
    r.family = w::AddressFamily::ipv6;
    r.subtype = w::SubsystemType::current_discovery;
    r.treq = w::kTreqSecureChannelRequired | w::kTreqSqFlowControlDisable;
    r.eflags = w::kEflagsDuplicateInformation | w::kEflagsExplicitPersistentConnections;
    r.rdma.provider_type = w::RdmaProviderType::iwarp;
    std::string text = one(r);
    EXPECT_EQ(field(text, "adrfam"), "ipv6");
    EXPECT_EQ(field(text, "subtype"), "current discovery subsystem");
    EXPECT_EQ(field(text, "treq"), "required, sq flow control disable supported");
    EXPECT_EQ(field(text, "eflags"),
              "explicit discovery connections, duplicate discovery information");
    EXPECT_EQ(field(text, "rdma_prtype"), "iwarp");
    r.subtype = w::SubsystemType::referral;
    r.treq = w::kTreqSecureChannelNotSpecified;
    r.eflags = w::kEflagsNoCdcConnectivity;
    r.rdma.provider_type = w::RdmaProviderType::roce_v2;
    text = one(r);
    EXPECT_EQ(field(text, "subtype"), "discovery subsystem referral");
    EXPECT_EQ(field(text, "treq"), "not specified");
    EXPECT_EQ(field(text, "eflags"), "no cdc connectivity");
    EXPECT_EQ(field(text, "rdma_prtype"), "roce-v2");
}

TEST(DiscoveryFormat, UnknownCodesAreUnrecognized) {
    w::DiscoveryRecord r;
    r.address = "10.0.0.2";
    r.family = static_cast<w::AddressFamily>(9);
    r.subtype = static_cast<w::SubsystemType>(0);
    r.treq = 3;
    r.eflags = 0x80;
    r.rdma.qp_type = static_cast<w::RdmaQpType>(7);
    r.rdma.cms = static_cast<w::RdmaCms>(2);
    const std::string text = one(r);
    for (const char* key : {"adrfam", "subtype", "treq", "eflags", "rdma_qptype", "rdma_cms"}) {
        EXPECT_EQ(field(text, key), "unrecognized") << key;
    }
}

TEST(DiscoveryFormat, AddresslessRecordHasNoFamilyAndTcpHasNoRdmaFields) {
    w::DiscoveryRecord r;
    r.transport = w::TransportType::tcp;
    const std::string text = one(r);
    EXPECT_EQ(field(text, "trtype"), "tcp");
    EXPECT_EQ(field(text, "adrfam"), "");
    EXPECT_EQ(text.find("rdma_"), std::string::npos);
}

// As nvme-cli: a tcp record ends with its TSAS SECTYPE (in JSON too), an
// rdma one has none.
TEST(DiscoveryFormat, TcpRecordEndsWithSectype) {
    w::DiscoveryRecord r;
    r.transport = w::TransportType::tcp;
    r.address = "10.0.0.2";
    std::string text = one(r);
    EXPECT_EQ(field(text, "adrfam"), "ipv4");
    EXPECT_EQ(text.substr(text.find("eflags:")), "eflags:  none\nsectype: none\n") << text;
    EXPECT_NE(cli::format_discovery_log_json({1, {r}}).find("\"eflags\": \"none\",\n"
                                                            "      \"sectype\": \"none\"\n"),
              std::string::npos);
    r.tcp.security_type = w::TcpSecurityType::tls13;
    EXPECT_EQ(field(one(r), "sectype"), "tls13");
    r.tcp.security_type = static_cast<w::TcpSecurityType>(3);
    EXPECT_EQ(field(one(r), "sectype"), "unrecognized");
    r.transport = w::TransportType::rdma;
    EXPECT_EQ(one(r).find("sectype"), std::string::npos);
    EXPECT_EQ(cli::format_discovery_log_json({1, {r}}).find("sectype"), std::string::npos);
}

TEST(DiscoveryFormat, JsonEscapesAndLists) {
    w::DiscoveryRecord r;
    r.subsystem_nqn = "nqn.2026-12.io.nvmeof:\"quoted\"\\";
    const std::string json = cli::format_discovery_log_json({9, {r, r}});
    EXPECT_NE(json.find("\"genctr\": 9"), std::string::npos) << json;
    EXPECT_NE(json.find("\"subnqn\": \"nqn.2026-12.io.nvmeof:\\\"quoted\\\"\\\\\""),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"portid\": 0"), std::string::npos);
    EXPECT_NE(json.find("\"rdma_pkey\": 0"), std::string::npos);
    EXPECT_EQ(cli::format_discovery_log_json({1, {}}),
              "{\n  \"genctr\": 1,\n  \"records\": []\n}\n");
}
