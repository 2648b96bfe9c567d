// Every builder of the wire layer, read back through its parser.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

TEST(RoundTrip, KeyedDescriptor) {
    const w::SglDescriptor d =
        w::keyed_data_block(0xDEADBEEF000ull, w::kMaxKeyedSglLength, 0xFFFFFFFF);
    EXPECT_TRUE(d.is_keyed());
    EXPECT_EQ(d.type(), w::SglType::keyed_data_block);
    EXPECT_EQ(d.subtype(), w::SglSubtype::address);
    EXPECT_EQ(d.address, 0xDEADBEEF000ull);
    EXPECT_EQ(d.keyed_length(), w::kMaxKeyedSglLength);
    EXPECT_EQ(d.keyed_key(), 0xFFFFFFFFu);
    EXPECT_EQ(d.length(), w::kMaxKeyedSglLength);
    EXPECT_EQ(w::keyed_data_block(1, 2, 3, true).subtype(), w::SglSubtype::invalidate_key);
}

TEST(RoundTrip, InCapsuleDescriptor) {
    const w::SglDescriptor d = w::in_capsule_data(16, 4096);
    EXPECT_FALSE(d.is_keyed());
    EXPECT_EQ(d.type(), w::SglType::data_block);
    EXPECT_EQ(d.subtype(), w::SglSubtype::offset);
    EXPECT_EQ(d.address, 16u);
    EXPECT_EQ(d.length(), 4096u);
}

TEST(RoundTrip, CmRequestIncludingZeroPaddedPrivateData) {
    std::uint8_t padded[56] = {};  // what IB/RoCE delivers: padded to the REQ maximum
    const w::RdmaCmRequest req = w::rdma_cm_request(5, 64, 9);
    std::memcpy(padded, &req, sizeof req);
    const auto parsed = w::parse_rdma_cm_request(padded, sizeof padded);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->recfmt, 0);
    EXPECT_EQ(parsed->qid, 5);
    EXPECT_EQ(parsed->hrqsize, 64);
    EXPECT_EQ(parsed->hsqsize, 63);
    EXPECT_EQ(parsed->cntlid, 9);
    EXPECT_FALSE(w::parse_rdma_cm_request(padded, 31).has_value());
    EXPECT_FALSE(w::parse_rdma_cm_request(nullptr, 0).has_value());
    EXPECT_THROW(w::rdma_cm_request(1, 1, 0), std::invalid_argument);
}

TEST(RoundTrip, CmReplyAndReject) {
    const w::RdmaCmReply rep = w::rdma_cm_reply(200);
    EXPECT_EQ(w::parse_rdma_cm_reply(&rep, sizeof rep)->crqsize, 200);
    const w::RdmaCmReject rej = w::rdma_cm_reject(w::RdmaCmRejectStatus::no_resources);
    const auto parsed = w::parse_rdma_cm_reject(&rej, sizeof rej);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->status, 6);
    EXPECT_EQ(w::reject_status_name(parsed->status), "No Resources");
    EXPECT_EQ(w::reject_status_name(0x07), "Invalid IRD");
    EXPECT_EQ(w::reject_status_name(0x99), "Unknown Reject Status");
}

TEST(RoundTrip, ConnectCommand) {
    const w::SglDescriptor data = w::keyed_data_block(0x4000, 1024, 77);
    const w::ConnectCommand c = w::as_connect(w::connect_command(0, 32, 1500, data));
    EXPECT_EQ(c.opcode, w::kFabricsOpcode);
    EXPECT_EQ(c.fctype, static_cast<std::uint8_t>(w::FabricsType::connect));
    EXPECT_EQ(c.qid, 0);
    EXPECT_EQ(c.sqsize, 31);
    EXPECT_EQ(c.kato, 1500u);
    EXPECT_EQ(c.sgl1.keyed_key(), 77u);
    EXPECT_EQ(c.sgl1.keyed_length(), 1024u);
    EXPECT_THROW(w::connect_command(1, 1, 0, data), std::invalid_argument);
}

