// CommandCore: zoned namespaces (the Zoned Namespace command set) driven by raw
// commands: the zone state machine, each zone status, Zone Append, reports,
// conventional zones, the open and active limits, Select All and the zone faults.
#include <gtest/gtest.h>

#include <cstring>

#include "core_harness.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target::testing {
namespace {

using wire::GenericStatus;
using wire::IoOpcode;
using wire::ZonedStatus;
using wire::ZoneReportFilter;
using wire::ZoneSendAction;
using wire::ZoneState;

constexpr std::uint32_t kLba = 512;
constexpr std::uint64_t kZoneBlocks = 128;  // 64 KiB zones
constexpr std::uint32_t kZones = 16;        // of a 1 MiB namespace

wire::Status zoned(ZonedStatus s) {
    return wire::Status::zoned(s, true);
}

ZonedConfig zones_of(std::uint64_t capacity_blocks = kZoneBlocks) {
    ZonedConfig z;
    z.zone_bytes = kZoneBlocks * kLba;
    z.capacity_bytes = capacity_blocks * kLba;
    return z;
}

// NSID 1 zoned, NSID 2 plain, in one subsystem.
TargetConfig zoned_config(const ZonedConfig& z = zones_of()) {
    TargetConfig config = default_config();
    config.subsystems[0].namespaces[0].zoned = z;
    NamespaceConfig plain;
    plain.size_bytes = 1 << 20;
    config.subsystems[0].namespaces.push_back(plain);
    return config;
}

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
    }
    return bytes;
}

wire::RemoteBuffer buffer(std::size_t bytes) {
    return {kHostAddress, bytes, kRkey};
}

class Zoned : public ::testing::Test {
  protected:
    void start(const TargetConfig& config) {
        h_ = std::make_unique<CoreHarness>(config);
        admin_ = CoreHarness::new_queue(0);
        io_ = h_->bring_up_io(admin_);
    }
    void SetUp() override { start(zoned_config()); }

    Result write(std::uint64_t slba, std::uint32_t blocks, std::uint8_t seed = 1,
                 std::uint32_t nsid = 1) {
        return h_->run(io_,
                       wire::rw_command(IoOpcode::write, nsid, slba, blocks,
                                        buffer(std::size_t{blocks} * kLba), kLba),
                       pattern(std::size_t{blocks} * kLba, seed));
    }
    Result read(std::uint64_t slba, std::uint32_t blocks) {
        return h_->run(io_, wire::rw_command(IoOpcode::read, 1, slba, blocks,
                                             buffer(std::size_t{blocks} * kLba), kLba));
    }
    Result append(std::uint64_t zslba, std::uint32_t blocks, std::uint8_t seed = 1) {
        return h_->run(
            io_,
            wire::zone_append_command(1, zslba, blocks, buffer(std::size_t{blocks} * kLba), kLba),
            pattern(std::size_t{blocks} * kLba, seed));
    }
    wire::Status send(std::uint64_t slba, ZoneSendAction action, bool all = false,
                      std::uint32_t nsid = 1) {
        return h_->run(io_, wire::zone_management_send_command(nsid, slba, action, all)).status();
    }
    Result receive(std::uint64_t slba, ZoneReportFilter filter, bool partial, std::size_t bytes,
                   wire::ZoneReceiveAction action = wire::ZoneReceiveAction::report) {
        return h_->run(io_, wire::zone_management_receive_command(1, slba, action, filter, partial,
                                                                  CoreHarness::keyed(bytes)));
    }
    wire::ZoneReport report(std::uint64_t slba = 0, ZoneReportFilter filter = ZoneReportFilter::all,
                            bool partial = false, std::size_t bytes = 64 + kZones * 64) {
        const Result r = receive(slba, filter, partial, bytes);
        EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
        EXPECT_EQ(r.data.size(), bytes);
        return wire::parse_zone_report(r.data);
    }
    wire::ZoneDescriptor zone(std::uint32_t index) {
        const wire::ZoneReport r = report(index * kZoneBlocks, ZoneReportFilter::all, true, 128);
        EXPECT_EQ(r.zones.size(), 1u);
        return r.zones.empty() ? wire::ZoneDescriptor{} : r.zones[0];
    }
    ZoneState state(std::uint32_t index) { return zone(index).state(); }
    Result identify(wire::Sqe sqe) {
        sqe.dptr = CoreHarness::keyed(wire::kIdentifyDataSize);
        return h_->run(admin_, sqe);
    }

    std::unique_ptr<CoreHarness> h_;
    QueueState admin_;
    QueueState io_;
};

// ---- what the controller announces -------------------------------------------

