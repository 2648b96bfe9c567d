// CommandCore: Fabrics Connect, properties, admin commands and their status paths.
#include <gtest/gtest.h>

#include <thread>

#include "core_harness.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/discovery.hpp"

namespace nvmeof::target::testing {
namespace {

using wire::FabricsStatus;
using wire::GenericStatus;
using wire::Status;

void expect_invalid_parameter(const Result& r, bool in_data, std::uint16_t offset) {
    EXPECT_EQ(r.status(), fabrics(FabricsStatus::connect_invalid_parameters))
        << wire::describe(r.status());
    const auto p = wire::parse_connect_invalid_parameter(r.cqe.dw0);
    EXPECT_EQ(p.in_data, in_data);
    EXPECT_EQ(p.offset, offset);
}

TEST(Connect, AdminConnectReturnsDynamicControllerIds) {
    CoreHarness h;
    QueueState a = CoreHarness::new_queue(0);
    QueueState b = CoreHarness::new_queue(0);
    const Result ra = h.connect(a);
    const Result rb = h.connect(b);
    ASSERT_TRUE(ra.status().ok());
    ASSERT_TRUE(rb.status().ok());
    EXPECT_NE(ra.cqe.dw0 & 0xFFFF, 0u);
    EXPECT_NE(ra.cqe.dw0 & 0xFFFF, rb.cqe.dw0 & 0xFFFF);
    EXPECT_EQ(ra.cqe.sq_head, 1);
    EXPECT_EQ(h.stats().controllers, 2u);
    EXPECT_EQ(h.stats().count_of(CommandKind::connect), 2u);
}

TEST(Connect, AdminCntlidMustBeDynamic) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    expect_invalid_parameter(h.connect(q, kSubnqn, kHostnqn, 1), true, 16);
}

TEST(Connect, UnknownSubsystem) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    expect_invalid_parameter(h.connect(q, "nqn.2024-01.io.nvmeof:nope"), true, 256);
}

TEST(Connect, HostNotAllowed) {
    TargetConfig config = default_config();
    config.subsystems[0].allowed_hosts = {"nqn.2014-08.org.nvmexpress:uuid:someone-else"};
    CoreHarness h(config);
    QueueState q = CoreHarness::new_queue(0);
    EXPECT_EQ(h.connect(q).status(), fabrics(FabricsStatus::connect_invalid_host));
}

TEST(Connect, AllowedHostAccepted) {
    TargetConfig config = default_config();
    config.subsystems[0].allowed_hosts = {kHostnqn};
    CoreHarness h(config);
    QueueState q = CoreHarness::new_queue(0);
    EXPECT_TRUE(h.connect(q).status().ok());
}

TEST(Connect, RecordFormatMustBeZero) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    auto sqe = wire::connect_command(0, 32, 0, CoreHarness::keyed(1024));
    sqe.cdw10 = 1;  // RECFMT
    const Result r = h.run(q, sqe, CoreHarness::connect_bytes(kSubnqn, kHostnqn, 0xFFFF));
    EXPECT_EQ(r.status(), fabrics(FabricsStatus::connect_incompatible_format));
}

TEST(Connect, SqsizeZeroAndAdminTooLarge) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    auto sqe = wire::connect_command(0, 32, 0, CoreHarness::keyed(1024));
    auto cmd = wire::as_connect(sqe);
    cmd.sqsize = 0;
    std::memcpy(&sqe, &cmd, sizeof sqe);
    expect_invalid_parameter(h.run(q, sqe, CoreHarness::connect_bytes(kSubnqn, kHostnqn, 0xFFFF)),
                             false, 44);
    expect_invalid_parameter(h.connect(q, kSubnqn, kHostnqn, 0xFFFF, 33), false, 44);
}

TEST(Connect, DataLengthMustBe1024) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    const auto sqe = wire::connect_command(0, 32, 0, CoreHarness::keyed(512));
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::data_sgl_length_invalid));
}

// The admin queue takes in-capsule data as SPDK's target does (nvmet's takes
// none): the Connect data, and beyond the capsule's room it is refused.
TEST(Connect, AdminInCapsule) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    const auto sqe = wire::connect_command(0, 32, 0, wire::in_capsule_data(0, 1024));
    const Result r = h.run(q, sqe, {}, CoreHarness::connect_bytes(kSubnqn, kHostnqn, 0xFFFF));
    EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
    QueueState small = CoreHarness::new_queue(0, 64 / 16 + 1000 / 16);  // room for 1000 bytes
    const Result refused =
        h.run(small, sqe, {}, CoreHarness::connect_bytes(kSubnqn, kHostnqn, 0xFFFF));
    EXPECT_EQ(refused.status(), generic(GenericStatus::sgl_offset_invalid));
}