TEST(RoundTrip, ConnectData) {
    const w::HostId id{0xAA};
    const w::ConnectData d = w::connect_data(id, "nqn.2014-08.org.nvmexpress.discovery",
                                             "nqn.2014-08.org.nvmexpress:uuid:1234", 7);
    EXPECT_EQ(d.host_id, id);
    EXPECT_EQ(d.cntlid, 7);
    EXPECT_EQ(w::field_text(d.subnqn, sizeof d.subnqn), w::kDiscoveryNqn);
    EXPECT_EQ(w::field_text(d.hostnqn, sizeof d.hostnqn), "nqn.2014-08.org.nvmexpress:uuid:1234");
    EXPECT_THROW(w::connect_data(id, "", "nqn.h", 1), std::invalid_argument);
    EXPECT_THROW(w::connect_data(id, std::string(224, 'n'), "nqn.h", 1), std::invalid_argument);
    EXPECT_NO_THROW(w::connect_data(id, std::string(223, 'n'), "nqn.h", 1));
    EXPECT_THROW(w::connect_data(id, std::string("nqn\0x", 5), "nqn.h", 1), std::invalid_argument);
}

TEST(RoundTrip, ConnectResultAndInvalidParameter) {
    const auto ok = w::parse_connect_result(0x00020005);
    EXPECT_EQ(ok.cntlid, 5);
    EXPECT_TRUE(ok.authentication_required);
    EXPECT_FALSE(ok.secure_channel_required);
    EXPECT_FALSE(w::parse_connect_result(0x0000FFEF).authentication_required);
    const auto ascr = w::parse_connect_result(0x00040005);
    EXPECT_TRUE(ascr.authentication_required);
    EXPECT_TRUE(ascr.secure_channel_required);
    const std::uint32_t dw0 = w::connect_invalid_parameter_result(true, 256);
    const auto p = w::parse_connect_invalid_parameter(dw0);
    EXPECT_TRUE(p.in_data);
    EXPECT_EQ(p.offset, 256);
    EXPECT_EQ(w::connect_parameter_name(p), "SUBNQN");
    EXPECT_EQ(w::connect_parameter_name(w::parse_connect_invalid_parameter(
                  w::connect_invalid_parameter_result(false, 44))),
              "SQSIZE");
    EXPECT_EQ(w::connect_parameter_name({true, 512}), "HOSTNQN");
    EXPECT_EQ(w::connect_parameter_name({true, 16}), "CNTLID");
}

TEST(RoundTrip, PropertyGetAndSet) {
    const auto get = w::as_property_get(w::property_get_command(w::Property::csts));
    EXPECT_EQ(get.fctype, static_cast<std::uint8_t>(w::FabricsType::property_get));
    EXPECT_EQ(get.offset, 0x1Cu);
    EXPECT_EQ(get.attrib & w::kPropertySizeMask, 0);
    const auto set = w::as_property_set(w::property_set_command(w::Property::cc, 0x00464001));
    EXPECT_EQ(set.fctype, static_cast<std::uint8_t>(w::FabricsType::property_set));
    EXPECT_EQ(set.offset, 0x14u);
    EXPECT_EQ(set.value, 0x00464001u);
    EXPECT_EQ(w::ControllerConfig{static_cast<std::uint32_t>(set.value)}.shutdown(),
              w::ShutdownNotification::normal);
}

TEST(RoundTrip, IdentifyCommand) {
    const w::Sqe sqe = w::identify_command(w::IdentifyCns::active_namespace_list, 0,
                                           w::keyed_data_block(0x9000, 4096, 3));
    EXPECT_EQ(sqe.opcode, static_cast<std::uint8_t>(w::AdminOpcode::identify));
    EXPECT_EQ(w::identify_cns(sqe), w::IdentifyCns::active_namespace_list);
    EXPECT_EQ(sqe.dptr.keyed_length(), 4096u);
}

TEST(RoundTrip, NumberOfQueues) {
    const w::Sqe sqe = w::set_number_of_queues_command({8, 4});
    EXPECT_EQ(w::feature_id(sqe), w::FeatureId::number_of_queues);
    const w::QueueCounts counts = w::parse_number_of_queues(sqe.cdw11);
    EXPECT_EQ(counts.submission, 8u);
    EXPECT_EQ(counts.completion, 4u);
    EXPECT_EQ(counts.pairs(), 4u);
    EXPECT_EQ(w::parse_number_of_queues(0x007F007F).pairs(), 128u);
    EXPECT_THROW(w::number_of_queues_value({0, 1}), std::invalid_argument);
    EXPECT_THROW(w::number_of_queues_value({1, 65536}), std::invalid_argument);
}