TEST_F(Zoned, CapabilitiesAndCommandSetSelection) {
    const auto cap =
        wire::Capabilities{h_->property_get(admin_, wire::Property::cap).cqe.result64()};
    EXPECT_TRUE(cap.supports_nvm_command_set());
    EXPECT_TRUE(cap.supports_io_command_sets());
    // CC.CSS = 110b enables the controller; on a subsystem with no zoned
    // namespace it is refused (CSTS.CFS), as before.
    for (const bool with_zones : {true, false}) {
        CoreHarness h(with_zones ? zoned_config() : default_config());
        QueueState admin = CoreHarness::new_queue(0);
        ASSERT_TRUE(h.connect(admin).status().ok());
        const auto cc = wire::ControllerConfig::make(
            {.enable = true, .command_set = wire::CommandSetSelected::io_command_sets});
        ASSERT_TRUE(h.property_set(admin, wire::Property::cc, cc.raw).status().ok());
        const wire::ControllerStatus csts{h.property_get(admin, wire::Property::csts).cqe.dw0};
        EXPECT_EQ(csts.ready(), with_zones);
        EXPECT_EQ(csts.fatal(), !with_zones);
        const auto plain_cap =
            wire::Capabilities{h.property_get(admin, wire::Property::cap).cqe.result64()};
        EXPECT_EQ(plain_cap.supports_io_command_sets(), with_zones);
    }
}

TEST_F(Zoned, IdentifyZonedNamespaceAndController) {
    TargetConfig config = zoned_config();
    config.subsystems[0].namespaces[0].zoned->max_open = 3;
    config.subsystems[0].namespaces[0].zoned->max_active = 5;
    config.limits.zasl = 2;
    start(config);
    Result r = identify(wire::identify_command_set_namespace(1, wire::kCsiZoned, {}));
    ASSERT_TRUE(r.status().ok());
    wire::IdentifyZonedNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.zoc, 0);
    EXPECT_EQ(ns.ozcs, wire::kOzcsReadAcrossZoneBoundaries);
    EXPECT_EQ(ns.mor, 2u);  // 0's based
    EXPECT_EQ(ns.mar, 4u);
    EXPECT_EQ(ns.lbafe[0].zsze, kZoneBlocks);
    EXPECT_EQ(ns.lbafe[0].zdes, 0);
    // The NVM command set's data answers for a zoned namespace too; the plain
    // namespace has no zoned data.
    EXPECT_TRUE(identify(wire::identify_command_set_namespace(1, wire::kCsiNvm, {})).status().ok());
    EXPECT_EQ(identify(wire::identify_command_set_namespace(2, wire::kCsiZoned, {})).status(),
              generic(GenericStatus::invalid_field));

    r = identify(wire::identify_command_set_controller(wire::kCsiZoned, {}));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data[0], 2);  // ZASL
    r = identify(wire::identify_command_set_combinations(io_.cntlid, {}));
    ASSERT_TRUE(r.status().ok());
    wire::IoCommandSetCombinations sets{};
    std::memcpy(&sets, r.data.data(), sizeof sets);
    EXPECT_EQ(sets.vector[0], wire::kIocsNvm | wire::kIocsZoned);
    EXPECT_EQ(sets.vector[1], 0u);
}

TEST_F(Zoned, UnlimitedResourcesReadAllOnes) {
    const Result r = identify(wire::identify_command_set_namespace(1, wire::kCsiZoned, {}));
    wire::IdentifyZonedNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.mor, wire::kNoZoneResourceLimit);
    EXPECT_EQ(ns.mar, wire::kNoZoneResourceLimit);
    // max_active alone limits the open zones too: MOR = MAR.
    TargetConfig config = zoned_config();
    config.subsystems[0].namespaces[0].zoned->max_active = 4;
    start(config);
    const Result limited = identify(wire::identify_command_set_namespace(1, wire::kCsiZoned, {}));
    std::memcpy(&ns, limited.data.data(), sizeof ns);
    EXPECT_EQ(ns.mor, 3u);
    EXPECT_EQ(ns.mar, 3u);
}

TEST_F(Zoned, DescriptorsNameEachNamespacesCommandSet) {
    for (const auto& [nsid, csi] : {std::pair{1u, wire::kCsiZoned}, std::pair{2u, wire::kCsiNvm}}) {
        const Result r =
            identify(wire::identify_command(wire::IdentifyCns::namespace_descriptors, nsid, {}));
        ASSERT_TRUE(r.status().ok());
        const auto list = wire::parse_namespace_descriptors(
            std::span<const std::uint8_t, wire::kIdentifyDataSize>(r.data.data(),
                                                                   wire::kIdentifyDataSize));
        ASSERT_EQ(list.size(), 2u);
        EXPECT_EQ(list[0].type, wire::NamespaceIdType::nguid);
        EXPECT_EQ(list[1].type, wire::NamespaceIdType::csi);
        EXPECT_EQ(list[1].id, std::vector<std::uint8_t>{csi});
    }
}

