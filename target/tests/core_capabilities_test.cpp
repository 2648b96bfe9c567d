// Every field the target sets in Identify Controller and Identify Namespace (and
// in the Zoned Namespace command set's Identify data) is a promise to the host.
// Capabilities.EveryReportedFieldIsListed fails when a field starts being
// reported without an entry below, and each entry names the test that uses
// what the field promises (in this file, or in core_test.cpp, core_io_test.cpp,
// core_protection_test.cpp and core_zoned_test.cpp).
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "core_harness.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/protection.hpp"
#include "nvmeof/wire/zns.hpp"

namespace nvmeof::target::testing {
namespace {

using wire::GenericStatus;
using wire::IdentifyController;
using wire::IdentifyNamespace;
using wire::IoOpcode;

struct Field {
    const char* name;
    std::size_t offset;
    std::size_t size;
    const char* exercised_by;
};

#define FIELD(type, member, test)                                   \
    Field {                                                         \
#member, offsetof(type, member), sizeof(type::member), test \
    }

const Field kControllerFields[] = {
    FIELD(IdentifyController, sn, "informational: Identify.Controller"),
    FIELD(IdentifyController, mn, "informational: Identify.Controller"),
    FIELD(IdentifyController, fr, "informational: Identify.Controller"),
    FIELD(IdentifyController, rab, "a hint for arbitration, no behaviour to serve"),
    FIELD(IdentifyController, cmic, "Capabilities.NamespaceSharedByControllers, Ana.*"),
    FIELD(IdentifyController, mdts, "Capabilities.MdtsIsTheLargestTransfer"),
    FIELD(IdentifyController, cntlid, "Identify.Controller (equals the Connect's)"),
    FIELD(IdentifyController, ver, "Identify.Controller, Properties.CapVersionAndSizes"),
    FIELD(IdentifyController, oaes, "Ana.ChangeCompletesAHeldEventAndFailsIoWithPathStatus"),
    FIELD(IdentifyController, ctratt,
          "Features.HostBehaviorSupport, Protection.IdentifyReportsTheFormat (CNS 05h)"),
    FIELD(IdentifyController, cntrltype, "Discovery.*"),
    FIELD(IdentifyController, aerl, "AsyncEvents.HeldThenLimited"),
    FIELD(IdentifyController, lpa,
          "Zoned.CommandsSupportedAndEffectsPerCommandSet (with a zoned namespace), "
          "Capabilities.LogPagesAsLpaSays"),
    FIELD(IdentifyController, kas, "Features.NumberOfQueuesAndKeepAliveTimer, KeepAlive.*"),
    FIELD(IdentifyController, anatt, "Ana.* (the target moves states at once)"),
    FIELD(IdentifyController, anacap, "Ana.LogPageStateOffsetAndGroupsOnly"),
    FIELD(IdentifyController, anagrpmax, "Ana.IdentifyReportsOneGroup"),
    FIELD(IdentifyController, nanagrpid, "Ana.IdentifyReportsOneGroup"),
    FIELD(IdentifyController, sqes, "every command: 64-byte SQEs"),
    FIELD(IdentifyController, cqes, "every command: 16-byte CQEs"),
    FIELD(IdentifyController, maxcmd, "Capabilities.MaxcmdFitsTheQueues"),
    FIELD(IdentifyController, nn, "Identify.NamespaceListsAndDescriptors"),
    FIELD(IdentifyController, oncs,
          "Io.CompareMatchesAndMiscompares, Io.FlushWriteZeroesAndDeallocate"),
    FIELD(IdentifyController, sgls, "Io.WriteThenReadKeyed, Capabilities.InCapsuleDataAtAnOffset"),
    FIELD(IdentifyController, mnan, "Identify.NamespaceListsAndDescriptors"),
    FIELD(IdentifyController, subnqn, "Connect.*"),
    FIELD(IdentifyController, ioccsz, "Capabilities.IoccszBoundsInCapsuleDataOnEveryQueue"),
    FIELD(IdentifyController, iorcsz, "every command: 16-byte response capsules"),
    FIELD(IdentifyController, msdbd, "Capabilities.OneDataDescriptorPerCommand"),
};

const Field kNamespaceFields[] = {
    FIELD(IdentifyNamespace, nsze, "Io.StatusPaths (LBA out of range at NSZE)"),
    FIELD(IdentifyNamespace, ncap, "Io.StatusPaths (fully provisioned: NCAP = NSZE)"),
    FIELD(IdentifyNamespace, nuse, "Io.StatusPaths (fully provisioned: NUSE = NSZE)"),
    FIELD(IdentifyNamespace, flbas, "Protection.IdentifyReportsTheFormat"),
    FIELD(IdentifyNamespace, mc, "Protection.HostPiStoredAndCheckedBothWays (extended LBAs)"),
    FIELD(IdentifyNamespace, dpc, "Protection.IdentifyReportsTheFormat"),
    FIELD(IdentifyNamespace, dps, "Protection.*"),
    FIELD(IdentifyNamespace, nmic, "Capabilities.NamespaceSharedByControllers"),
    FIELD(IdentifyNamespace, dlfeat,
          "Capabilities.DeallocatedBlocksReadAsZeroes, "
          "Protection.NeverWrittenAndDeallocatedBlocksReadWithChecksOn"),
    FIELD(IdentifyNamespace, anagrpid, "Ana.IdentifyReportsOneGroup"),
    FIELD(IdentifyNamespace, nguid, "Identify.NamespaceListsAndDescriptors"),
    FIELD(IdentifyNamespace, lbaf, "IoLba4096.GeometryAndTransfer, Protection.*"),
};

// CNS 0x05 and 0x06 of the Zoned Namespace command set (CSI 0x02).
const Field kZonedNamespaceFields[] = {
    FIELD(wire::IdentifyZonedNamespace, ozcs, "Zoned.ReadsOfUnwrittenBlocksAndAcrossZones"),
    FIELD(wire::IdentifyZonedNamespace, mar, "Zoned.TooManyActiveZones"),
    FIELD(wire::IdentifyZonedNamespace, mor,
          "Zoned.TooManyOpenZones, Zoned.ImplicitOpenClosesTheZoneWrittenLongestAgo"),
    FIELD(wire::IdentifyZonedNamespace, lbafe, "Zoned.ReportListsEveryZone (ZSZE)"),
};
const Field kZonedControllerFields[] = {
    FIELD(wire::IdentifyZonedController, zasl, "Zoned.AppendAboveZaslIsRefused"),
};

#undef FIELD

// The names of the listed fields covering each non-zero byte; "" where none does.
template <std::size_t N>
std::vector<std::string> unlisted_bytes(const std::vector<std::uint8_t>& data,
                                        const Field (&fields)[N]) {
    std::vector<std::string> unlisted;
    for (std::size_t at = 0; at < data.size(); ++at) {
        if (data[at] == 0) {
            continue;
        }
        bool listed = false;
        for (const Field& f : fields) {
            listed = listed || (at >= f.offset && at < f.offset + f.size);
        }
        if (!listed) {
            unlisted.push_back("byte " + std::to_string(at));
        }
    }
    return unlisted;
}

TargetConfig protected_config() {
    TargetConfig config = default_config();
    NamespaceConfig& ns = config.subsystems[0].namespaces[0];
    ns.lba_size = 4096;
    ns.size_bytes = 4 << 20;
    ns.metadata_size = 16;
    ns.pi_type = wire::PiType::type1;
    ns.pi_guard = wire::PiGuard::crc64;
    return config;
}

// A zoned namespace with every limit and a ZASL set.
TargetConfig zoned_config() {
    TargetConfig config = default_config();
    ZonedConfig zoned;
    zoned.zone_bytes = 64 << 10;
    zoned.capacity_bytes = zoned.zone_bytes;
    zoned.max_open = 2;
    zoned.max_active = 3;
    config.subsystems[0].namespaces[0].zoned = zoned;
    config.limits.zasl = 1;
    return config;
}

TEST(Capabilities, EveryReportedFieldIsListed) {
    enum class Kind { plain, with_pi, zoned };
    for (const Kind kind : {Kind::plain, Kind::with_pi, Kind::zoned}) {
        SCOPED_TRACE(kind == Kind::with_pi ? "a namespace with PI"
                     : kind == Kind::zoned ? "a zoned namespace"
                                           : "a plain namespace");
        CoreHarness h(kind == Kind::with_pi ? protected_config()
                      : kind == Kind::zoned ? zoned_config()
                                            : default_config());
        QueueState admin = CoreHarness::new_queue(0);
        h.bring_up(admin);
        const Result controller = h.run(admin, wire::identify_command(wire::IdentifyCns::controller,
                                                                      0, CoreHarness::keyed(4096)));
        ASSERT_TRUE(controller.status().ok());
        EXPECT_EQ(unlisted_bytes(controller.data, kControllerFields), std::vector<std::string>{});
        const Result ns = h.run(admin, wire::identify_command(wire::IdentifyCns::namespace_data, 1,
                                                              CoreHarness::keyed(4096)));
        ASSERT_TRUE(ns.status().ok());
        EXPECT_EQ(unlisted_bytes(ns.data, kNamespaceFields), std::vector<std::string>{});
        if (kind != Kind::zoned) {
            continue;
        }
        const Result zns = h.run(admin, wire::identify_command_set_namespace(
                                            1, wire::kCsiZoned, CoreHarness::keyed(4096)));
        ASSERT_TRUE(zns.status().ok());
        EXPECT_EQ(unlisted_bytes(zns.data, kZonedNamespaceFields), std::vector<std::string>{});
        const Result zns_controller = h.run(admin, wire::identify_command_set_controller(
                                                       wire::kCsiZoned, CoreHarness::keyed(4096)));
        ASSERT_TRUE(zns_controller.status().ok());
        EXPECT_EQ(unlisted_bytes(zns_controller.data, kZonedControllerFields),
                  std::vector<std::string>{});
    }
}

IdentifyController identify_controller(CoreHarness& h, QueueState& admin) {
    const Result r = h.run(
        admin, wire::identify_command(wire::IdentifyCns::controller, 0, CoreHarness::keyed(4096)));
    EXPECT_TRUE(r.status().ok());
    IdentifyController id{};
    std::memcpy(&id, r.data.data(), std::min(r.data.size(), sizeof id));
    return id;
}

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed + i * 11 + (i >> 9));
    }
    return bytes;
}