TEST(RoundTrip, KeepAliveAndTimerFeature) {
    EXPECT_EQ(w::keep_alive_command().opcode, 0x18);
    const w::Sqe kato = w::set_keep_alive_timer_command(5000);
    EXPECT_EQ(w::feature_id(kato), w::FeatureId::keep_alive_timer);
    EXPECT_EQ(kato.cdw11, 5000u);
    const w::Sqe get = w::get_features_command(w::FeatureId::keep_alive_timer);
    EXPECT_EQ(get.opcode, static_cast<std::uint8_t>(w::AdminOpcode::get_features));
    EXPECT_EQ(w::feature_id(get), w::FeatureId::keep_alive_timer);
}

TEST(RoundTrip, HostBehaviorSupport) {
    const w::SglDescriptor data = w::keyed_data_block(0x2000, w::kHostBehaviorSupportSize, 7);
    const w::Sqe set = w::set_host_behavior_support_command(data);
    EXPECT_EQ(set.opcode, 0x09);
    EXPECT_EQ(set.cdw10, 0x16u);  // FID 0x16, SV clear
    EXPECT_EQ(set.dptr.length(), 512u);
    const w::Sqe get = w::get_host_behavior_support_command(data);
    EXPECT_EQ(get.opcode, 0x0A);
    EXPECT_EQ(get.cdw10, 0x16u);  // select 0: current
    w::HostBehaviorSupport behavior{};
    behavior.lbafee = 1;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&behavior);
    EXPECT_EQ(bytes[2], 1);  // byte 2 (the base specification; SPDK's spdk_nvme_host_behavior)
}

TEST(RoundTrip, GetLogPage) {
    const std::uint32_t big = 4 * 70000;  // needs NUMDU as well as NUMDL
    const w::Sqe sqe = w::get_log_page_command(w::LogPageId::discovery, 0x100000004ull,
                                               w::keyed_data_block(0x1000, big, 1));
    const w::LogPageRequest r = w::parse_get_log_page(sqe);
    EXPECT_EQ(r.lid, w::LogPageId::discovery);
    EXPECT_EQ(r.offset, 0x100000004ull);
    EXPECT_EQ(r.length, big);
    EXPECT_THROW(w::get_log_page_command(w::LogPageId::discovery, 2, w::keyed_data_block(0, 8, 1)),
                 std::invalid_argument);
    EXPECT_THROW(w::get_log_page_command(w::LogPageId::discovery, 0, w::keyed_data_block(0, 6, 1)),
                 std::invalid_argument);
}

TEST(RoundTrip, DiscoveryLog) {
    std::vector<w::DiscoveryRecord> records(2);
    records[0].subtype = w::SubsystemType::current_discovery;
    records[0].subsystem_nqn = w::kDiscoveryNqn;
    records[0].service_id = "4420";
    records[0].address = "127.0.0.1";
    records[1].subsystem_nqn = "nqn.2024-01.io.nvmeof:test";
    records[1].service_id = "4421";
    records[1].address = "127.0.0.2";
    const auto log = w::discovery_log(3, records);
    EXPECT_EQ(log.size(), 3 * w::kDiscoveryRecordSize);
    const auto parsed = w::parse_discovery_log(log.data(), log.size());
    ASSERT_EQ(parsed.size(), 2u);
    EXPECT_EQ(parsed[0].subtype, w::SubsystemType::current_discovery);
    EXPECT_EQ(parsed[1].subsystem_nqn, "nqn.2024-01.io.nvmeof:test");
    EXPECT_EQ(parsed[1].service_id, "4421");
    EXPECT_EQ(parsed[1].address, "127.0.0.2");
    EXPECT_EQ(parsed[1].transport, w::TransportType::rdma);
    EXPECT_THROW(w::parse_discovery_log(log.data(), 2 * w::kDiscoveryRecordSize),
                 std::runtime_error);
}