TEST(Connect, SecondConnectOnSameQueueIsSequenceError) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(q).status().ok());
    EXPECT_EQ(h.connect(q).status(), generic(GenericStatus::command_sequence_error));
}

TEST(Connect, IoQueueRules) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    const Result ra = h.connect(admin);
    const auto cntlid = static_cast<std::uint16_t>(ra.cqe.dw0);

    QueueState io = CoreHarness::new_queue(1);
    // Controller not enabled yet.
    expect_invalid_parameter(h.connect(io, kSubnqn, kHostnqn, cntlid, 128), false, 42);
    h.enable(admin);
    // Unknown controller, wrong host.
    expect_invalid_parameter(h.connect(io, kSubnqn, kHostnqn, cntlid + 7, 128), true, 16);
    expect_invalid_parameter(
        h.connect(io, kSubnqn, "nqn.2014-08.org.nvmexpress:uuid:other", cntlid, 128), true, 16);
    // SQSIZE above MQES (127).
    expect_invalid_parameter(h.connect(io, kSubnqn, kHostnqn, cntlid, 130), false, 44);
    // QID beyond --max-io-queues (8).
    QueueState io9 = CoreHarness::new_queue(9);
    expect_invalid_parameter(h.connect(io9, kSubnqn, kHostnqn, cntlid, 128), false, 42);
    // Success, then the same QID again on another connection.
    ASSERT_TRUE(h.connect(io, kSubnqn, kHostnqn, cntlid, 128).status().ok());
    QueueState again = CoreHarness::new_queue(1);
    EXPECT_EQ(h.connect(again, kSubnqn, kHostnqn, cntlid, 128).status(),
              generic(GenericStatus::command_sequence_error));
}

TEST(Connect, IoConnectInCapsule) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    const std::uint16_t cntlid = h.bring_up(admin);
    QueueState io = CoreHarness::new_queue(1);
    const auto sqe = wire::connect_command(1, 128, 0, wire::in_capsule_data(0, 1024));
    const Result r = h.run(io, sqe, {}, CoreHarness::connect_bytes(kSubnqn, kHostnqn, cntlid));
    EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
    EXPECT_EQ(r.cqe.dw0, cntlid);
}

TEST(Connect, AdminLossDeletesController) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    const std::uint16_t cntlid = h.bring_up(admin);
    EXPECT_TRUE(h.core().controller_exists(cntlid));
    h.core().queue_disconnected(admin);
    EXPECT_FALSE(h.core().controller_exists(cntlid));
    QueueState io = CoreHarness::new_queue(1);
    expect_invalid_parameter(h.connect(io, kSubnqn, kHostnqn, cntlid, 128), true, 16);
}

TEST(Connect, FaultConnectStatus) {
    TargetConfig config = default_config();
    config.faults.connect_status = Status::make(wire::StatusCodeType::command_specific, 0x81, true);
    CoreHarness h(config);
    QueueState q = CoreHarness::new_queue(0);
    EXPECT_EQ(h.connect(q).status(), *config.faults.connect_status);
    EXPECT_EQ(h.stats().faults_injected, 1u);
}

TEST(Commands, BeforeConnectIsSequenceError) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    EXPECT_EQ(h.run(q, wire::keep_alive_command()).status(),
              generic(GenericStatus::command_sequence_error));
    EXPECT_EQ(h.property_get(q, wire::Property::cap).status(),
              generic(GenericStatus::command_sequence_error));
}

TEST(Commands, FlagsMustSelectSgl) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    auto sqe = wire::keep_alive_command();
    sqe.flags = 0;  // PSDT = PRP
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::invalid_field));
    sqe.flags = wire::kCommandFlagsSgl | 1;  // fused
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::invalid_field));
}

TEST(Commands, AdminBeforeEnableIsSequenceError) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(q).status().ok());
    EXPECT_EQ(h.run(q, wire::keep_alive_command()).status(),
              generic(GenericStatus::command_sequence_error));
}

TEST(Commands, UnknownAdminOpcodeAndFctype) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    EXPECT_EQ(h.run(q, wire::make_sqe(0xC1)).status(), generic(GenericStatus::invalid_opcode));
    auto fabrics_sqe = wire::make_sqe(wire::kFabricsOpcode);
    reinterpret_cast<std::uint8_t*>(&fabrics_sqe)[4] = 0x0A;  // no such Fabrics command
    EXPECT_EQ(h.run(q, fabrics_sqe).status(), generic(GenericStatus::invalid_opcode));
    EXPECT_GE(h.stats().errors, 2u);
}

TEST(Commands, NoDataCommandWithDataLength) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    auto sqe = wire::keep_alive_command();
    sqe.dptr = CoreHarness::keyed(512);
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::data_sgl_length_invalid));
    sqe.dptr = wire::SglDescriptor{};  // type 0 subtype 0: Data Block / Address
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::sgl_descriptor_type_invalid));
}