wire::Sqe rw(IoOpcode op, std::uint64_t slba, std::uint32_t blocks) {
    constexpr std::uint32_t kLba = 512;
    return wire::rw_command(op, 1, slba, blocks,
                            wire::RemoteBuffer{kHostAddress, std::size_t{blocks} * kLba, kRkey},
                            kLba);
}

// MDTS (in CAP.MPSMIN pages) is the largest transfer of one command: exactly
// that much is served, a block more refused.
TEST(Capabilities, MdtsIsTheLargestTransfer) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const IdentifyController id = identify_controller(h, admin);
    const auto cap = wire::Capabilities{h.property_get(admin, wire::Property::cap).cqe.result64()};
    const std::uint64_t mdts_bytes = (std::uint64_t{1} << id.mdts) * cap.min_page_size();
    const auto blocks = static_cast<std::uint32_t>(mdts_bytes / 512);
    ASSERT_TRUE(h.run(io, rw(IoOpcode::write, 0, blocks), pattern(mdts_bytes, 1)).status().ok());
    EXPECT_TRUE(h.run(io, rw(IoOpcode::read, 0, blocks)).status().ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 0, blocks + 1)).status(),
              generic(GenericStatus::invalid_field));
}

// IOCCSZ × 16 − 64 bytes of data fit in a capsule, on the I/O queues and, as
// SPDK's host assumes, on the admin queue; a byte more does not.
TEST(Capabilities, IoccszBoundsInCapsuleDataOnEveryQueue) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const IdentifyController id = identify_controller(h, admin);
    const auto room = static_cast<std::uint32_t>(id.ioccsz * wire::kCapsuleUnit - wire::kSqeSize);
    auto write = rw(IoOpcode::write, 0, room / 512);
    write.dptr = wire::in_capsule_data(0, room);
    const auto data = pattern(room, 2);
    ASSERT_TRUE(h.run(io, write, {}, data).status().ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 0, room / 512)).data, data);
    write.dptr = wire::in_capsule_data(512, room);
    EXPECT_EQ(h.run(io, write, {}, pattern(room + 512, 2)).status(),
              generic(GenericStatus::sgl_offset_invalid));

    // Host Behavior Support's 512 bytes at the end of the admin capsule's room.
    wire::HostBehaviorSupport behavior{};
    behavior.lbafee = 1;
    std::vector<std::uint8_t> capsule(room, 0);
    std::memcpy(capsule.data() + room - sizeof behavior, &behavior, sizeof behavior);
    const auto set = wire::set_host_behavior_support_command(wire::in_capsule_data(
        room - wire::kHostBehaviorSupportSize, wire::kHostBehaviorSupportSize));
    EXPECT_TRUE(h.run(admin, set, {}, capsule).status().ok());
    const auto past = wire::set_host_behavior_support_command(wire::in_capsule_data(
        room - wire::kHostBehaviorSupportSize + 1, wire::kHostBehaviorSupportSize));
    capsule.push_back(0);
    EXPECT_EQ(h.run(admin, past, {}, capsule).status(), generic(GenericStatus::sgl_offset_invalid));
}

