// The Zoned Namespace command set's wire layout: golden bytes from the ZNS
// specification, every builder read back through its parser, the status names,
// and each value and layout checked against libnvme's types.h.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <nvme/types.h>

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

namespace {

template <typename T>
std::array<std::uint8_t, sizeof(T)> bytes_of(const T& value) {
    std::array<std::uint8_t, sizeof(T)> out{};
    std::memcpy(out.data(), &value, sizeof value);
    return out;
}

const w::RemoteBuffer kBuffer{0x1000, 1 << 20, 7};

}  // namespace

TEST(ZnsGolden, ZoneManagementSendResetAll) {
    const auto bytes =
        bytes_of(w::zone_management_send_command(3, 0x123456789A, w::ZoneSendAction::reset, true));
    EXPECT_EQ(bytes[0], 0x79);  // opcode
    EXPECT_EQ(bytes[1], 0x40);  // PSDT: SGL
    EXPECT_EQ(bytes[4], 3);     // NSID
    // SLBA in CDW10-11 (bytes 40..47), little-endian.
    EXPECT_EQ(bytes[40], 0x9A);
    EXPECT_EQ(bytes[41], 0x78);
    EXPECT_EQ(bytes[44], 0x12);
    EXPECT_EQ(bytes[52], 0x04);  // CDW13 bits 7:0: ZSA Reset
    EXPECT_EQ(bytes[53], 0x01);  // CDW13 bit 8: Select All
    EXPECT_EQ(bytes[54], 0x00);
}

TEST(ZnsGolden, ZoneManagementReceivePartialReportOfFullZones) {
    const auto sqe = w::zone_management_receive_command(
        1, 0x80, w::ZoneReceiveAction::report, w::ZoneReportFilter::full, true,
        w::keyed_data_block(kBuffer.slice(0, 4096)));
    const auto bytes = bytes_of(sqe);
    EXPECT_EQ(bytes[0], 0x7A);
    EXPECT_EQ(bytes[40], 0x80);
    EXPECT_EQ(sqe.cdw12, 1023u);  // NUMD: 4096 bytes, 0's based dwords
    EXPECT_EQ(bytes[52], 0x00);   // ZRA: report zones
    EXPECT_EQ(bytes[53], 0x05);   // ZRASF: full zones
    EXPECT_EQ(bytes[54], 0x01);   // CDW13 bit 16: partial report
}

TEST(ZnsGolden, ZoneAppendCarriesTheZoneStartAndNlb) {
    const auto sqe = w::zone_append_command(2, 0x4000, 8, kBuffer, 512);
    const auto bytes = bytes_of(sqe);
    EXPECT_EQ(bytes[0], 0x7D);
    EXPECT_EQ(bytes[41], 0x40);  // ZSLBA 0x4000
    EXPECT_EQ(sqe.cdw12, 7u);    // NLB, 0's based
    EXPECT_EQ(sqe.dptr.keyed_length(), 4096u);
    EXPECT_THROW(w::zone_append_command(2, 0, 0, kBuffer, 512), std::invalid_argument);
}

TEST(ZnsGolden, ZoneDescriptorBytes) {
    const w::ZoneDescriptor d =
        w::zone_descriptor(static_cast<std::uint8_t>(w::ZoneType::sequential_write_required),
                           w::ZoneState::full, 0x1000, 0x800, 0x1800, w::kZoneFinishedByController);
    const auto bytes = bytes_of(d);
    EXPECT_EQ(bytes[0], 0x02);   // ZT: sequential write required
    EXPECT_EQ(bytes[1], 0xE0);   // ZS in bits 7:4: full
    EXPECT_EQ(bytes[2], 0x01);   // ZA: finished by the controller
    EXPECT_EQ(bytes[9], 0x08);   // ZCAP 0x800
    EXPECT_EQ(bytes[17], 0x10);  // ZSLBA 0x1000
    EXPECT_EQ(bytes[25], 0x18);  // WP 0x1800
    EXPECT_EQ(d.state(), w::ZoneState::full);
    EXPECT_EQ(d.type(), 0x02);
}

TEST(ZnsGolden, StatesAndStatusCodes) {
    EXPECT_EQ(static_cast<int>(w::ZoneState::empty), 0x1);
    EXPECT_EQ(static_cast<int>(w::ZoneState::implicitly_opened), 0x2);
    EXPECT_EQ(static_cast<int>(w::ZoneState::explicitly_opened), 0x3);
    EXPECT_EQ(static_cast<int>(w::ZoneState::closed), 0x4);
    EXPECT_EQ(static_cast<int>(w::ZoneState::read_only), 0xD);
    EXPECT_EQ(static_cast<int>(w::ZoneState::full), 0xE);
    EXPECT_EQ(static_cast<int>(w::ZoneState::offline), 0xF);
    // SCT 1, SC 0xB9, DNR: the CQE status word.
    EXPECT_EQ(w::Status::zoned(w::ZonedStatus::zone_is_full, true).cqe_field(),
              0x8000 | (1 << 9) | (0xB9 << 1));
}