TEST_F(Zoned, CommandsSupportedAndEffectsPerCommandSet) {
    const Result id = identify(wire::identify_command(wire::IdentifyCns::controller, 0, {}));
    EXPECT_EQ(id.data[offsetof(wire::IdentifyController, lpa)], wire::kLpaCommandsSupportedEffects);
    auto effects = [&](std::uint8_t csi) {
        const Result r = h_->run(admin_, wire::get_log_page_command(
                                             wire::LogPageId::commands_supported, 0,
                                             CoreHarness::keyed(4096), wire::kBroadcastNsid, csi));
        EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
        wire::CommandsSupportedEffectsLog log{};
        std::memcpy(&log, r.data.data(), std::min(r.data.size(), sizeof log));
        return log;
    };
    const auto supported = [](std::uint32_t entry) {
        return (entry & wire::kEffectsCommandSupported) != 0;
    };
    const wire::CommandsSupportedEffectsLog zns = effects(wire::kCsiZoned);
    // Linux's host makes a zoned namespace read only without Zone Append here.
    EXPECT_TRUE(supported(zns.iocs[static_cast<std::uint8_t>(IoOpcode::zone_append)]));
    EXPECT_NE(zns.iocs[static_cast<std::uint8_t>(IoOpcode::zone_append)] &
                  wire::kEffectsLogicalBlockContentChange,
              0u);
    EXPECT_TRUE(supported(zns.iocs[static_cast<std::uint8_t>(IoOpcode::zone_management_send)]));
    EXPECT_TRUE(supported(zns.iocs[static_cast<std::uint8_t>(IoOpcode::zone_management_receive)]));
    EXPECT_TRUE(supported(zns.acs[static_cast<std::uint8_t>(wire::AdminOpcode::identify)]));
    const wire::CommandsSupportedEffectsLog nvm = effects(wire::kCsiNvm);
    EXPECT_TRUE(supported(nvm.iocs[static_cast<std::uint8_t>(IoOpcode::write)]));
    EXPECT_FALSE(supported(nvm.iocs[static_cast<std::uint8_t>(IoOpcode::zone_append)]));
    EXPECT_EQ(h_->run(admin_, wire::get_log_page_command(wire::LogPageId::commands_supported, 0,
                                                         CoreHarness::keyed(4096), 0, 1))
                  .status(),
              generic(GenericStatus::invalid_field));
}