// SGLS bit 20: an in-capsule Data Block's address is an offset into the capsule.
TEST(Capabilities, InCapsuleDataAtAnOffset) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    ASSERT_NE(identify_controller(h, admin).sgls & (1u << 20), 0u);
    std::vector<std::uint8_t> capsule = pattern(1024 + 2048, 3);
    auto write = rw(IoOpcode::write, 40, 4);
    write.dptr = wire::in_capsule_data(1024, 2048);
    ASSERT_TRUE(h.run(io, write, {}, capsule).status().ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 40, 4)).data,
              std::vector<std::uint8_t>(capsule.begin() + 1024, capsule.end()));
}

// MSDBD 1: one data descriptor in the command, so a Last Segment pointing at
// a list of descriptors in the capsule is refused.
TEST(Capabilities, OneDataDescriptorPerCommand) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    ASSERT_EQ(identify_controller(h, admin).msdbd, 1);
    auto read = rw(IoOpcode::read, 0, 8);
    read.dptr = wire::in_capsule_data(0, 32);
    read.dptr.identifier = 0x31;  // Last Segment, offset: two keyed descriptors in the capsule
    std::vector<std::uint8_t> list(32);
    const auto first = CoreHarness::keyed(2048);
    const auto second = wire::keyed_data_block(kHostAddress + 2048, 2048, kRkey);
    std::memcpy(list.data(), &first, sizeof first);
    std::memcpy(list.data() + 16, &second, sizeof second);
    EXPECT_FALSE(h.run(io, read, {}, list).status().ok());
}