TEST(ZnsRoundTrip, SendAndReceiveParse) {
    const auto send = w::parse_zone_management_send(
        w::zone_management_send_command(1, 0x2000, w::ZoneSendAction::finish));
    EXPECT_EQ(send.slba, 0x2000u);
    EXPECT_EQ(send.action, w::ZoneSendAction::finish);
    EXPECT_FALSE(send.select_all);

    const auto receive = w::parse_zone_management_receive(w::zone_management_receive_command(
        1, 0x3000, w::ZoneReceiveAction::extended_report, w::ZoneReportFilter::offline, false,
        w::keyed_data_block(kBuffer.slice(0, 128))));
    EXPECT_EQ(receive.slba, 0x3000u);
    EXPECT_EQ(receive.action, w::ZoneReceiveAction::extended_report);
    EXPECT_EQ(receive.filter, static_cast<std::uint8_t>(w::ZoneReportFilter::offline));
    EXPECT_FALSE(receive.partial);
    EXPECT_EQ(receive.length, 128u);
    EXPECT_THROW(w::zone_management_receive_command(1, 0, w::ZoneReceiveAction::report,
                                                    w::ZoneReportFilter::all, false,
                                                    w::keyed_data_block(kBuffer.slice(0, 60))),
                 std::invalid_argument);
    EXPECT_THROW(w::zone_management_receive_command(1, 0, w::ZoneReceiveAction::report,
                                                    w::ZoneReportFilter::all, false,
                                                    w::keyed_data_block(kBuffer.slice(0, 66))),
                 std::invalid_argument);
}

TEST(ZnsRoundTrip, ReportHoldsWhatTheBufferHolds) {
    std::vector<std::uint8_t> page(64 + 2 * 64 + 32, 0);
    w::ZoneReportHeader header{};
    header.nr_zones = 5;  // more zones match than the buffer holds
    std::memcpy(page.data(), &header, sizeof header);
    for (std::uint64_t i = 0; i < 2; ++i) {
        const auto d = w::zone_descriptor(0x2, w::ZoneState::empty, i * 0x100, 0x100, i * 0x100);
        std::memcpy(page.data() + 64 + i * 64, &d, sizeof d);
    }
    const w::ZoneReport report = w::parse_zone_report(page);
    EXPECT_EQ(report.nr_zones, 5u);
    ASSERT_EQ(report.zones.size(), 2u);
    EXPECT_EQ(report.zones[1].zslba, 0x100u);
    EXPECT_EQ(report.zones[1].state(), w::ZoneState::empty);
    EXPECT_THROW(w::parse_zone_report(std::span(page).first(63)), std::runtime_error);
    header.nr_zones = 1;
    std::memcpy(page.data(), &header, sizeof header);
    EXPECT_EQ(w::parse_zone_report(page).zones.size(), 1u);
}

TEST(ZnsRoundTrip, ExtendedReportSkipsEachDescriptorsExtension) {
    constexpr std::size_t kExtension = 64;  // ZDES 1
    std::vector<std::uint8_t> page(64 + 3 * (64 + kExtension), 0xEE);
    w::ZoneReportHeader header{};
    header.nr_zones = 3;
    std::memcpy(page.data(), &header, sizeof header);
    for (std::uint64_t i = 0; i < 3; ++i) {
        const auto d = w::zone_descriptor(0x2, w::ZoneState::closed, i * 0x100, 0x80, i * 0x100 + 1,
                                          w::kZoneDescriptorExtensionValid);
        std::memcpy(page.data() + 64 + i * (64 + kExtension), &d, sizeof d);
    }
    const w::ZoneReport report = w::parse_zone_report(page, kExtension);
    ASSERT_EQ(report.zones.size(), 3u);
    EXPECT_EQ(report.zones[2].zslba, 0x200u);
    EXPECT_EQ(report.zones[2].wp, 0x201u);
    // Read as a plain report the second descriptor would be extension bytes.
    EXPECT_NE(w::parse_zone_report(page).zones[1].zslba, 0x100u);
}

