// Golden values taken from the wire digest (nvmeof-rdma-wire.md), never from our
// own builders: where libnvme has no definition to compare against (SQE, SGL,
// CM private data) these bytes are the independent reference.
#include <gtest/gtest.h>

#include <cstring>

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

namespace {

template <typename T>
std::array<std::uint8_t, sizeof(T)> bytes_of(const T& value) {
    std::array<std::uint8_t, sizeof(T)> out{};
    std::memcpy(out.data(), &value, sizeof value);
    return out;
}

}  // namespace

TEST(Golden, ControllerConfigForIosqes6Iocqes4) {
    EXPECT_EQ(w::ControllerConfig::make({}).raw, 0x00460000u);
    EXPECT_EQ(w::ControllerConfig::make({.enable = true}).raw, 0x00460001u);
    EXPECT_EQ(w::ControllerConfig::make(
                  {.enable = true, .command_set = w::CommandSetSelected::io_command_sets})
                  .raw,
              0x00460061u);
    EXPECT_EQ(
        w::ControllerConfig::make({.enable = true, .shutdown = w::ShutdownNotification::normal})
            .raw,
        0x00464001u);
}

TEST(Golden, EveryCapsuleHasPsdtSglInByteOne) {
    const w::RemoteBuffer buffer{0x1000, 4096, 7};
    const w::Sqe all[] = {
        w::connect_command(0, 32, 0, w::keyed_data_block(buffer.slice(0, 1024))),
        w::property_get_command(w::Property::cap),
        w::property_set_command(w::Property::cc, 0x00460001),
        w::identify_command(w::IdentifyCns::controller, 0, w::keyed_data_block(buffer)),
        w::set_number_of_queues_command({1, 1}),
        w::keep_alive_command(),
        w::get_log_page_command(w::LogPageId::discovery, 0,
                                w::keyed_data_block(buffer.slice(0, 1024))),
        w::rw_command(w::IoOpcode::read, 1, 0, 8, buffer, 512),
        w::flush_command(1),
        w::write_zeroes_command(1, 0, 8),
        w::dataset_management_command(1, 1, w::kDsmAttributeDeallocate, buffer),
    };
    for (const w::Sqe& sqe : all) {
        EXPECT_EQ(bytes_of(sqe)[1], 0x40) << "opcode " << int{sqe.opcode};
    }
}

TEST(Golden, NoDataCommandsCarryZeroLengthKeyedDescriptor) {
    const w::Sqe commands[] = {w::property_get_command(w::Property::csts), w::keep_alive_command(),
                               w::flush_command(1), w::set_number_of_queues_command({4, 4})};
    for (const w::Sqe& sqe : commands) {
        const auto b = bytes_of(sqe);
        for (int i = 24; i < 39; ++i) {
            EXPECT_EQ(b[i], 0) << "byte " << i;
        }
        EXPECT_EQ(b[39], 0x40);
    }
}

TEST(Golden, KeyedSglHas24BitLengthBeforeTheKey) {
    const auto d = bytes_of(w::keyed_data_block(0x1122334455667788ull, 0xABCDEF, 0x01020304));
    const std::array<std::uint8_t, 16> expected = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                                   0xEF, 0xCD, 0xAB, 0x04, 0x03, 0x02, 0x01, 0x40};
    EXPECT_EQ(d, expected);
    EXPECT_EQ(bytes_of(w::keyed_data_block(0, 0, 5, true))[15], 0x4F);
}

TEST(Golden, InCapsuleDescriptorIsDataBlockOffset) {
    const auto d = bytes_of(w::in_capsule_data(0, 1024));
    const std::array<std::uint8_t, 16> expected = {0,    0,    0, 0, 0, 0, 0, 0,
                                                   0x00, 0x04, 0, 0, 0, 0, 0, 0x01};
    EXPECT_EQ(d, expected);
}

TEST(Golden, TransportDataBlockIsType5SubtypeA) {
    const auto d = bytes_of(w::transport_data_block(0x00020000));
    const std::array<std::uint8_t, 16> expected = {0,    0,    0,    0, 0, 0, 0, 0,
                                                   0x00, 0x00, 0x02, 0, 0, 0, 0, 0x5A};
    EXPECT_EQ(d, expected);
    const w::SglDescriptor none = w::transport_data_block(0);
    EXPECT_EQ(none.type(), w::SglType::transport_data_block);
    EXPECT_EQ(none.subtype(), w::SglSubtype::transport_specific);
    EXPECT_EQ(none.length(), 0u);
    EXPECT_EQ(w::transport_data_block(4096).length(), 4096u);
}