TEST(ZonedPlain, PlainSubsystemsAnswerAsBefore) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    auto id = [&](wire::Sqe sqe) {
        sqe.dptr = CoreHarness::keyed(4096);
        return h.run(admin, sqe).status();
    };
    EXPECT_EQ(id(wire::identify_command_set_controller(wire::kCsiZoned, {})),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(id(wire::identify_command_set_namespace(1, wire::kCsiZoned, {})),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(id(wire::identify_command_set_combinations(io.cntlid, {})),
              generic(GenericStatus::invalid_field));
    EXPECT_TRUE(id(wire::identify_command_set_controller(wire::kCsiNvm, {})).ok());
    // The zone commands are not the NVM command set's.
    EXPECT_EQ(h.run(io, wire::zone_management_send_command(1, 0, ZoneSendAction::reset)).status(),
              generic(GenericStatus::invalid_opcode));
    EXPECT_EQ(
        h.run(io, wire::zone_append_command(1, 0, 1, buffer(512), 512), pattern(512, 1)).status(),
        generic(GenericStatus::invalid_opcode));
}

TEST_F(Zoned, ZoneCommandsOnThePlainNamespaceOfTheSubsystem) {
    EXPECT_EQ(send(0, ZoneSendAction::reset, false, 2), generic(GenericStatus::invalid_opcode));
    EXPECT_TRUE(write(5, 1, 1, 2).status().ok());  // anywhere, as before
}

// ---- the state machine ---------------------------------------------------------

TEST_F(Zoned, WritesMoveTheWritePointerAndFillTheZone) {
    EXPECT_EQ(state(1), ZoneState::empty);
    EXPECT_EQ(zone(1).wp, kZoneBlocks);
    ASSERT_TRUE(write(kZoneBlocks, 8).status().ok());
    EXPECT_EQ(state(1), ZoneState::implicitly_opened);
    EXPECT_EQ(zone(1).wp, kZoneBlocks + 8);
    EXPECT_EQ(zone(1).zcap, kZoneBlocks);
    EXPECT_EQ(zone(1).type(), static_cast<std::uint8_t>(wire::ZoneType::sequential_write_required));
    // Write Zeroes is a write too.
    ASSERT_TRUE(h_->run(io_, wire::write_zeroes_command(1, kZoneBlocks + 8, 8)).status().ok());
    EXPECT_EQ(zone(1).wp, kZoneBlocks + 16);
    ASSERT_TRUE(write(kZoneBlocks + 16, kZoneBlocks - 16).status().ok());
    EXPECT_EQ(state(1), ZoneState::full);
    EXPECT_EQ(zone(1).wp, ~std::uint64_t{0});  // not valid in a full zone
    EXPECT_EQ(write(kZoneBlocks + 16, 1).status(), zoned(ZonedStatus::zone_is_full));
    EXPECT_EQ(read(kZoneBlocks + 16, 8).data, pattern(8 * kLba, 1));
}

TEST_F(Zoned, WriteErrors) {
    ASSERT_TRUE(write(0, 4).status().ok());
    EXPECT_EQ(write(0, 4).status(), zoned(ZonedStatus::zone_invalid_write));  // behind the WP
    EXPECT_EQ(write(8, 4).status(), zoned(ZonedStatus::zone_invalid_write));  // ahead of it
    EXPECT_EQ(write(kZoneBlocks + 1, 1).status(), zoned(ZonedStatus::zone_invalid_write));
    // From the WP past the zone's end.
    EXPECT_EQ(write(4, kZoneBlocks).status(), zoned(ZonedStatus::zone_boundary_error));
    EXPECT_EQ(zone(0).wp, 4u);  // nothing moved
    const wire::StatusContext write_context{static_cast<std::uint8_t>(IoOpcode::write),
                                            wire::QueueKind::io};
    EXPECT_EQ(wire::status_name(write(4, kZoneBlocks).status(), write_context),
              "Zone Boundary Error");
}

TEST_F(Zoned, ZoneCapacityBelowItsSize) {
    start(zoned_config(zones_of(100)));
    EXPECT_EQ(zone(0).zcap, 100u);
    EXPECT_EQ(write(0, 101).status(), zoned(ZonedStatus::zone_boundary_error));
    ASSERT_TRUE(write(0, 100).status().ok());
    EXPECT_EQ(state(0), ZoneState::full);
    // The blocks past the capacity read as zeroes and are never written.
    EXPECT_EQ(read(100, 28).data, std::vector<std::uint8_t>(28 * kLba, 0));
    EXPECT_EQ(write(100, 1).status(), zoned(ZonedStatus::zone_is_full));
}

TEST_F(Zoned, ReadsOfUnwrittenBlocksAndAcrossZones) {
    EXPECT_EQ(read(0, 8).data, std::vector<std::uint8_t>(8 * kLba, 0));
    ASSERT_TRUE(write(kZoneBlocks, 8, 3).status().ok());
    // OZCS bit 0: a read may cross the boundary; past the WP it reads zeroes.
    std::vector<std::uint8_t> expected(16 * kLba, 0);
    const auto written = pattern(8 * kLba, 3);
    std::copy(written.begin(), written.end(), expected.begin() + 8 * kLba);
    std::vector<std::uint8_t> tail(8 * kLba, 0);
    expected.insert(expected.end(), tail.begin(), tail.end());
    EXPECT_EQ(read(kZoneBlocks - 8, 24).data, expected);
}

TEST_F(Zoned, OpenCloseFinishReset) {
    EXPECT_TRUE(send(0, ZoneSendAction::open).ok());
    EXPECT_EQ(state(0), ZoneState::explicitly_opened);
    EXPECT_TRUE(send(0, ZoneSendAction::open).ok());  // already open
    ASSERT_TRUE(write(0, 4, 9).status().ok());
    EXPECT_EQ(state(0), ZoneState::explicitly_opened);  // a write keeps it explicit
    EXPECT_TRUE(send(0, ZoneSendAction::close).ok());
    EXPECT_EQ(state(0), ZoneState::closed);
    EXPECT_EQ(zone(0).wp, 4u);
    ASSERT_TRUE(write(4, 4).status().ok());  // a write reopens a closed zone implicitly
    EXPECT_EQ(state(0), ZoneState::implicitly_opened);
    EXPECT_TRUE(send(0, ZoneSendAction::open).ok());
    EXPECT_EQ(state(0), ZoneState::explicitly_opened);
    EXPECT_TRUE(send(0, ZoneSendAction::finish).ok());
    EXPECT_EQ(state(0), ZoneState::full);
    EXPECT_TRUE(send(0, ZoneSendAction::finish).ok());
    EXPECT_EQ(write(8, 1).status(), zoned(ZonedStatus::zone_is_full));
    EXPECT_EQ(read(0, 4).data, pattern(4 * kLba, 9));
    EXPECT_TRUE(send(0, ZoneSendAction::reset).ok());
    EXPECT_EQ(state(0), ZoneState::empty);
    EXPECT_EQ(zone(0).wp, 0u);
    EXPECT_EQ(read(0, 8).data, std::vector<std::uint8_t>(8 * kLba, 0));  // reset zeroes
    EXPECT_TRUE(send(0, ZoneSendAction::reset).ok());                    // already empty
    // An empty zone finishes straight to full.
    EXPECT_TRUE(send(kZoneBlocks, ZoneSendAction::finish).ok());
    EXPECT_EQ(state(1), ZoneState::full);
}

TEST_F(Zoned, InvalidTransitionsAndFields) {
    const auto invalid = zoned(ZonedStatus::invalid_zone_state_transition);
    EXPECT_EQ(send(0, ZoneSendAction::close), invalid);    // empty
    EXPECT_EQ(send(0, ZoneSendAction::offline), invalid);  // only from read only
    ASSERT_TRUE(send(0, ZoneSendAction::finish).ok());
    EXPECT_EQ(send(0, ZoneSendAction::open), invalid);  // full
    EXPECT_EQ(send(0, ZoneSendAction::close), invalid);
    // SLBA not a zone start, past the end; actions this target lacks.
    EXPECT_EQ(send(1, ZoneSendAction::reset), generic(GenericStatus::invalid_field));
    EXPECT_EQ(send(kZones * kZoneBlocks, ZoneSendAction::reset),
              generic(GenericStatus::lba_out_of_range));
    EXPECT_EQ(send(0, ZoneSendAction::set_descriptor_extension),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(send(0, static_cast<ZoneSendAction>(0x7)), generic(GenericStatus::invalid_field));
    EXPECT_EQ(send(0, static_cast<ZoneSendAction>(0x7), true),
              generic(GenericStatus::invalid_field));
}

// ---- Zone Append ----------------------------------------------------------------

TEST_F(Zoned, AppendReturnsTheLbaWritten) {
    ASSERT_TRUE(write(2 * kZoneBlocks, 3, 1).status().ok());
    Result r = append(2 * kZoneBlocks, 5, 2);
    ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
    EXPECT_EQ(wire::zone_append_lba(r.cqe), 2 * kZoneBlocks + 3);
    r = append(2 * kZoneBlocks, 2, 3);
    EXPECT_EQ(wire::zone_append_lba(r.cqe), 2 * kZoneBlocks + 8);
    EXPECT_EQ(zone(2).wp, 2 * kZoneBlocks + 10);
    EXPECT_EQ(state(2), ZoneState::implicitly_opened);
    EXPECT_EQ(read(2 * kZoneBlocks + 3, 5).data, pattern(5 * kLba, 2));
    EXPECT_EQ(read(2 * kZoneBlocks + 8, 2).data, pattern(2 * kLba, 3));
    EXPECT_EQ(h_->stats().of_namespace(kSubnqn, 1).write_commands, 3u);
}

TEST_F(Zoned, AppendErrors) {
    // ZSLBA must be the zone's first block.
    EXPECT_EQ(append(kZoneBlocks + 1, 1).status(), generic(GenericStatus::invalid_field));
    ASSERT_TRUE(append(0, kZoneBlocks - 2).status().ok());
    EXPECT_EQ(append(0, 4).status(), zoned(ZonedStatus::zone_boundary_error));
    ASSERT_TRUE(append(0, 2).status().ok());
    EXPECT_EQ(state(0), ZoneState::full);
    EXPECT_EQ(append(0, 1).status(), zoned(ZonedStatus::zone_is_full));
    EXPECT_EQ(append(kZones * kZoneBlocks, 1).status(), generic(GenericStatus::lba_out_of_range));
}

TEST_F(Zoned, AppendAboveZaslIsRefused) {
    TargetConfig config = zoned_config();
    config.limits.zasl = 1;  // 8 KiB
    start(config);
    EXPECT_TRUE(append(0, 16).status().ok());
    EXPECT_EQ(append(0, 17).status(), generic(GenericStatus::invalid_field));
    EXPECT_EQ(zone(0).wp, 16u);
    // A Write of the same size is bound by MDTS only.
    EXPECT_TRUE(write(16, 17).status().ok());
}

// ---- reports ----------------------------------------------------------------------

TEST_F(Zoned, ReportListsEveryZone) {
    const wire::ZoneReport all = report();
    EXPECT_EQ(all.nr_zones, kZones);
    ASSERT_EQ(all.zones.size(), kZones);
    for (std::uint32_t i = 0; i < kZones; ++i) {
        EXPECT_EQ(all.zones[i].zslba, i * kZoneBlocks);
        EXPECT_EQ(all.zones[i].wp, i * kZoneBlocks);
        EXPECT_EQ(all.zones[i].state(), ZoneState::empty);
    }
    // From a block inside zone 3 on: zones 3..15.
    const wire::ZoneReport from = report(3 * kZoneBlocks + 5);
    EXPECT_EQ(from.nr_zones, kZones - 3);
    EXPECT_EQ(from.zones.front().zslba, 3 * kZoneBlocks);
}

TEST_F(Zoned, PartialReportsAndPaging) {
    // Room for 4 descriptors: the full count without Partial Report, the
    // returned one with it.
    const std::size_t four = 64 + 4 * 64;
    EXPECT_EQ(report(0, ZoneReportFilter::all, false, four).nr_zones, kZones);
    const wire::ZoneReport page = report(0, ZoneReportFilter::all, true, four);
    EXPECT_EQ(page.nr_zones, 4u);
    ASSERT_EQ(page.zones.size(), 4u);
    // Paging: the next report starts past the last zone returned.
    std::vector<std::uint64_t> starts;
    for (std::uint64_t slba = 0; slba < kZones * kZoneBlocks;) {
        const wire::ZoneReport next = report(slba, ZoneReportFilter::all, true, four);
        ASSERT_FALSE(next.zones.empty());
        for (const auto& z : next.zones) {
            starts.push_back(z.zslba);
        }
        slba = next.zones.back().zslba + kZoneBlocks;
    }
    ASSERT_EQ(starts.size(), kZones);
    EXPECT_EQ(starts.back(), (kZones - 1) * kZoneBlocks);
    // A buffer of the header alone: the count, no descriptor.
    const wire::ZoneReport header = report(0, ZoneReportFilter::all, false, 64);
    EXPECT_EQ(header.nr_zones, kZones);
    EXPECT_TRUE(header.zones.empty());
}

TEST_F(Zoned, ReportFilters) {
    ASSERT_TRUE(write(0, 1).status().ok());                           // zone 0: implicitly opened
    ASSERT_TRUE(send(kZoneBlocks, ZoneSendAction::open).ok());        // 1: explicitly opened
    ASSERT_TRUE(write(2 * kZoneBlocks, 1).status().ok());             // 2: closed
    ASSERT_TRUE(send(2 * kZoneBlocks, ZoneSendAction::close).ok());   //
    ASSERT_TRUE(send(3 * kZoneBlocks, ZoneSendAction::finish).ok());  // 3: full
    const std::pair<ZoneReportFilter, std::vector<std::uint64_t>> cases[] = {
        {ZoneReportFilter::implicitly_opened, {0}},
        {ZoneReportFilter::explicitly_opened, {kZoneBlocks}},
        {ZoneReportFilter::closed, {2 * kZoneBlocks}},
        {ZoneReportFilter::full, {3 * kZoneBlocks}},
        {ZoneReportFilter::read_only, {}},
        {ZoneReportFilter::offline, {}},
    };
    for (const auto& [filter, starts] : cases) {
        SCOPED_TRACE(static_cast<int>(filter));
        const wire::ZoneReport r = report(0, filter);
        EXPECT_EQ(r.nr_zones, starts.size());
        std::vector<std::uint64_t> got;
        for (const auto& z : r.zones) {
            got.push_back(z.zslba);
        }
        EXPECT_EQ(got, starts);
    }
    EXPECT_EQ(report(0, ZoneReportFilter::empty).nr_zones, kZones - 4);
    EXPECT_EQ(report(5 * kZoneBlocks, ZoneReportFilter::empty).nr_zones, kZones - 5);
}

TEST_F(Zoned, ReportRefusals) {
    EXPECT_EQ(receive(0, static_cast<ZoneReportFilter>(8), false, 4096).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(
        receive(0, ZoneReportFilter::all, false, 4096, wire::ZoneReceiveAction::extended_report)
            .status(),
        generic(GenericStatus::invalid_field));  // no zone descriptor extensions
    EXPECT_EQ(receive(kZones * kZoneBlocks, ZoneReportFilter::all, false, 4096).status(),
              generic(GenericStatus::lba_out_of_range));
    auto short_report =
        wire::zone_management_receive_command(1, 0, wire::ZoneReceiveAction::report,
                                              ZoneReportFilter::all, false, CoreHarness::keyed(64));
    short_report.cdw12 = 7;  // 32 bytes: less than the header
    short_report.dptr = CoreHarness::keyed(32);
    EXPECT_EQ(h_->run(io_, short_report).status(), generic(GenericStatus::invalid_field));
    // Above MDTS (128 KiB).
    EXPECT_EQ(receive(0, ZoneReportFilter::all, false, (128 << 10) + 4).status(),
              generic(GenericStatus::invalid_field));
}

// ---- conventional zones -------------------------------------------------------------

TEST_F(Zoned, ConventionalZones) {
    ZonedConfig z = zones_of();
    z.conventional = 2;
    start(zoned_config(z));
    // Written anywhere, in any order, across conventional zones.
    ASSERT_TRUE(write(100, 8, 4).status().ok());
    ASSERT_TRUE(write(10, 4, 5).status().ok());
    ASSERT_TRUE(write(kZoneBlocks - 4, 8, 6).status().ok());
    EXPECT_EQ(read(10, 4).data, pattern(4 * kLba, 5));
    EXPECT_EQ(write(2 * kZoneBlocks - 4, 8).status(), zoned(ZonedStatus::zone_boundary_error));
    const wire::ZoneDescriptor conv = zone(0);
    EXPECT_EQ(conv.type(), kConventionalZoneType);
    EXPECT_EQ(static_cast<int>(conv.state()), 0);
    EXPECT_EQ(conv.wp, kNoWritePointer);
    EXPECT_EQ(conv.zcap, kZoneBlocks);
    EXPECT_EQ(zone(2).type(), static_cast<std::uint8_t>(wire::ZoneType::sequential_write_required));
    // No state, so no zone management, no append, and no state filter lists them.
    EXPECT_EQ(send(0, ZoneSendAction::open), generic(GenericStatus::invalid_field));
    EXPECT_EQ(append(kZoneBlocks, 1).status(), generic(GenericStatus::invalid_field));
    EXPECT_EQ(report(0, ZoneReportFilter::empty).nr_zones, kZones - 2);
    ASSERT_TRUE(send(0, ZoneSendAction::reset, true).ok());
    EXPECT_EQ(read(10, 4).data, pattern(4 * kLba, 5));     // Select All skips them
    ASSERT_TRUE(write(2 * kZoneBlocks, 1).status().ok());  // the first sequential zone
    EXPECT_EQ(state(2), ZoneState::implicitly_opened);
}

// ---- open and active limits ------------------------------------------------------

TargetConfig limited(std::uint32_t max_open, std::uint32_t max_active) {
    ZonedConfig z = zones_of();
    z.max_open = max_open;
    z.max_active = max_active;
    return zoned_config(z);
}

TEST_F(Zoned, ImplicitOpenClosesTheZoneWrittenLongestAgo) {
    start(limited(2, 4));
    ASSERT_TRUE(write(0, 1).status().ok());
    ASSERT_TRUE(write(kZoneBlocks, 1).status().ok());
    ASSERT_TRUE(write(1, 1).status().ok());  // zone 0 written last
    ASSERT_TRUE(write(2 * kZoneBlocks, 1).status().ok());
    EXPECT_EQ(state(0), ZoneState::implicitly_opened);
    EXPECT_EQ(state(1), ZoneState::closed);  // written longest ago: closed to make room
    EXPECT_EQ(state(2), ZoneState::implicitly_opened);
    // Explicit opens take the room the same way.
    ASSERT_TRUE(send(3 * kZoneBlocks, ZoneSendAction::open).ok());
    EXPECT_EQ(state(0), ZoneState::closed);
    EXPECT_EQ(report(0, ZoneReportFilter::closed).nr_zones, 2u);
}

TEST_F(Zoned, TooManyOpenZones) {
    start(limited(2, 4));
    ASSERT_TRUE(send(0, ZoneSendAction::open).ok());
    ASSERT_TRUE(send(kZoneBlocks, ZoneSendAction::open).ok());
    // Every open zone explicitly opened: no room for a write or an open.
    EXPECT_EQ(write(2 * kZoneBlocks, 1).status(), zoned(ZonedStatus::too_many_open_zones));
    EXPECT_EQ(send(2 * kZoneBlocks, ZoneSendAction::open), zoned(ZonedStatus::too_many_open_zones));
    EXPECT_EQ(append(2 * kZoneBlocks, 1).status(), zoned(ZonedStatus::too_many_open_zones));
    EXPECT_EQ(state(2), ZoneState::empty);
    ASSERT_TRUE(send(0, ZoneSendAction::close).ok());
    EXPECT_TRUE(write(2 * kZoneBlocks, 1).status().ok());
}

TEST_F(Zoned, TooManyActiveZones) {
    start(limited(2, 3));
    ASSERT_TRUE(write(0, 1).status().ok());
    ASSERT_TRUE(write(kZoneBlocks, 1).status().ok());
    ASSERT_TRUE(write(2 * kZoneBlocks, 1).status().ok());  // closes zone 0: 3 active, 2 open
    EXPECT_EQ(write(3 * kZoneBlocks, 1).status(), zoned(ZonedStatus::too_many_active_zones));
    EXPECT_EQ(send(3 * kZoneBlocks, ZoneSendAction::open),
              zoned(ZonedStatus::too_many_active_zones));
    // A closed zone is active already: it may reopen.
    EXPECT_TRUE(write(1, 1).status().ok());
    // Finishing or resetting one frees its resources.
    ASSERT_TRUE(send(kZoneBlocks, ZoneSendAction::finish).ok());
    EXPECT_TRUE(write(3 * kZoneBlocks, 1).status().ok());
    EXPECT_EQ(write(4 * kZoneBlocks, 1).status(), zoned(ZonedStatus::too_many_active_zones));
    ASSERT_TRUE(send(0, ZoneSendAction::reset).ok());
    EXPECT_TRUE(write(4 * kZoneBlocks, 1).status().ok());
}

// ---- Select All -------------------------------------------------------------------

TEST_F(Zoned, SelectAll) {
    ASSERT_TRUE(write(0, 2, 7).status().ok());                        // zone 0: implicitly opened
    ASSERT_TRUE(send(kZoneBlocks, ZoneSendAction::open).ok());        // 1: explicitly opened
    ASSERT_TRUE(send(2 * kZoneBlocks, ZoneSendAction::finish).ok());  // 2: full
    ASSERT_TRUE(send(12345, ZoneSendAction::close, true).ok());       // SLBA ignored
    EXPECT_EQ(state(0), ZoneState::closed);
    EXPECT_EQ(state(1), ZoneState::closed);
    EXPECT_EQ(state(3), ZoneState::empty);
    ASSERT_TRUE(send(0, ZoneSendAction::open, true).ok());  // the closed ones
    EXPECT_EQ(state(0), ZoneState::explicitly_opened);
    EXPECT_EQ(state(1), ZoneState::explicitly_opened);
    EXPECT_EQ(state(3), ZoneState::empty);
    ASSERT_TRUE(send(0, ZoneSendAction::finish, true).ok());
    EXPECT_EQ(report(0, ZoneReportFilter::full).nr_zones, 3u);
    EXPECT_EQ(state(3), ZoneState::empty);  // empty zones are not finished
    ASSERT_TRUE(send(0, ZoneSendAction::reset, true).ok());
    EXPECT_EQ(report(0, ZoneReportFilter::empty).nr_zones, kZones);
    EXPECT_EQ(read(0, 2).data, std::vector<std::uint8_t>(2 * kLba, 0));
}

TEST_F(Zoned, SelectAllOpenIsAllOrNothing) {
    start(limited(2, 8));
    for (std::uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(write(i * kZoneBlocks, 1).status().ok());
        ASSERT_TRUE(send(i * kZoneBlocks, ZoneSendAction::close).ok());
    }
    // Three closed zones, two open resources: none opens.
    EXPECT_EQ(send(0, ZoneSendAction::open, true), zoned(ZonedStatus::too_many_open_zones));
    EXPECT_EQ(report(0, ZoneReportFilter::closed).nr_zones, 3u);
    ASSERT_TRUE(send(0, ZoneSendAction::finish).ok());
    // Two closed zones fit, after closing an implicitly opened one for room.
    ASSERT_TRUE(write(5 * kZoneBlocks, 1).status().ok());
    ASSERT_TRUE(send(0, ZoneSendAction::open, true).ok());
    EXPECT_EQ(report(0, ZoneReportFilter::explicitly_opened).nr_zones, 2u);
    EXPECT_EQ(state(5), ZoneState::closed);
}

// ---- faults -----------------------------------------------------------------------

TEST_F(Zoned, ZoneFaults) {
    TargetConfig config = zoned_config();
    config.faults.zone_faults = {{ZoneFault::Kind::offline, 5},
                                 {ZoneFault::Kind::read_only, kZoneBlocks + 7},
                                 {ZoneFault::Kind::full, 2 * kZoneBlocks},
                                 {ZoneFault::Kind::full, 1u << 30}};  // past the end: ignored
    start(config);
    EXPECT_EQ(h_->stats().faults_injected, 3u);
    EXPECT_EQ(state(0), ZoneState::offline);
    EXPECT_EQ(state(1), ZoneState::read_only);
    EXPECT_EQ(state(2), ZoneState::full);
    EXPECT_EQ(read(0, 1).status(), zoned(ZonedStatus::zone_is_offline));
    EXPECT_EQ(read(kZoneBlocks - 1, 2).status(), zoned(ZonedStatus::zone_is_offline));
    EXPECT_EQ(write(0, 1).status(), zoned(ZonedStatus::zone_is_offline));
    EXPECT_TRUE(read(kZoneBlocks, 4).status().ok());
    EXPECT_EQ(write(kZoneBlocks, 1).status(), zoned(ZonedStatus::zone_is_read_only));
    EXPECT_EQ(append(kZoneBlocks, 1).status(), zoned(ZonedStatus::zone_is_read_only));
    EXPECT_EQ(write(2 * kZoneBlocks, 1).status(), zoned(ZonedStatus::zone_is_full));
    EXPECT_EQ(read(2 * kZoneBlocks, 4).data, std::vector<std::uint8_t>(4 * kLba, 0));
    // Read only and offline zones leave only by Offline Zone (read only → offline).
    const auto invalid = zoned(ZonedStatus::invalid_zone_state_transition);
    EXPECT_EQ(send(kZoneBlocks, ZoneSendAction::reset), invalid);
    EXPECT_EQ(send(kZoneBlocks, ZoneSendAction::open), invalid);
    EXPECT_EQ(send(0, ZoneSendAction::reset), invalid);
    ASSERT_TRUE(send(0, ZoneSendAction::offline, true).ok());
    EXPECT_EQ(state(1), ZoneState::offline);
    EXPECT_EQ(report(0, ZoneReportFilter::offline).nr_zones, 2u);
    EXPECT_TRUE(send(2 * kZoneBlocks, ZoneSendAction::reset).ok());  // a full zone resets
}

}  // namespace
}  // namespace nvmeof::target::testing