TEST(ZnsIdentify, GeometryOfTheFormatInUse) {
    w::IdentifyZonedNamespace zns{};
    zns.zoc = w::kZocVariableZoneCapacity;
    zns.ozcs = w::kOzcsReadAcrossZoneBoundaries;
    zns.mor = 3;                        // 0's based: four open zones
    zns.mar = w::kNoZoneResourceLimit;  // no limit
    zns.lbafe[0].zsze = 4096;
    zns.lbafe[2].zsze = 256;
    zns.lbafe[2].zdes = 2;
    const w::ZonedGeometry g = w::zoned_geometry(zns, 2);
    EXPECT_EQ(g.zone_blocks, 256u);
    EXPECT_EQ(g.max_open, 4u);
    EXPECT_EQ(g.max_active, 0u);
    EXPECT_EQ(g.descriptor_extension_bytes, 128u);
    EXPECT_EQ(g.zoc, w::kZocVariableZoneCapacity);
    EXPECT_EQ(g.ozcs, w::kOzcsReadAcrossZoneBoundaries);
    EXPECT_EQ(w::zoned_geometry(zns, 0).zone_blocks, 4096u);
    EXPECT_THROW(w::zoned_geometry(zns, 1), std::runtime_error);  // ZSZE 0
    EXPECT_THROW(w::zoned_geometry(zns, 64), std::runtime_error);
    zns.mor = 0xFFFFFFFE;  // the largest limit still fits
    EXPECT_EQ(w::zoned_geometry(zns, 0).max_open, 0xFFFFFFFFu);
}

TEST(ZnsIdentify, ZoneAppendSizeLimitAndNamespaceCsi) {
    EXPECT_EQ(w::zone_append_size_limit(0, 4096), 0u);  // the MDTS
    EXPECT_EQ(w::zone_append_size_limit(5, 4096), 128u * 1024);
    EXPECT_EQ(w::zone_append_size_limit(1, 8192), 16u * 1024);
    std::array<std::uint8_t, w::kIdentifyDataSize> page{};
    EXPECT_EQ(w::namespace_csi(page), std::nullopt);
    const std::uint8_t uuid[16] = {1, 2, 3};
    std::size_t at = w::append_namespace_descriptor(page, 0, w::NamespaceIdType::uuid, uuid);
    EXPECT_EQ(w::namespace_csi(page), std::nullopt);
    const std::uint8_t zoned[1] = {w::kCsiZoned};
    at = w::append_namespace_descriptor(page, at, w::NamespaceIdType::csi, zoned);
    ASSERT_NE(at, 0u);
    EXPECT_EQ(w::namespace_csi(page), w::kCsiZoned);
}

TEST(ZnsRoundTrip, AppendResultIsTheCqeResult) {
    w::Cqe cqe{};
    cqe.dw0 = 0x89ABCDEF;
    cqe.dw1 = 0x1;
    EXPECT_EQ(w::zone_append_lba(cqe), 0x189ABCDEFull);
}

TEST(ZnsRoundTrip, IdentifyAndLogPageCarryTheCommandSet) {
    const auto ns =
        w::identify_command_set_namespace(4, w::kCsiZoned, w::keyed_data_block(kBuffer));
    EXPECT_EQ(w::identify_cns(ns), w::IdentifyCns::io_command_set_namespace);
    EXPECT_EQ(w::identify_csi(ns), 0x02);
    const auto ctrl =
        w::identify_command_set_controller(w::kCsiZoned, w::keyed_data_block(kBuffer));
    EXPECT_EQ(w::identify_cns(ctrl), w::IdentifyCns::io_command_set_controller);
    EXPECT_EQ(ctrl.cdw11, 0x02000000u);
    const auto sets = w::identify_command_set_combinations(0x1234, w::keyed_data_block(kBuffer));
    EXPECT_EQ(sets.cdw10, 0x1234001Cu);
    EXPECT_EQ(w::identify_cntid(sets), 0x1234);
    const auto log = w::get_log_page_command(w::LogPageId::commands_supported, 0,
                                             w::keyed_data_block(kBuffer.slice(0, 4096)),
                                             w::kBroadcastNsid, w::kCsiZoned);
    EXPECT_EQ(log.cdw14, 0x02000000u);
    EXPECT_EQ(w::parse_get_log_page(log).csi, w::kCsiZoned);
    EXPECT_EQ(w::parse_get_log_page(log).length, 4096u);
}