// TCP's TSAS: SECTYPE in its first byte, the rest zero; nothing of RDMA's read back.
TEST(RoundTrip, DiscoveryEntryTcpSectype) {
    w::DiscoveryRecord r;
    r.transport = w::TransportType::tcp;
    r.tcp.security_type = w::TcpSecurityType::tls13;
    const w::DiscoveryLogEntry e = w::discovery_entry(r);
    const auto* tsas = reinterpret_cast<const std::uint8_t*>(&e.tsas);
    EXPECT_EQ(tsas[0], 2);
    for (std::size_t i = 1; i < sizeof e.tsas; ++i) {
        ASSERT_EQ(tsas[i], 0) << "TSAS byte " << i;
    }
    const w::DiscoveryRecord parsed = w::parse_discovery_entry(e);
    EXPECT_EQ(parsed.tcp.security_type, w::TcpSecurityType::tls13);
    EXPECT_EQ(parsed.rdma, w::RdmaTransportSpecific{});
    EXPECT_EQ(w::parse_discovery_entry(w::discovery_entry({})).tcp, w::TcpTransportSpecific{});
}

TEST(RoundTrip, DiscoveryEntryTrimsSpacePadding) {
    w::DiscoveryLogEntry e = w::discovery_entry({});
    w::copy_to_space_padded(e.traddr, sizeof e.traddr, "10.0.0.1");  // SPDK-style padding
    EXPECT_EQ(w::parse_discovery_entry(e).address, "10.0.0.1");
}

TEST(RoundTrip, ReadWrite) {
    const w::RemoteBuffer buf{0x7000, 1 << 20, 42};
    const w::Sqe sqe = w::rw_command(w::IoOpcode::write, 3, 123456789012ull, 256, buf, 4096);
    EXPECT_EQ(sqe.opcode, static_cast<std::uint8_t>(w::IoOpcode::write));
    EXPECT_EQ(sqe.nsid, 3u);
    EXPECT_EQ(w::command_slba(sqe), 123456789012ull);
    EXPECT_EQ(w::command_block_count(sqe), 256u);
    EXPECT_EQ(sqe.dptr.keyed_length(), 1u << 20);
    EXPECT_EQ(sqe.dptr.keyed_key(), 42u);
    EXPECT_EQ(
        w::command_block_count(w::rw_command(w::IoOpcode::read, 1, 0, 65536, {0, 1 << 24, 1}, 1)),
        65536u);
}

TEST(RoundTrip, ReadWriteValidation) {
    const w::RemoteBuffer buf{0, 8192, 1};
    EXPECT_THROW(w::rw_command(w::IoOpcode::flush, 1, 0, 1, buf, 512), std::invalid_argument);
    EXPECT_THROW(w::rw_command(w::IoOpcode::read, 1, 0, 0, buf, 512), std::invalid_argument);
    EXPECT_THROW(w::rw_command(w::IoOpcode::read, 1, 0, 65537, {0, 1ull << 40, 1}, 1),
                 std::invalid_argument);
    EXPECT_THROW(w::rw_command(w::IoOpcode::read, 1, 0, 3, buf, 4096), std::invalid_argument);
    EXPECT_THROW(w::rw_command(w::IoOpcode::read, 1, 0, 4096, {0, 1ull << 40, 1}, 4096),
                 std::invalid_argument);  // 16 MiB is one byte above the keyed limit
}

TEST(RoundTrip, FlushWriteZeroesDatasetManagement) {
    const w::Sqe flush = w::flush_command(2);
    EXPECT_EQ(flush.opcode, 0x00);
    EXPECT_EQ(flush.dptr.length(), 0u);
    const w::Sqe wz = w::write_zeroes_command(1, 77, 16, true);
    EXPECT_EQ(w::command_slba(wz), 77u);
    EXPECT_EQ(w::command_block_count(wz), 16u);
    EXPECT_TRUE((wz.cdw12 >> w::kWriteZeroesDeallocateBit) & 1);
    const w::Sqe dsm =
        w::dataset_management_command(1, 4, w::kDsmAttributeDeallocate, {0x100, 64, 5});
    EXPECT_EQ(w::dsm_range_count(dsm), 4u);
    EXPECT_EQ(dsm.cdw11, w::kDsmAttributeDeallocate);
    EXPECT_EQ(dsm.dptr.keyed_length(), 64u);
    EXPECT_THROW(w::dataset_management_command(1, 5, 0, {0x100, 64, 5}), std::invalid_argument);
    EXPECT_THROW(w::dataset_management_command(1, 257, 0, {0, 1 << 20, 5}), std::invalid_argument);
}