// MAXCMD: the commands a host may have outstanding on an I/O queue, which it
// sizes its queues by (Linux: min(MAXCMD, queue size)); never more than a
// queue the target grants can hold (CAP.MQES + 1).
TEST(Capabilities, MaxcmdFitsTheQueues) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    h.bring_up(admin);
    const IdentifyController id = identify_controller(h, admin);
    const auto cap = wire::Capabilities{h.property_get(admin, wire::Property::cap).cqe.result64()};
    EXPECT_GT(id.maxcmd, 0);
    EXPECT_LE(id.maxcmd, cap.max_queue_entries());
    QueueState io = CoreHarness::new_queue(1);
    EXPECT_TRUE(h.connect(io, kSubnqn, kHostnqn, id.cntlid, id.maxcmd).status().ok());
}

// CMIC bit 1 and NMIC bit 0: two controllers of one host share the namespace,
// each seeing what the other wrote.
TEST(Capabilities, NamespaceSharedByControllers) {
    CoreHarness h;
    QueueState admin_a = CoreHarness::new_queue(0);
    QueueState io_a = h.bring_up_io(admin_a);
    QueueState admin_b = CoreHarness::new_queue(0);
    QueueState io_b = h.bring_up_io(admin_b);
    EXPECT_NE(io_a.cntlid, io_b.cntlid);
    EXPECT_NE(identify_controller(h, admin_a).cmic & wire::kCmicMultipleControllers, 0);
    const auto data = pattern(4096, 7);
    ASSERT_TRUE(h.run(io_a, rw(IoOpcode::write, 64, 8), data).status().ok());
    EXPECT_EQ(h.run(io_b, rw(IoOpcode::read, 64, 8)).data, data);
}