TEST(ZnsStatus, NamesOnTheIoQueue) {
    const w::StatusContext append{static_cast<std::uint8_t>(w::IoOpcode::zone_append),
                                  w::QueueKind::io};
    const std::pair<w::ZonedStatus, const char*> names[] = {
        {w::ZonedStatus::zone_boundary_error, "Zone Boundary Error"},
        {w::ZonedStatus::zone_is_full, "Zone Is Full"},
        {w::ZonedStatus::zone_is_read_only, "Zone Is Read Only"},
        {w::ZonedStatus::zone_is_offline, "Zone Is Offline"},
        {w::ZonedStatus::zone_invalid_write, "Zone Invalid Write"},
        {w::ZonedStatus::too_many_active_zones, "Too Many Active Zones"},
        {w::ZonedStatus::too_many_open_zones, "Too Many Open Zones"},
        {w::ZonedStatus::invalid_zone_state_transition, "Invalid Zone State Transition"},
    };
    for (const auto& [status, name] : names) {
        EXPECT_EQ(w::status_name(w::Status::zoned(status), append), name);
        EXPECT_TRUE(w::Status::zoned(status).is(status));
    }
    EXPECT_EQ(w::describe(w::Status::zoned(w::ZonedStatus::zone_invalid_write, true), append),
              "Zone Invalid Write (SCT 0x1 SC 0xbc, DNR)");
    EXPECT_EQ(w::command_name(0x79, w::QueueKind::io), "Zone Management Send");
    EXPECT_EQ(w::command_name(0x7A, w::QueueKind::io), "Zone Management Receive");
    EXPECT_EQ(w::command_name(0x7D, w::QueueKind::io), "Zone Append");
}

TEST(ZnsLibnvme, ValuesMatch) {
    EXPECT_EQ(w::kCsiNvm, NVME_CSI_NVM);
    EXPECT_EQ(w::kCsiZoned, NVME_CSI_ZNS);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::io_command_set_namespace), NVME_IDENTIFY_CNS_CSI_NS);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::io_command_set_controller),
              NVME_IDENTIFY_CNS_CSI_CTRL);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::io_command_set_combinations),
              NVME_IDENTIFY_CNS_COMMAND_SET_STRUCTURE);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::zone_management_send), nvme_zns_cmd_mgmt_send);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::zone_management_receive), nvme_zns_cmd_mgmt_recv);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::zone_append), nvme_zns_cmd_append);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::close), NVME_ZNS_ZSA_CLOSE);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::finish), NVME_ZNS_ZSA_FINISH);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::open), NVME_ZNS_ZSA_OPEN);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::reset), NVME_ZNS_ZSA_RESET);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::offline), NVME_ZNS_ZSA_OFFLINE);
    EXPECT_EQ(static_cast<int>(w::ZoneSendAction::set_descriptor_extension),
              NVME_ZNS_ZSA_SET_DESC_EXT);
    EXPECT_EQ(static_cast<int>(w::ZoneReceiveAction::report), NVME_ZNS_ZRA_REPORT_ZONES);
    EXPECT_EQ(static_cast<int>(w::ZoneReceiveAction::extended_report),
              NVME_ZNS_ZRA_EXTENDED_REPORT_ZONES);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::all), NVME_ZNS_ZRAS_REPORT_ALL);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::empty), NVME_ZNS_ZRAS_REPORT_EMPTY);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::implicitly_opened),
              NVME_ZNS_ZRAS_REPORT_IMPL_OPENED);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::explicitly_opened),
              NVME_ZNS_ZRAS_REPORT_EXPL_OPENED);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::closed), NVME_ZNS_ZRAS_REPORT_CLOSED);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::full), NVME_ZNS_ZRAS_REPORT_FULL);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::read_only), NVME_ZNS_ZRAS_REPORT_READ_ONLY);
    EXPECT_EQ(static_cast<int>(w::ZoneReportFilter::offline), NVME_ZNS_ZRAS_REPORT_OFFLINE);
    EXPECT_EQ(static_cast<int>(w::ZoneType::sequential_write_required),
              NVME_ZONE_TYPE_SEQWRITE_REQ);
    EXPECT_EQ(static_cast<int>(w::ZoneState::empty), NVME_ZNS_ZS_EMPTY);
    EXPECT_EQ(static_cast<int>(w::ZoneState::implicitly_opened), NVME_ZNS_ZS_IMPL_OPEN);
    EXPECT_EQ(static_cast<int>(w::ZoneState::explicitly_opened), NVME_ZNS_ZS_EXPL_OPEN);
    EXPECT_EQ(static_cast<int>(w::ZoneState::closed), NVME_ZNS_ZS_CLOSED);
    EXPECT_EQ(static_cast<int>(w::ZoneState::read_only), NVME_ZNS_ZS_READ_ONLY);
    EXPECT_EQ(static_cast<int>(w::ZoneState::full), NVME_ZNS_ZS_FULL);
    EXPECT_EQ(static_cast<int>(w::ZoneState::offline), NVME_ZNS_ZS_OFFLINE);
    EXPECT_EQ(w::kZoneFinishedByController, NVME_ZNS_ZA_ZFC);
    EXPECT_EQ(w::kZoneFinishRecommended, NVME_ZNS_ZA_FZR);
    EXPECT_EQ(w::kZoneResetRecommended, NVME_ZNS_ZA_RZR);
    EXPECT_EQ(w::kZoneDescriptorExtensionValid, NVME_ZNS_ZA_ZDEV);
    // libnvme's control flags are CDW12 bits 31:16.
    EXPECT_EQ(1u << w::kZoneAppendPiRemapBit, std::uint32_t{NVME_IO_ZNS_APPEND_PIREMAP} << 16);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::zone_boundary_error), NVME_SC_ZNS_BOUNDARY_ERROR);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::zone_is_full), NVME_SC_ZNS_FULL);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::zone_is_read_only), NVME_SC_ZNS_READ_ONLY);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::zone_is_offline), NVME_SC_ZNS_OFFLINE);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::zone_invalid_write), NVME_SC_ZNS_INVALID_WRITE);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::too_many_active_zones), NVME_SC_ZNS_TOO_MANY_ACTIVE);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::too_many_open_zones), NVME_SC_ZNS_TOO_MANY_OPENS);
    EXPECT_EQ(static_cast<int>(w::ZonedStatus::invalid_zone_state_transition),
              NVME_SC_ZNS_INVAL_TRANSITION);
    EXPECT_EQ(w::kEffectsCommandSupported, NVME_CMD_EFFECTS_CSUPP);
    EXPECT_EQ(w::kEffectsLogicalBlockContentChange, NVME_CMD_EFFECTS_LBCC);
    EXPECT_EQ(w::kLpaCommandsSupportedEffects, NVME_CTRL_LPA_CMD_EFFECTS);
    EXPECT_EQ(static_cast<int>(w::LogPageId::commands_supported), NVME_LOG_LID_CMD_EFFECTS);
}