TEST(RoundTrip, NamespaceDescriptors) {
    std::array<std::uint8_t, w::kIdentifyDataSize> page{};
    const std::array<std::uint8_t, 16> uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const std::array<std::uint8_t, 1> csi{0};
    std::size_t off = w::append_namespace_descriptor(page, 0, w::NamespaceIdType::uuid, uuid);
    EXPECT_EQ(off, 20u);
    off = w::append_namespace_descriptor(page, off, w::NamespaceIdType::csi, csi);
    EXPECT_EQ(off, 25u);
    const auto list = w::parse_namespace_descriptors(page);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].type, w::NamespaceIdType::uuid);
    EXPECT_TRUE(std::equal(uuid.begin(), uuid.end(), list[0].id.begin()));
    EXPECT_EQ(list[1].type, w::NamespaceIdType::csi);
    EXPECT_EQ(list[1].id.size(), 1u);
    EXPECT_EQ(w::append_namespace_descriptor(page, 4090, w::NamespaceIdType::uuid, uuid), 0u);
    // A zero-filled page is an empty list.
    std::array<std::uint8_t, w::kIdentifyDataSize> empty{};
    EXPECT_TRUE(w::parse_namespace_descriptors(empty).empty());
    // 12-byte descriptors back to back: the last header fits, its body does not.
    std::array<std::uint8_t, w::kIdentifyDataSize> overrun{};
    for (std::size_t i = 0; i + 4 <= overrun.size(); i += 12) {
        overrun[i] = static_cast<std::uint8_t>(w::NamespaceIdType::eui64);
        overrun[i + 1] = 8;
    }
    EXPECT_THROW(w::parse_namespace_descriptors(overrun), std::runtime_error);
}

TEST(RoundTrip, ActiveNamespaceList) {
    w::ActiveNamespaceList list{};
    list.nsid[0] = 1;
    list.nsid[1] = 7;
    const auto ids = w::parse_active_namespaces(list);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids[1], 7u);
}