TEST(Properties, CapVersionAndSizes) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(q).status().ok());
    const Result cap = h.property_get(q, wire::Property::cap);
    ASSERT_TRUE(cap.status().ok());
    const wire::Capabilities c{cap.cqe.result64()};
    EXPECT_EQ(c.mqes(), 127);
    EXPECT_EQ(c.command_sets(), 1u);  // bit 37 only
    EXPECT_EQ(c.timeout(), 15);
    EXPECT_EQ(c.mpsmin(), 0);
    EXPECT_EQ(h.property_get(q, wire::Property::vs).cqe.dw0, 0x00010300u);
    // CAP only as 8 bytes; VS only as 4; Set only CC with 4 bytes.
    EXPECT_EQ(h.run(q, wire::property_get_command(0, wire::PropertySize::four_bytes)).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::property_get_command(8, wire::PropertySize::eight_bytes)).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::property_get_command(0x40, wire::PropertySize::four_bytes)).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(
        h.run(q, wire::property_set_command(0x14, 1, wire::PropertySize::eight_bytes)).status(),
        generic(GenericStatus::invalid_field));
    EXPECT_EQ(
        h.run(q, wire::property_set_command(0x00, 1, wire::PropertySize::four_bytes)).status(),
        generic(GenericStatus::invalid_field));
}

TEST(Properties, PropertyOnIoQueueIsInvalidOpcode) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    EXPECT_EQ(h.property_get(io, wire::Property::cap).status(),
              generic(GenericStatus::invalid_opcode));
}

TEST(Properties, EnableDisableShutdown) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(q).status().ok());
    EXPECT_EQ(h.property_get(q, wire::Property::csts).cqe.dw0, 0u);
    h.enable(q);
    EXPECT_EQ(h.property_get(q, wire::Property::csts).cqe.dw0, 1u);
    EXPECT_EQ(h.property_get(q, wire::Property::cc).cqe.dw0, 0x00460001u);
    // Shutdown: RDY clears, SHST = complete.
    auto cc = wire::ControllerConfig::make(
        {.enable = true, .shutdown = wire::ShutdownNotification::normal});
    ASSERT_TRUE(h.property_set(q, wire::Property::cc, cc.raw).status().ok());
    const wire::ControllerStatus csts{h.property_get(q, wire::Property::csts).cqe.dw0};
    EXPECT_FALSE(csts.ready());
    EXPECT_EQ(csts.shutdown_status(), wire::ShutdownStatus::complete);
    // Only Fabrics commands now.
    EXPECT_EQ(h.run(q, wire::keep_alive_command()).status(),
              generic(GenericStatus::command_sequence_error));
    // Like nvmet, the shutdown clears CC; SHST stays until the next enable.
    EXPECT_EQ(h.property_get(q, wire::Property::cc).cqe.dw0, 0u);
    ASSERT_TRUE(h.property_set(q, wire::Property::cc, 0x00460000).status().ok());
    EXPECT_EQ(h.property_get(q, wire::Property::csts).cqe.dw0, 0x8u);
    h.enable(q);
    EXPECT_EQ(h.property_get(q, wire::Property::csts).cqe.dw0, 1u);
    ASSERT_TRUE(h.property_set(q, wire::Property::cc, 0x00460000).status().ok());
    EXPECT_EQ(h.property_get(q, wire::Property::csts).cqe.dw0, 0u);
}

TEST(Properties, BadConfigurationSetsFatalStatus) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    ASSERT_TRUE(h.connect(q).status().ok());
    auto cc = wire::ControllerConfig::make({.enable = true, .iosqes = 5});
    ASSERT_TRUE(h.property_set(q, wire::Property::cc, cc.raw).status().ok());
    const wire::ControllerStatus csts{h.property_get(q, wire::Property::csts).cqe.dw0};
    EXPECT_TRUE(csts.fatal());
    EXPECT_FALSE(csts.ready());
}