TEST(ZnsLibnvme, LayoutsMatch) {
    EXPECT_EQ(sizeof(w::IdentifyZonedNamespace), sizeof(nvme_zns_id_ns));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, zoc), offsetof(nvme_zns_id_ns, zoc));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, ozcs), offsetof(nvme_zns_id_ns, ozcs));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, mar), offsetof(nvme_zns_id_ns, mar));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, mor), offsetof(nvme_zns_id_ns, mor));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, rrl), offsetof(nvme_zns_id_ns, rrl));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, frl), offsetof(nvme_zns_id_ns, frl));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, frl3), offsetof(nvme_zns_id_ns, frl3));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, numzrwa), offsetof(nvme_zns_id_ns, numzrwa));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, zrwacap), offsetof(nvme_zns_id_ns, zrwacap));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, lbafe), offsetof(nvme_zns_id_ns, lbafe));
    EXPECT_EQ(offsetof(w::IdentifyZonedNamespace, vendor_specific), offsetof(nvme_zns_id_ns, vs));
    EXPECT_EQ(sizeof(w::ZonedLbaFormatExtension), sizeof(nvme_zns_lbafe));
    EXPECT_EQ(offsetof(w::ZonedLbaFormatExtension, zdes), offsetof(nvme_zns_lbafe, zdes));
    EXPECT_EQ(sizeof(w::IdentifyZonedController), sizeof(nvme_zns_id_ctrl));
    EXPECT_EQ(sizeof(w::ZoneDescriptor), sizeof(nvme_zns_desc));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, zs), offsetof(nvme_zns_desc, zs));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, za), offsetof(nvme_zns_desc, za));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, zai), offsetof(nvme_zns_desc, zai));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, zcap), offsetof(nvme_zns_desc, zcap));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, zslba), offsetof(nvme_zns_desc, zslba));
    EXPECT_EQ(offsetof(w::ZoneDescriptor, wp), offsetof(nvme_zns_desc, wp));
    EXPECT_EQ(sizeof(w::ZoneReportHeader), offsetof(nvme_zone_report, entries));
    EXPECT_EQ(sizeof(w::CommandsSupportedEffectsLog), sizeof(nvme_cmd_effects_log));
    EXPECT_EQ(offsetof(w::CommandsSupportedEffectsLog, iocs), offsetof(nvme_cmd_effects_log, iocs));
    EXPECT_EQ(sizeof(w::IoCommandSetCombinations), sizeof(nvme_id_iocs));
}