TEST(RoundTrip, NamespaceGeometry) {
    w::IdentifyNamespace ns{};
    ns.nsze = 1 << 20;
    ns.ncap = 1 << 20;
    ns.nlbaf = 1;
    ns.flbas = 1;
    ns.lbaf[0].lbads = 9;
    ns.lbaf[1].lbads = 12;
    const w::NamespaceGeometry g = w::namespace_geometry(ns);
    EXPECT_EQ(g.lba_size, 4096u);
    EXPECT_EQ(g.size_blocks, 1u << 20);
    EXPECT_EQ(g.format.metadata_bytes, 0u);
    EXPECT_EQ(g.format.pi_type, w::PiType::none);
    ns.lbaf[1].ms = 8;
    ns.dps = 1;
    // Metadata in a separate buffer: fabrics carry it only interleaved.
    EXPECT_THROW(w::namespace_geometry(ns), std::runtime_error);
    ns.flbas = 1 | w::kFlbasExtendedMetadata;
    EXPECT_EQ(w::namespace_geometry(ns).format.metadata_bytes, 8u);
    EXPECT_NE(w::namespace_geometry(ns).format.pi_type, w::PiType::none);
    const w::BlockFormat f = w::namespace_geometry(ns).format;
    EXPECT_EQ(f.extended_bytes(), 4104u);
    EXPECT_EQ(f.pi_type, w::PiType::type1);
    EXPECT_EQ(f.guard, w::PiGuard::crc16);
    EXPECT_FALSE(f.pi_first);
    ns.dps = 3 | w::kDpsPiFirst;
    EXPECT_TRUE(w::namespace_geometry(ns).format.pi_first);
    EXPECT_EQ(w::namespace_geometry(ns).format.pi_type, w::PiType::type3);
    ns.dps = 5;  // reserved type
    EXPECT_THROW(w::namespace_geometry(ns), std::runtime_error);
    // The NVM command set's ELBAF: a 64-bit guard needs 16 bytes of metadata.
    ns.dps = 1;
    w::IdentifyNvmNamespace nvm{};
    nvm.elbaf[1] = 2u << w::kElbafPiFormatShift;
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);
    ns.lbaf[1].ms = 64;
    EXPECT_EQ(w::namespace_geometry(ns, &nvm).format.guard, w::PiGuard::crc64);
    EXPECT_EQ(w::namespace_geometry(ns, &nvm).format.pi_offset(), 4096u + 48u);
    // The 32-bit guard: a 16- to 64-bit storage tag, the reference tag the
    // rest of the 80-bit space.
    nvm.elbaf[1] = 1u << w::kElbafPiFormatShift;
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);  // STS 0
    nvm.elbaf[1] |= 24;
    nvm.lbstm = 0xFF00FF;
    const w::NamespaceGeometry g32 = w::namespace_geometry(ns, &nvm);
    EXPECT_EQ(g32.format.guard, w::PiGuard::crc32);
    EXPECT_EQ(g32.format.storage_tag_bits, 24u);
    EXPECT_EQ(g32.format.reftag_bits(), 56u);
    EXPECT_EQ(g32.storage_tag_mask, 0xFF00FFu);
    nvm.elbaf[1] = (1u << w::kElbafPiFormatShift) | 65;
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);
    // Storage tags with the 16-bit guard (0-32 bits) and the 64-bit one (0-48).
    nvm.elbaf[1] = 16;
    EXPECT_EQ(w::namespace_geometry(ns, &nvm).format.reftag_mask(), 0xFFFFu);
    nvm.elbaf[1] = 33;
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);
    nvm.elbaf[1] = (2u << w::kElbafPiFormatShift) | 48;
    EXPECT_EQ(w::namespace_geometry(ns, &nvm).format.reftag_mask(), 0u);
    nvm.elbaf[1] = (2u << w::kElbafPiFormatShift) | 49;
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);
    nvm.elbaf[1] = 3u << w::kElbafPiFormatShift;  // reserved PIF
    EXPECT_THROW(w::namespace_geometry(ns, &nvm), std::runtime_error);
    ns.dps = 0;
    ns.flbas = 1;
    ns.lbaf[1].ms = 0;
    ns.flbas = 2;  // beyond NLBAF
    EXPECT_THROW(w::namespace_geometry(ns), std::runtime_error);
    ns.flbas = 0;
    ns.lbaf[0].lbads = 8;  // 256-byte blocks are not allowed
    EXPECT_THROW(w::namespace_geometry(ns), std::runtime_error);
    ns.nlbaf = 20;
    ns.flbas = 0x20 | 0x1;  // index 17: high bits in 6:5
    EXPECT_EQ(ns.format_index(), 17);
}

// Found by tests/fuzz/identify: NSZE × LBA size past 2^64 bytes wrapped to a
// small namespace size (Namespace::size_bytes) instead of being refused.
TEST(RoundTrip, NamespaceGeometryRefusesSizesPast64Bits) {
    w::IdentifyNamespace ns{};
    ns.lbaf[0].lbads = 12;
    ns.nsze = std::uint64_t{1} << 52;  // exactly 2^64 bytes: one byte too many
    EXPECT_THROW(w::namespace_geometry(ns), std::runtime_error);
    ns.nsze = (std::uint64_t{1} << 52) - 1;  // the largest size that fits
    const w::NamespaceGeometry g = w::namespace_geometry(ns);
    EXPECT_EQ(g.size_blocks * g.lba_size, std::numeric_limits<std::uint64_t>::max() - 4095);
}