TEST(Identify, Controller) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    const std::uint16_t cntlid = h.bring_up(q);
    const Result r = h.run(
        q, wire::identify_command(wire::IdentifyCns::controller, 0, CoreHarness::keyed(4096)));
    ASSERT_TRUE(r.status().ok());
    ASSERT_EQ(r.data.size(), 4096u);
    wire::IdentifyController id;
    std::memcpy(&id, r.data.data(), sizeof id);
    EXPECT_EQ(id.cntlid, cntlid);
    EXPECT_EQ(id.ver, 0x00010300u);
    EXPECT_EQ(id.sgls, 0x00100005u);
    EXPECT_EQ(id.icdoff, 0);
    EXPECT_EQ(id.ioccsz, 260u);
    EXPECT_EQ(id.iorcsz, 1u);
    EXPECT_EQ(id.msdbd, 1);
    EXPECT_EQ(id.kas, 10);
    EXPECT_EQ(id.mdts, 5);
    EXPECT_EQ(id.maxcmd, 128);
    EXPECT_EQ(id.nn, 1u);
    EXPECT_EQ(id.cntrltype, wire::kControllerTypeIo);
    EXPECT_EQ(id.vwc, 0);
    EXPECT_EQ(id.cmic, wire::kCmicMultipleControllers | wire::kCmicAnaReporting);
    EXPECT_EQ(id.oaes, wire::kOaesAnaChangeNotice);
    EXPECT_EQ(id.lpa & 0x2, 0);
    EXPECT_EQ(id.sqes, 0x66);
    EXPECT_EQ(id.cqes, 0x44);
    EXPECT_EQ(id.oncs, wire::kOncsCompare | wire::kOncsDatasetManagement | wire::kOncsWriteZeroes);
    EXPECT_EQ(id.subsystem_nqn(), kSubnqn);
    EXPECT_EQ(id.model(), "nvmeof-target");
}

TEST(Identify, SglChecks) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    EXPECT_EQ(
        h.run(q, wire::identify_command(wire::IdentifyCns::controller, 0, CoreHarness::keyed(4095)))
            .status(),
        generic(GenericStatus::data_sgl_length_invalid));
    EXPECT_EQ(h.run(q, wire::identify_command(wire::IdentifyCns::controller, 0,
                                              wire::in_capsule_data(0, 4096)))
                  .status(),
              generic(GenericStatus::invalid_field));
    auto sqe = wire::identify_command(wire::IdentifyCns::controller, 0, CoreHarness::keyed(4096));
    sqe.dptr.identifier = 0x20;  // Segment
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::sgl_descriptor_type_invalid));
    sqe.cdw10 = 0x06;  // CNS 6, CSI 0 (NVM): zeroes
    sqe.dptr = CoreHarness::keyed(4096);
    const Result cns6 = h.run(q, sqe);
    EXPECT_TRUE(cns6.status().ok());
    EXPECT_EQ(std::count(cns6.data.begin(), cns6.data.end(), 0), 4096);
    sqe.cdw11 = 2u << 24;  // CSI 2 (zoned)
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::invalid_field));
    sqe.cdw10 = 0x05;  // CNS 5 of CSI 2: only the NVM command set's (core_protection_test)
    sqe.nsid = 1;
    sqe.dptr = CoreHarness::keyed(4096);
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::invalid_field));
    sqe.cdw10 = 0x04;  // CNS 4: not served
    sqe.cdw11 = 0;
    EXPECT_EQ(h.run(q, sqe).status(), generic(GenericStatus::invalid_field));
}

TEST(Identify, NamespaceListsAndDescriptors) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    const auto keyed = CoreHarness::keyed(4096);
    Result r = h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 1, keyed));
    ASSERT_TRUE(r.status().ok());
    wire::IdentifyNamespace ns;
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.nsze, 2048u);
    EXPECT_EQ(ns.ncap, 2048u);
    EXPECT_EQ(wire::namespace_geometry(ns).lba_size, 512u);

    r = h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 99, keyed));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(std::count(r.data.begin(), r.data.end(), 0), 4096);
    EXPECT_EQ(h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 0xFFFFFFFF, keyed))
                  .status(),
              generic(GenericStatus::invalid_namespace_or_format));

    r = h.run(q, wire::identify_command(wire::IdentifyCns::active_namespace_list, 0, keyed));
    ASSERT_TRUE(r.status().ok());
    wire::ActiveNamespaceList list;
    std::memcpy(&list, r.data.data(), sizeof list);
    EXPECT_EQ(wire::parse_active_namespaces(list), std::vector<std::uint32_t>{1});
    r = h.run(q, wire::identify_command(wire::IdentifyCns::active_namespace_list, 1, keyed));
    std::memcpy(&list, r.data.data(), sizeof list);
    EXPECT_TRUE(wire::parse_active_namespaces(list).empty());
    EXPECT_EQ(h.run(q, wire::identify_command(wire::IdentifyCns::active_namespace_list, 0xFFFFFFFE,
                                              keyed))
                  .status(),
              generic(GenericStatus::invalid_namespace_or_format));

    r = h.run(q, wire::identify_command(wire::IdentifyCns::namespace_descriptors, 1, keyed));
    ASSERT_TRUE(r.status().ok());
    const auto descriptors =
        wire::parse_namespace_descriptors(std::span<const std::uint8_t, 4096>(r.data.data(), 4096));
    ASSERT_EQ(descriptors.size(), 1u);
    EXPECT_EQ(descriptors[0].type, wire::NamespaceIdType::nguid);
    EXPECT_EQ(0, std::memcmp(descriptors[0].id.data(), ns.nguid, 16));
    EXPECT_EQ(h.run(q, wire::identify_command(wire::IdentifyCns::namespace_descriptors, 5, keyed))
                  .status(),
              generic(GenericStatus::invalid_namespace_or_format));
}