// OACS 0: none of the optional admin commands (Security, Format NVM, Firmware,
// Namespace Management and Attachment, ...) is served.
TEST(Capabilities, NoOptionalAdminCommandsWithoutOacs) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    h.bring_up(admin);
    ASSERT_EQ(identify_controller(h, admin).oacs, 0);
    for (const int opcode : {0x0D, 0x10, 0x11, 0x15, 0x19, 0x80, 0x81, 0x82, 0x84}) {
        SCOPED_TRACE(opcode);
        EXPECT_EQ(h.run(admin, wire::make_sqe(static_cast<std::uint8_t>(opcode))).status(),
                  generic(GenericStatus::invalid_opcode));
    }
}

// LPA 0: no per-namespace SMART, no Commands Supported and Effects log; the
// mandatory logs (error information, SMART, firmware slots) are served.
TEST(Capabilities, LogPagesAsLpaSays) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    h.bring_up(admin);
    ASSERT_EQ(identify_controller(h, admin).lpa, 0);
    for (const wire::LogPageId lid :
         {wire::LogPageId::error_information, wire::LogPageId::smart_health,
          wire::LogPageId::firmware_slot}) {
        EXPECT_TRUE(h.run(admin, wire::get_log_page_command(lid, 0, CoreHarness::keyed(512)))
                        .status()
                        .ok());
    }
    EXPECT_EQ(h.run(admin, wire::get_log_page_command(wire::LogPageId::commands_supported, 0,
                                                      CoreHarness::keyed(4096)))
                  .status(),
              generic(GenericStatus::invalid_field));
}

// DLFEAT bits 2:0 = 001b: a deallocated block, or one never written, reads as zeroes.
TEST(Capabilities, DeallocatedBlocksReadAsZeroes) {
    CoreHarness h;
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const Result r = h.run(admin, wire::identify_command(wire::IdentifyCns::namespace_data, 1,
                                                         CoreHarness::keyed(4096)));
    IdentifyNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    ASSERT_EQ(ns.dlfeat & wire::kDlfeatReadValueMask, wire::kDlfeatReadsZeroes);
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 100, 4)).data, std::vector<std::uint8_t>(2048, 0));
    ASSERT_TRUE(h.run(io, rw(IoOpcode::write, 100, 4), pattern(2048, 5)).status().ok());
    const wire::DsmRange range{0, 4, 100};
    std::vector<std::uint8_t> ranges(sizeof range);
    std::memcpy(ranges.data(), &range, sizeof range);
    ASSERT_TRUE(h.run(io,
                      wire::dataset_management_command(1, 1, wire::kDsmAttributeDeallocate,
                                                       {kHostAddress, ranges.size(), kRkey}),
                      ranges)
                    .status()
                    .ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 100, 4)).data, std::vector<std::uint8_t>(2048, 0));
}

}  // namespace
}  // namespace nvmeof::target::testing