TEST(Golden, RdmaCmServiceIdForPort4420) {
    EXPECT_EQ(w::rdma_cm_service_id(4420), 0x0000000001061144ull);
}

TEST(Golden, CmRequestLayout) {
    const auto b = bytes_of(w::rdma_cm_request(3, 128, 0x0102));
    ASSERT_EQ(b.size(), 32u);
    const std::array<std::uint8_t, 10> head = {0, 0, 3, 0, 128, 0, 127, 0, 0x02, 0x01};
    for (std::size_t i = 0; i < head.size(); ++i) {
        EXPECT_EQ(b[i], head[i]) << "byte " << i;
    }
    for (std::size_t i = head.size(); i < b.size(); ++i) {
        EXPECT_EQ(b[i], 0) << "byte " << i;
    }
}

TEST(Golden, CmReplyAndRejectLayout) {
    const auto rep = bytes_of(w::rdma_cm_reply(0x0180));
    ASSERT_EQ(rep.size(), 32u);
    EXPECT_EQ(rep[0], 0);
    EXPECT_EQ(rep[1], 0);
    EXPECT_EQ(rep[2], 0x80);
    EXPECT_EQ(rep[3], 0x01);
    const auto rej = bytes_of(w::rdma_cm_reject(w::RdmaCmRejectStatus::invalid_host_sq_size));
    const std::array<std::uint8_t, 4> expected = {0, 0, 4, 0};
    EXPECT_EQ(rej, expected);
}