TEST(Features, NumberOfQueuesAndKeepAliveTimer) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    Result r = h.run(q, wire::set_number_of_queues_command({64, 64}));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(wire::parse_number_of_queues(r.cqe.dw0).pairs(), 8u);
    r = h.run(q, wire::get_features_command(wire::FeatureId::number_of_queues));
    EXPECT_EQ(r.cqe.dw0, 7u | (7u << 16));
    auto bad = wire::set_features_command(wire::FeatureId::number_of_queues, 0xFFFF);
    EXPECT_EQ(h.run(q, bad).status(), generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::set_features_command(wire::FeatureId::arbitration, 0)).status(),
              generic(GenericStatus::invalid_field));
    auto save = wire::set_keep_alive_timer_command(1000);
    save.cdw10 |= 1u << 31;
    EXPECT_EQ(h.run(q, save).status(),
              Status::make(wire::StatusCodeType::command_specific, 0x0D, true));
    // KATO is rounded up to the KAS granularity (10 × 100 ms).
    ASSERT_TRUE(h.run(q, wire::set_keep_alive_timer_command(1500)).status().ok());
    EXPECT_EQ(h.run(q, wire::get_features_command(wire::FeatureId::keep_alive_timer)).cqe.dw0,
              2000u);
    EXPECT_EQ(h.stats().count_of(CommandKind::set_features), 5u);
    EXPECT_EQ(h.stats().count_of(CommandKind::get_features), 2u);
}

// Host Behavior Support (FID 0x16), which CTRATT bit 15 has hosts send: its
// 512 bytes set keyed or in the admin capsule (SPDK's host), read back.
TEST(Features, HostBehaviorSupport) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    auto get = [&](wire::FeatureSelect select) {
        auto sqe = wire::get_host_behavior_support_command(CoreHarness::keyed(512));
        sqe.cdw10 |= static_cast<std::uint32_t>(select) << wire::kFeatureSelectShift;
        return h.run(q, sqe);
    };
    Result r = get(wire::FeatureSelect::current);
    ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
    ASSERT_EQ(r.data.size(), 512u);
    EXPECT_EQ(std::count(r.data.begin(), r.data.end(), 0), 512);  // all disabled at first

    wire::HostBehaviorSupport behavior{};
    behavior.lbafee = 1;
    std::vector<std::uint8_t> bytes(sizeof behavior);
    std::memcpy(bytes.data(), &behavior, sizeof behavior);
    auto set = wire::set_host_behavior_support_command(wire::in_capsule_data(0, 512));
    ASSERT_TRUE(h.run(q, set, {}, bytes).status().ok());
    r = get(wire::FeatureSelect::current);
    ASSERT_EQ(r.data.size(), 512u);
    EXPECT_EQ(r.data[offsetof(wire::HostBehaviorSupport, lbafee)], 1);
    EXPECT_EQ(r.data[offsetof(wire::HostBehaviorSupport, acre)], 0);
    const Result defaults = get(wire::FeatureSelect::default_value);
    ASSERT_EQ(defaults.data.size(), 512u);
    EXPECT_EQ(std::count(defaults.data.begin(), defaults.data.end(), 0), 512);
    EXPECT_EQ(get(wire::FeatureSelect::capabilities).cqe.dw0, 1u << 2);  // changeable

    // Keyed, ACRE too; then a value that is no boolean, refused with a line.
    behavior.acre = 1;
    std::memcpy(bytes.data(), &behavior, sizeof behavior);
    set = wire::set_host_behavior_support_command(CoreHarness::keyed(512));
    ASSERT_TRUE(h.run(q, set, bytes).status().ok());
    EXPECT_EQ(get(wire::FeatureSelect::current).data[0], 1);
    bytes[offsetof(wire::HostBehaviorSupport, lbafee)] = 2;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(h.run(q, set, bytes).status(), generic(GenericStatus::invalid_field));
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("LBAFEE is 2, not 0 or 1"),
              std::string::npos);
    EXPECT_EQ(get(wire::FeatureSelect::current).data[2], 1);  // unchanged
    // The data is exactly 512 bytes.
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(
        h.run(q, wire::set_host_behavior_support_command(CoreHarness::keyed(511)), bytes).status(),
        generic(GenericStatus::data_sgl_length_invalid));
    EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                  "Set Features refused (Data SGL Length Invalid): SGL length 511 bytes, the "
                  "command moves 512"),
              std::string::npos);
}