TEST(RoundTrip, AnaLogPage) {
    const std::vector<w::AnaGroup> groups = {
        {1, 7, w::AnaState::optimized, {1, 2, 3}},
        {2, 9, w::AnaState::inaccessible, {5}},
    };
    const std::vector<std::uint8_t> page = w::ana_log(42, groups, false);
    ASSERT_EQ(page.size(), 16u + 32u + 12u + 32u + 4u);
    EXPECT_EQ(page.size(), w::ana_log_size(groups, false));
    // Byte positions as the spec lays them out (little-endian).
    EXPECT_EQ(page[0], 42);    // change count
    EXPECT_EQ(page[8], 2);     // number of descriptors
    EXPECT_EQ(page[16], 1);    // first group id
    EXPECT_EQ(page[20], 3);    // its NSID count
    EXPECT_EQ(page[24], 7);    // its change count
    EXPECT_EQ(page[32], 0x1);  // optimized
    EXPECT_EQ(page[48], 1);    // NSIDs follow the descriptor
    EXPECT_EQ(page[56], 3);
    EXPECT_EQ(page[60], 2);    // second group id
    EXPECT_EQ(page[76], 0x3);  // inaccessible

    const w::AnaLog log = w::parse_ana_log(page);
    EXPECT_EQ(log.change_count, 42u);
    ASSERT_EQ(log.groups.size(), 2u);
    EXPECT_EQ(log.groups[0].nsids, (std::vector<std::uint32_t>{1, 2, 3}));
    EXPECT_EQ(log.groups[1].state, w::AnaState::inaccessible);
    ASSERT_NE(log.group_of(5), nullptr);
    EXPECT_EQ(log.group_of(5)->id, 2u);
    EXPECT_EQ(log.group_of(4), nullptr);

    // Return Groups Only: no NSID lists, and the command carries the bit.
    const std::vector<std::uint8_t> groups_only = w::ana_log(42, groups, true);
    EXPECT_EQ(groups_only.size(), 16u + 2 * 32u);
    const w::AnaLog parsed = w::parse_ana_log(groups_only);
    EXPECT_TRUE(parsed.groups[0].nsids.empty());
    const w::Sqe sqe = w::ana_log_page_command(16, w::keyed_data_block(0x1000, 64, 1), true);
    EXPECT_TRUE(w::ana_log_groups_only(sqe));
    const w::LogPageRequest request = w::parse_get_log_page(sqe);
    EXPECT_EQ(request.lid, w::LogPageId::ana);
    EXPECT_EQ(request.offset, 16u);
    EXPECT_EQ(request.length, 64u);
    EXPECT_FALSE(
        w::ana_log_groups_only(w::ana_log_page_command(0, w::keyed_data_block(0, 64, 1), false)));
}

TEST(RoundTrip, AnaLogPageTruncatedOrBadIsRefused) {
    const std::vector<w::AnaGroup> groups = {{1, 1, w::AnaState::optimized, {1, 2}}};
    std::vector<std::uint8_t> page = w::ana_log(1, groups, false);
    EXPECT_THROW(w::parse_ana_log(std::span(page.data(), 8)), std::runtime_error);
    EXPECT_THROW(w::parse_ana_log(std::span(page.data(), 40)), std::runtime_error);
    EXPECT_THROW(w::parse_ana_log(std::span(page.data(), page.size() - 4)), std::runtime_error);
    page[32] = 0x5;  // no such state
    EXPECT_THROW(w::parse_ana_log(page), std::runtime_error);
}

TEST(RoundTrip, AnaStateNames) {
    for (const auto state :
         {w::AnaState::optimized, w::AnaState::non_optimized, w::AnaState::inaccessible,
          w::AnaState::persistent_loss, w::AnaState::change}) {
        w::AnaState parsed{};
        ASSERT_TRUE(w::parse_ana_state(w::ana_state_name(state), parsed));
        EXPECT_EQ(parsed, state);
    }
    w::AnaState parsed{};
    EXPECT_FALSE(w::parse_ana_state("optimised", parsed));
    EXPECT_TRUE(w::ana_state_usable(w::AnaState::non_optimized));
    EXPECT_FALSE(w::ana_state_usable(w::AnaState::change));
}

TEST(RoundTrip, AsyncEventAnaChange) {
    const std::uint32_t dw0 = w::async_event_result(w::ana_change_event());
    EXPECT_EQ(dw0, 0x000C0302u);  // type notice, info 0x03, log page 0x0C
    EXPECT_TRUE(w::parse_async_event(dw0).is_ana_change());
    EXPECT_FALSE(w::parse_async_event(0x00040302u).is_ana_change());
    EXPECT_EQ(w::async_event_request_command().opcode,
              static_cast<std::uint8_t>(w::AdminOpcode::async_event_request));
}