TEST(Golden, ConnectDataOffsets) {
    const w::HostId id{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const w::ConnectData data =
        w::connect_data(id, "nqn.2024-01.io.example:sub", "nqn.host", 0xFFFF);
    const auto b = bytes_of(data);
    EXPECT_EQ(b[0], 1);
    EXPECT_EQ(b[15], 16);
    EXPECT_EQ(b[16], 0xFF);
    EXPECT_EQ(b[17], 0xFF);
    EXPECT_EQ(std::memcmp(b.data() + 256, "nqn.2024-01.io.example:sub", 26), 0);
    EXPECT_EQ(b[256 + 26], 0);
    EXPECT_EQ(std::memcmp(b.data() + 512, "nqn.host", 8), 0);
}

TEST(Golden, ConnectCommandBytes) {
    const w::Sqe sqe = w::connect_command(2, 128, 0, w::in_capsule_data(0, 1024));
    const auto b = bytes_of(sqe);
    EXPECT_EQ(b[0], 0x7F);
    EXPECT_EQ(b[4], 0x01);  // FCTYPE Connect
    EXPECT_EQ(b[42], 2);    // QID
    EXPECT_EQ(b[44], 127);  // SQSIZE is 0's based
    EXPECT_EQ(b[45], 0);
    EXPECT_EQ(b[39], 0x01);
}

TEST(Golden, PropertyGetCapUsesEightByteSize) {
    const auto b = bytes_of(w::property_get_command(w::Property::cap));
    EXPECT_EQ(b[4], 0x04);
    EXPECT_EQ(b[40], 1);
    EXPECT_EQ(b[44], 0);
    const auto csts = bytes_of(w::property_get_command(w::Property::csts));
    EXPECT_EQ(csts[40], 0);
    EXPECT_EQ(csts[44], 0x1C);
}

TEST(Golden, PropertySetValueAtByte48) {
    const auto b = bytes_of(w::property_set_command(w::Property::cc, 0x00460001));
    EXPECT_EQ(b[4], 0x00);
    EXPECT_EQ(b[44], 0x14);
    EXPECT_EQ(b[48], 0x01);
    EXPECT_EQ(b[50], 0x46);
}

TEST(Golden, StatusWords) {
    EXPECT_EQ(w::Status::generic(w::GenericStatus::invalid_field, true).cqe_field(), 0x8004);
    EXPECT_EQ(w::Status::fabrics(w::FabricsStatus::connect_invalid_parameters, true).cqe_field(),
              0x8304);
}

TEST(Golden, ReadCommandNlbIsZeroBased) {
    const w::Sqe sqe =
        w::rw_command(w::IoOpcode::read, 1, 0x100000002ull, 8, {0x2000, 4096, 9}, 512);
    const auto b = bytes_of(sqe);
    EXPECT_EQ(b[0], 0x02);
    EXPECT_EQ(b[40], 0x02);
    EXPECT_EQ(b[44], 0x01);
    EXPECT_EQ(b[48], 7);
    EXPECT_EQ(b[32], 0x00);  // 4096 = 0x001000 little-endian in bytes 32..34
    EXPECT_EQ(b[33], 0x10);
    EXPECT_EQ(b[35], 9);  // rkey at byte 35 (= 24 + 11)
}

TEST(Golden, NumberOfQueuesIsZeroBasedBothHalves) {
    EXPECT_EQ(w::number_of_queues_value({1, 1}), 0u);
    EXPECT_EQ(w::number_of_queues_value({128, 128}), 0x007F007Fu);
}

// The discovery log page: a 1024-byte header (GENCTR at 0, NUMREC at 8, RECFMT
// at 16), then 1024-byte records with TRTYPE..EFLAGS in bytes 0..11, TRSVCID at
// 32, SUBNQN at 256, TRADDR at 512 and the RDMA TSAS (QPTYPE, PRTYPE, CMS, PKEY
// at +8) at 768.
TEST(Golden, DiscoveryLogPageLayout) {
    w::DiscoveryRecord r;
    r.transport = w::TransportType::rdma;
    r.family = w::AddressFamily::ipv6;
    r.subtype = w::SubsystemType::nvm;
    r.treq = w::kTreqSecureChannelNotRequired | w::kTreqSqFlowControlDisable;
    r.port_id = 0x0102;
    r.cntlid = 0xFFFF;
    r.admin_queue_size = 32;
    r.eflags = w::kEflagsDuplicateInformation;
    r.service_id = "4420";
    r.subsystem_nqn = "nqn.2026-12.io.nvmeof:g";
    r.address = "fd00::1";
    r.rdma = {w::RdmaQpType::reliable_connected, w::RdmaProviderType::roce_v2, w::RdmaCms::rdma_cm,
              0xABCD};
    const std::vector<std::uint8_t> log = w::discovery_log(0x1122334455667788ull, {r});
    ASSERT_EQ(log.size(), 2048u);
    const std::uint8_t header[] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // GENCTR
                                   1,    0,    0,    0,    0,    0,    0,    0,     // NUMREC
                                   0,    0};                                        // RECFMT
    EXPECT_EQ(std::memcmp(log.data(), header, sizeof header), 0);
    const std::uint8_t* e = log.data() + 1024;
    const std::uint8_t fixed[] = {1, 2, 2, 0x6, 0x02, 0x01, 0xFF, 0xFF, 32, 0, 0x01, 0x00};
    EXPECT_EQ(std::memcmp(e, fixed, sizeof fixed), 0);
    EXPECT_EQ(std::memcmp(e + 32, "4420", 5), 0);
    EXPECT_EQ(std::memcmp(e + 256, "nqn.2026-12.io.nvmeof:g", 24), 0);
    EXPECT_EQ(std::memcmp(e + 512, "fd00::1", 8), 0);
    const std::uint8_t tsas[] = {1, 4, 1, 0, 0, 0, 0, 0, 0xCD, 0xAB};
    EXPECT_EQ(std::memcmp(e + 768, tsas, sizeof tsas), 0);
    for (std::size_t i = 12; i < 32; ++i) {
        EXPECT_EQ(e[i], 0) << "reserved byte " << i;
    }
    const auto parsed = w::parse_discovery_log(log.data(), log.size());
    ASSERT_EQ(parsed.size(), 1u);
    EXPECT_EQ(parsed[0], r);
    w::DiscoveryLogHeader raw_header;
    std::memcpy(&raw_header, log.data(), sizeof raw_header);
    const w::DiscoveryLogSummary summary = w::parse_discovery_log_header(raw_header);
    EXPECT_EQ(summary.generation, 0x1122334455667788ull);
    EXPECT_EQ(summary.records, 1u);
    EXPECT_EQ(summary.format, 0);
}