TEST(Features, HostBehaviorSupportNotOnDiscoveryControllers) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q, wire::kDiscoveryNqn);
    EXPECT_EQ(h.run(q, wire::get_host_behavior_support_command(CoreHarness::keyed(0))).status(),
              generic(GenericStatus::invalid_field));
}

TEST(KeepAlive, ExpiryAndRefresh) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    const std::uint16_t cntlid = h.bring_up(q, kSubnqn, 1000);
    EXPECT_TRUE(h.core().expired_controllers(Clock::now()).empty());
    ASSERT_TRUE(h.run(q, wire::keep_alive_command()).status().ok());
    EXPECT_TRUE(
        h.core().expired_controllers(Clock::now() + std::chrono::milliseconds(900)).empty());
    const auto expired =
        h.core().expired_controllers(Clock::now() + std::chrono::milliseconds(1500));
    ASSERT_EQ(expired, std::vector<std::uint16_t>{cntlid});
    EXPECT_TRUE(wire::ControllerStatus{h.core().find_controller(cntlid)->csts}.fatal());
    // Reported once.
    EXPECT_TRUE(h.core().expired_controllers(Clock::now() + std::chrono::hours(1)).empty());
}

TEST(KeepAlive, ZeroDisables) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q, kSubnqn, 0);
    EXPECT_TRUE(h.core().expired_controllers(Clock::now() + std::chrono::hours(1)).empty());
}

TEST(AsyncEvents, HeldThenLimited) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(h.run(q, wire::make_sqe(0x0C)).plan.hold);
    }
    const Result r = h.run(q, wire::make_sqe(0x0C));
    EXPECT_FALSE(r.plan.hold);
    EXPECT_EQ(r.status(), Status::make(wire::StatusCodeType::command_specific, 0x05, true));
}

TEST(Ana, IdentifyReportsOneGroup) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    Result r = h.run(q, wire::identify_command(wire::IdentifyCns::controller, 0,
                                               CoreHarness::keyed(wire::kIdentifyDataSize)));
    ASSERT_TRUE(r.status().ok());
    wire::IdentifyController id{};
    std::memcpy(&id, r.data.data(), sizeof id);
    EXPECT_NE(id.cmic & wire::kCmicAnaReporting, 0);
    EXPECT_NE(id.oaes & wire::kOaesAnaChangeNotice, 0u);
    EXPECT_NE(id.anacap & wire::kAnacapInaccessible, 0);
    EXPECT_GT(id.anatt, 0);
    EXPECT_EQ(id.anagrpmax, 1u);
    EXPECT_EQ(id.nanagrpid, 1u);
    // Linux's host refuses ANA without MNAN ("Invalid MNAN value 0").
    EXPECT_GT(id.mnan, 0u);
    EXPECT_LE(id.mnan, id.nn);
    r = h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 1,
                                        CoreHarness::keyed(wire::kIdentifyDataSize)));
    wire::IdentifyNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.anagrpid, 1u);
}

TEST(Ana, LogPageStateOffsetAndGroupsOnly) {
    TargetConfig config = default_config();
    config.more_ports = {4421};
    config.ana_states = {{0, wire::AnaState::non_optimized}};
    CoreHarness h(config);
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    Result r = h.run(q, wire::ana_log_page_command(0, CoreHarness::keyed(64), false));
    ASSERT_TRUE(r.status().ok());
    wire::AnaLog log = wire::parse_ana_log(r.data);
    ASSERT_EQ(log.groups.size(), 1u);
    EXPECT_EQ(log.groups[0].id, 1u);
    EXPECT_EQ(log.groups[0].state, wire::AnaState::non_optimized);
    EXPECT_EQ(log.groups[0].nsids, std::vector<std::uint32_t>{1});
    // The descriptor alone, read at its offset.
    r = h.run(
        q, wire::ana_log_page_command(sizeof(wire::AnaLogHeader), CoreHarness::keyed(32), false));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data[0], 1);     // group id
    EXPECT_EQ(r.data[4], 1);     // one NSID
    EXPECT_EQ(r.data[16], 0x2);  // non-optimized
    r = h.run(q, wire::ana_log_page_command(0, CoreHarness::keyed(64), true));
    log = wire::parse_ana_log(r.data);
    ASSERT_EQ(log.groups.size(), 1u);
    EXPECT_TRUE(log.groups[0].nsids.empty());
}

TEST(Ana, ChangeCompletesAHeldEventAndFailsIoWithPathStatus) {
    TargetConfig config = default_config();
    config.more_ports = {4421};
    CoreHarness h(config);
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const auto cntlid = io.cntlid;
    EXPECT_FALSE(h.core().take_async_event(cntlid));  // nothing happened yet
    h.core().set_ana_state(1, wire::AnaState::inaccessible);
    EXPECT_FALSE(h.core().take_async_event(cntlid)) << "port 1 is not this controller's";
    h.core().set_ana_state(0, wire::AnaState::inaccessible);
    EXPECT_FALSE(h.core().take_async_event(cntlid)) << "no request held yet";
    ASSERT_TRUE(h.run(admin, wire::async_event_request_command()).plan.hold);
    const auto event = h.core().take_async_event(cntlid);
    ASSERT_TRUE(event);
    EXPECT_TRUE(wire::parse_async_event(*event).is_ana_change());
    EXPECT_FALSE(h.core().take_async_event(cntlid)) << "one notice per change";

    const auto write =
        wire::rw_command(wire::IoOpcode::write, 1, 0, 1, {kHostAddress, 512, kRkey}, 512);
    Result r = h.run(io, write, std::vector<std::uint8_t>(512));
    EXPECT_EQ(r.status(), Status::path(wire::PathStatus::asymmetric_access_inaccessible, false));
    EXPECT_FALSE(r.status().do_not_retry());
    h.core().set_ana_state(0, wire::AnaState::optimized);
    r = h.run(io, write, std::vector<std::uint8_t>(512));
    EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
}

TEST(LogPage, ErrorAndSmartAreZeroesDiscoveryRefused) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    Result r = h.run(
        q, wire::get_log_page_command(wire::LogPageId::smart_health, 0, CoreHarness::keyed(512)));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data.size(), 512u);
    EXPECT_EQ(std::count(r.data.begin(), r.data.end(), 0), 512);
    EXPECT_EQ(h.run(q, wire::get_log_page_command(wire::LogPageId::discovery, 0,
                                                  CoreHarness::keyed(1024)))
                  .status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::get_log_page_command(wire::LogPageId::commands_supported, 0,
                                                  CoreHarness::keyed(4096)))
                  .status(),
              generic(GenericStatus::invalid_field));
    auto mismatched =
        wire::get_log_page_command(wire::LogPageId::error_information, 0, CoreHarness::keyed(64));
    mismatched.dptr = CoreHarness::keyed(128);
    EXPECT_EQ(h.run(q, mismatched).status(), generic(GenericStatus::data_sgl_length_invalid));
}

TEST(Discovery, LogListsOtherSubsystemsForAllowedHosts) {
    TargetConfig config = default_config();
    SubsystemConfig hidden;
    hidden.nqn = "nqn.2024-01.io.nvmeof:hidden";
    hidden.allowed_hosts = {"nqn.2014-08.org.nvmexpress:uuid:nobody"};
    config.subsystems.push_back(hidden);
    SubsystemConfig second;
    second.nqn = "nqn.2024-01.io.nvmeof:second";
    config.subsystems.push_back(second);
    CoreHarness h(config);
    h.core().set_listen_address("127.0.0.1", 4555);
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q, wire::kDiscoveryNqn);

    Result r = h.run(
        q, wire::get_log_page_command(wire::LogPageId::discovery, 0, CoreHarness::keyed(1024)));
    ASSERT_TRUE(r.status().ok());
    wire::DiscoveryLogHeader header;
    std::memcpy(&header, r.data.data(), sizeof header);
    ASSERT_EQ(header.numrec, 2u);
    r = h.run(
        q, wire::get_log_page_command(wire::LogPageId::discovery, 0, CoreHarness::keyed(3 * 1024)));
    ASSERT_TRUE(r.status().ok());
    const auto records = wire::parse_discovery_log(r.data.data(), r.data.size());
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].subsystem_nqn, kSubnqn);
    EXPECT_EQ(records[1].subsystem_nqn, "nqn.2024-01.io.nvmeof:second");
    EXPECT_EQ(records[0].service_id, "4555");
    EXPECT_EQ(records[0].address, "127.0.0.1");
    EXPECT_EQ(records[0].transport, wire::TransportType::rdma);
    // Reading from an offset.
    r = h.run(
        q, wire::get_log_page_command(wire::LogPageId::discovery, 2048, CoreHarness::keyed(1024)));
    ASSERT_TRUE(r.status().ok());
    wire::DiscoveryLogEntry entry;
    std::memcpy(&entry, r.data.data(), sizeof entry);
    EXPECT_EQ(wire::parse_discovery_entry(entry).subsystem_nqn, "nqn.2024-01.io.nvmeof:second");
    // The discovery controller refuses I/O-controller commands.
    EXPECT_EQ(h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 1,
                                              CoreHarness::keyed(4096)))
                  .status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::set_number_of_queues_command({1, 1})).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::make_sqe(0x08)).status(), generic(GenericStatus::invalid_opcode));
    r = h.run(q,
              wire::identify_command(wire::IdentifyCns::controller, 0, CoreHarness::keyed(4096)));
    wire::IdentifyController id;
    std::memcpy(&id, r.data.data(), sizeof id);
    EXPECT_EQ(id.cntrltype, wire::kControllerTypeDiscovery);
    // A discovery controller has no I/O queues.
    QueueState io = CoreHarness::new_queue(1);
    expect_invalid_parameter(
        h.connect(io, wire::kDiscoveryNqn, kHostnqn, static_cast<std::uint16_t>(id.cntlid), 32),
        false, 42);
}

// Partial reads: any dword offset and length give exactly those bytes of the
// whole log; bytes past its end read as zeroes.
TEST(Discovery, PartialReadsAreSlicesOfTheWholeLog) {
    TargetConfig config = default_config();
    SubsystemConfig second;
    second.nqn = "nqn.2024-01.io.nvmeof:second";
    config.subsystems.push_back(second);
    CoreHarness h(config);
    h.core().set_listen_address("127.0.0.1", 4420);
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q, wire::kDiscoveryNqn);
    const Result whole = h.run(
        q, wire::get_log_page_command(wire::LogPageId::discovery, 0, CoreHarness::keyed(3 * 1024)));
    ASSERT_TRUE(whole.status().ok());
    for (const auto& [offset, length] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{
             {0, 16}, {8, 4}, {1028, 8}, {1024 + 256, 100}, {2044, 8}, {3068, 4}}) {
        const Result part = h.run(q, wire::get_log_page_command(wire::LogPageId::discovery, offset,
                                                                CoreHarness::keyed(length)));
        ASSERT_TRUE(part.status().ok()) << offset;
        ASSERT_EQ(part.data.size(), length);
        EXPECT_TRUE(std::equal(part.data.begin(), part.data.end(), whole.data.begin() + offset))
            << "offset " << offset << " length " << length;
    }
    const Result past = h.run(
        q, wire::get_log_page_command(wire::LogPageId::discovery, 2048, CoreHarness::keyed(2048)));
    ASSERT_TRUE(past.status().ok());
    EXPECT_TRUE(std::equal(past.data.begin(), past.data.begin() + 1024, whole.data.begin() + 2048));
    EXPECT_EQ(std::count(past.data.begin() + 1024, past.data.end(), 0), 1024);
    wire::DiscoveryLogHeader header;
    std::memcpy(&header, whole.data.data(), sizeof header);
    EXPECT_EQ(header.genctr, 1u);
    EXPECT_EQ(header.recfmt, 0u);
}

// A wildcard listener reports the address the host reached, in its family.
TEST(Discovery, WildcardListenerReportsTheAddressTheHostReached) {
    for (const auto& [listen, reached, family] :
         std::vector<std::tuple<std::string, std::string, wire::AddressFamily>>{
             {"0.0.0.0", "10.1.2.3", wire::AddressFamily::ipv4},
             {"::", "fd00::5", wire::AddressFamily::ipv6}}) {
        CoreHarness h;
        h.core().set_listen_address(listen, 4420);
        QueueState q = CoreHarness::new_queue(0);
        q.local_address = reached;
        h.bring_up(q, wire::kDiscoveryNqn);
        const Result r = h.run(
            q, wire::get_log_page_command(wire::LogPageId::discovery, 0, CoreHarness::keyed(2048)));
        ASSERT_TRUE(r.status().ok());
        const auto records = wire::parse_discovery_log(r.data.data(), r.data.size());
        ASSERT_EQ(records.size(), 1u);
        EXPECT_EQ(records[0].address, reached);
        EXPECT_EQ(records[0].family, family);
    }
}

TEST(Stats, JsonHasEveryKey) {
    Stats stats;
    stats.count(CommandKind::read);
    stats.bytes_written = 4096;
    const std::string json = stats.to_json();
    for (const char* key : {"\"commands\"",     "\"read\": 1",      "\"write\"",
                            "\"flush\"",        "\"write_zeroes\"", "\"dataset_management\"",
                            "\"identify\"",     "\"connect\"",      "\"property_get\"",
                            "\"property_set\"", "\"set_features\"", "\"get_features\"",
                            "\"get_log_page\"", "\"keep_alive\"",   "\"other\"",
                            "\"bytes\"",        "\"write\": 4096",  "\"rdma\"",
                            "\"read_ops\"",     "\"write_ops\"",    "\"in_capsule_writes\"",
                            "\"errors\"",       "\"max_inflight\"", "\"io\"",
                            "\"admin\"",        "\"controllers\"",  "\"faults_injected\""}) {
        EXPECT_NE(json.find(key), std::string::npos) << key;
    }
}

}  // namespace
}  // namespace nvmeof::target::testing
