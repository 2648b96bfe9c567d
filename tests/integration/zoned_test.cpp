// Zoned namespaces against nvmeof-target's zoned RAM namespaces: command set
// selection and identification, reports (whole, filtered, partial, paged
// through a small page), each zone action, Zone Append (blocking and
// asynchronous, its LBAs), each zone status named with its errno, and the
// split write that must reach a zone in order, under a target that runs a
// queue's commands out of order (--fault reorder-io).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;

namespace {

// 64 MiB of 4 KiB blocks in zones of 1 MiB (256 blocks) holding 768 KiB
// (192 blocks), at most 4 open and 6 active.
constexpr char kZoned[] = "ram:64M:4096:zoned=1M,cap=768K,max_open=4,max_active=6";
constexpr std::uint64_t kZoneBlocks = 256;
constexpr std::uint64_t kCapacity = 192;
constexpr std::uint64_t kZones = 64;

std::uint64_t zone_start(std::uint64_t index) {
    return index * kZoneBlocks;
}

// Waits for `count` completions of `io`, in any order.
std::vector<Completion> wait_for(IoQueue& io, std::size_t count) {
    std::vector<Completion> done;
    Completion batch[32];
    for (long spins = 0; done.size() < count && spins < 200'000'000; ++spins) {
        const std::size_t n = io.poll(batch);
        done.insert(done.end(), batch, batch + n);
    }
    EXPECT_EQ(done.size(), count);
    return done;
}

// The zone status a blocking call failed with, or none.
template <typename Call>
wire::NvmeError status_of(Call call) {
    try {
        call();
    } catch (const wire::NvmeError& e) {
        return e;
    }
    ADD_FAILURE() << "the call succeeded";
    return wire::NvmeError(wire::Status::success(), "none", {});
}

int errno_of(const wire::NvmeError& e) {
    return CompletionStatus{.nvme = e.status()}.error_number();
}

bool same(const MemoryRegion& a, std::uint64_t a_offset, const MemoryRegion& b,
          std::uint64_t b_offset, std::uint64_t bytes) {
    return std::memcmp(a.data() + a_offset, b.data() + b_offset, bytes) == 0;
}

}  // namespace

TEST(Zoned, CommandSetsAndIdentify) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (zoned namespaces)";
    {
        // No zoned namespace: CAP.CSS offers NVM alone, CC.CSS stays 000b.
        TargetProcess plain;
        auto ctrl = Controller::connect(plain.options());
        EXPECT_FALSE(ctrl.limits().io_command_sets);
        auto ns = ctrl.namespace_at(1);
        EXPECT_FALSE(ns.info().zoned);
        EXPECT_EQ(ns.info().csi, 0);
        EXPECT_THROW(ns.report_zones(), InvalidArgument);
        EXPECT_THROW(ns.zone_action(ZoneAction::reset, 0, ZoneSelect::all), InvalidArgument);
        auto data = ctrl.allocate(4096);
        IoQueue io = ctrl.io();
        EXPECT_EQ(io.submit(ns, {Op::zone_append, 0, 1, &data, 0, 1}), SubmitResult::invalid);
        EXPECT_EQ(io.last_error().sys_errno, EINVAL);
    }
    TargetProcess target({"--zasl", "1", "--namespace", "ram:16M"}, kZoned);
    auto ctrl = Controller::connect(target.options());
    EXPECT_TRUE(ctrl.limits().io_command_sets);  // CAP.CSS bit 6: CC.CSS 110b
    EXPECT_EQ(ctrl.limits().command_set_combination, 0);
    auto ns = ctrl.namespace_at(1);
    const NamespaceInfo& info = ns.info();
    EXPECT_TRUE(info.zoned);
    EXPECT_EQ(info.csi, 2);
    EXPECT_EQ(info.zones.zone_blocks, kZoneBlocks);
    EXPECT_EQ(info.zones.zone_count, kZones);
    EXPECT_EQ(info.zones.max_open_zones, 4u);
    EXPECT_EQ(info.zones.max_active_zones, 6u);
    EXPECT_EQ(info.zones.zone_append_max_bytes, 8192u);  // ZASL 1: 2 × 4 KiB
    EXPECT_EQ(info.zones.descriptor_extension_bytes, 0u);
    EXPECT_TRUE(info.zones.read_across_zone_boundaries);
    EXPECT_FALSE(info.zones.variable_zone_capacity);
    // The NVM namespace beside it, through the same CC.CSS 110b.
    auto nvm = ctrl.namespace_at(2);
    EXPECT_FALSE(nvm.info().zoned);
    EXPECT_EQ(nvm.info().csi, 0);
    auto data = ctrl.allocate(1 << 20);
    fill(data, 3);
    nvm.write(data, 7);
    auto back = ctrl.allocate(1 << 20);
    nvm.read(back, 7);
    EXPECT_TRUE(same(data, 0, back, 0, data.size()));
}

TEST(Zoned, Reports) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (zoned namespaces)";
    TargetProcess target({}, kZoned);
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto data = ctrl.allocate(kCapacity * 4096);
    fill(data, 1);
    ns.write(data, zone_start(1), 8);  // implicitly opened, write pointer 8 in
    ns.write(data, zone_start(2), 16);
    ns.write(data, zone_start(3), kCapacity);  // full
    ns.zone_action(ZoneAction::open, zone_start(5));

    const std::vector<Zone> all = ns.report_zones();
    ASSERT_EQ(all.size(), kZones);
    for (std::uint64_t i = 0; i < kZones; ++i) {
        EXPECT_EQ(all[i].start, zone_start(i));
        EXPECT_EQ(all[i].capacity, kCapacity);
        EXPECT_EQ(all[i].type, ZoneType::sequential_write_required);
    }
    EXPECT_EQ(all[0].state, ZoneState::empty);
    EXPECT_EQ(all[0].write_pointer, 0u);
    EXPECT_EQ(all[1].state, ZoneState::implicitly_opened);
    EXPECT_EQ(all[1].write_pointer, zone_start(1) + 8);
    EXPECT_EQ(all[2].write_pointer, zone_start(2) + 16);
    EXPECT_EQ(all[3].state, ZoneState::full);
    EXPECT_EQ(all[3].write_pointer, kNoWritePointer);
    EXPECT_EQ(all[5].state, ZoneState::explicitly_opened);
    EXPECT_EQ(zone_state_name(all[5].state), "explicitly opened");

    // Filtered: the implicitly opened ones, the full one, none offline.
    const std::vector<Zone> opened =
        ns.report_zones(0, Namespace::kAllZones, ZoneFilter::implicitly_opened);
    ASSERT_EQ(opened.size(), 2u);
    EXPECT_EQ(opened[0].start, zone_start(1));
    EXPECT_EQ(opened[1].start, zone_start(2));
    ASSERT_EQ(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::full).size(), 1u);
    EXPECT_TRUE(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::offline).empty());
    // From an LBA inside zone 10 on; at most 5.
    const std::vector<Zone> some = ns.report_zones(zone_start(10) + 17, 5);
    ASSERT_EQ(some.size(), 5u);
    EXPECT_EQ(some[0].start, zone_start(10));
    EXPECT_EQ(some[4].start, zone_start(14));

    // One command into a small buffer: without Partial Report the header
    // counts every zone from the start on, with it the ones returned.
    auto small = ctrl.allocate(4096);
    const ZoneReport whole = ns.report_zones_into(small, zone_start(2), {}, 0, 64 + 2 * 64);
    EXPECT_EQ(whole.matching, kZones - 2);
    ASSERT_EQ(whole.zones.size(), 2u);
    EXPECT_EQ(whole.zones[1].start, zone_start(3));
    const ZoneReport partial =
        ns.report_zones_into(small, zone_start(2), {ZoneFilter::all, true}, 0, 64 + 2 * 64);
    EXPECT_EQ(partial.matching, 2u);
    const ZoneReport filtered = ns.report_zones_into(small, 0, {ZoneFilter::explicitly_opened});
    EXPECT_EQ(filtered.matching, 1u);
    ASSERT_EQ(filtered.zones.size(), 1u);
    EXPECT_EQ(filtered.zones[0].start, zone_start(5));
    // At an offset in the buffer, and the header alone.
    EXPECT_EQ(ns.report_zones_into(small, 0, {}, 1024, 64).matching, kZones);

    // Paged through a page of one descriptor: 64 commands, the same zones.
    auto page = ctrl.allocate(128);
    const std::vector<Zone> paged =
        ns.report_zones(0, Namespace::kAllZones, ZoneFilter::all, &page);
    ASSERT_EQ(paged.size(), all.size());
    for (std::size_t i = 0; i < paged.size(); ++i) {
        EXPECT_EQ(paged[i].start, all[i].start);
        EXPECT_EQ(paged[i].state, all[i].state);
        EXPECT_EQ(paged[i].write_pointer, all[i].write_pointer);
    }
    EXPECT_EQ(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::implicitly_opened, &page).size(),
              2u);

    // Refusals before anything is sent.
    EXPECT_THROW(ns.report_zones_into(small, 0, {ZoneFilter::all, false, true}), InvalidArgument);
    EXPECT_THROW(ns.report_zones_into(small, 0, {}, 0, 32), InvalidArgument);
    EXPECT_THROW(ns.report_zones_into(small, kZones * kZoneBlocks), InvalidArgument);
    auto tiny = ctrl.allocate(64);
    EXPECT_THROW(ns.report_zones(0, 10, ZoneFilter::all, &tiny), InvalidArgument);
}

TEST(Zoned, Actions) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (zoned namespaces)";
    // Zone 9 read only from the start.
    TargetProcess target({"--fault", "zone-read-only=" + std::to_string(zone_start(9) + 3)},
                         kZoned);
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const auto state_of = [&](std::uint64_t index) {
        return ns.report_zones(zone_start(index), 1).at(0);
    };
    ns.zone_action(ZoneAction::open, zone_start(0));
    EXPECT_EQ(state_of(0).state, ZoneState::explicitly_opened);
    ns.zone_action(ZoneAction::close, zone_start(0));
    EXPECT_EQ(state_of(0).state, ZoneState::closed);
    auto data = ctrl.allocate(16 * 4096);
    fill(data, 2);
    ns.write(data, zone_start(0), 16);  // a closed zone opens implicitly
    EXPECT_EQ(state_of(0).state, ZoneState::implicitly_opened);
    ns.zone_action(ZoneAction::finish, zone_start(0));
    EXPECT_EQ(state_of(0).state, ZoneState::full);
    ns.zone_action(ZoneAction::reset, zone_start(0));
    EXPECT_EQ(state_of(0).state, ZoneState::empty);
    EXPECT_EQ(state_of(0).write_pointer, zone_start(0));
    auto back = ctrl.allocate(16 * 4096);
    ns.read(back, zone_start(0), 16);
    EXPECT_TRUE(std::all_of(back.data(), back.data() + back.size(), [](std::byte b) {
        return b == std::byte{0};
    })) << "a reset zone's blocks read as zeroes";
    EXPECT_EQ(state_of(9).state, ZoneState::read_only);
    ns.zone_action(ZoneAction::offline, zone_start(9));
    EXPECT_EQ(state_of(9).state, ZoneState::offline);

    // Select All: reset every zone written, finish every open one.
    for (std::uint64_t i = 1; i <= 3; ++i) {
        ns.write(data, zone_start(i), 4);
    }
    ns.zone_action(ZoneAction::finish, 0, ZoneSelect::all);
    EXPECT_EQ(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::full).size(), 3u);
    ns.zone_action(ZoneAction::reset, 0, ZoneSelect::all);
    EXPECT_TRUE(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::full).empty());
    EXPECT_EQ(ns.report_zones(0, Namespace::kAllZones, ZoneFilter::empty).size(), kZones - 1);
    EXPECT_THROW(ns.zone_action(static_cast<ZoneAction>(9), 0), InvalidArgument);
}

TEST(Zoned, AppendReturnsWhereTheBlocksWent) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (zoned namespaces)";
    TargetProcess target({}, kZoned);
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const std::uint64_t limit_blocks = ns.info().zones.zone_append_max_bytes / 4096;
    ASSERT_EQ(ns.info().zones.zone_append_max_bytes, ctrl.limits().max_transfer_bytes);
    auto data = ctrl.allocate(64 * 4096);
    fill(data, 5);
    // Blocking: each lands at the write pointer, which moves on.
    EXPECT_EQ(ns.zone_append(data, zone_start(4), 8), zone_start(4));
    EXPECT_EQ(ns.zone_append(data, zone_start(4), 8, 8 * 4096), zone_start(4) + 8);
    EXPECT_EQ(ns.zone_append(data, zone_start(4), 1, 16 * 4096), zone_start(4) + 16);
    auto back = ctrl.allocate(17 * 4096);
    ns.read(back, zone_start(4), 17);
    EXPECT_TRUE(same(back, 0, data, 0, 17 * 4096));

    // Asynchronous: eight in flight to one zone; each completion says where
    // its blocks went, together the next 32 blocks, each holding its data.
    IoQueue io = ctrl.io();
    constexpr std::uint64_t kEach = 4;
    for (std::uint64_t i = 0; i < 8; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::zone_append, zone_start(6), kEach, &data, i * kEach * 4096, i},
                            Post::deferred),
                  SubmitResult::queued);
    }
    io.commit();
    std::set<std::uint64_t> lbas;
    for (const Completion& c : wait_for(io, 8)) {
        ASSERT_TRUE(c.status.ok()) << describe(c.status);
        EXPECT_EQ((c.append_lba - zone_start(6)) % kEach, 0u);
        lbas.insert(c.append_lba);
        auto one = ctrl.allocate(kEach * 4096);
        ns.read(one, c.append_lba, kEach);
        EXPECT_TRUE(same(one, 0, data, c.user_data * kEach * 4096, kEach * 4096))
            << "append " << c.user_data << " at " << c.append_lba;
    }
    EXPECT_EQ(lbas.size(), 8u);
    EXPECT_EQ(*lbas.begin(), zone_start(6));
    EXPECT_EQ(*lbas.rbegin(), zone_start(6) + 7 * kEach);
    EXPECT_EQ(ns.report_zones(zone_start(6), 1).at(0).write_pointer, zone_start(6) + 8 * kEach);

    // Never split: above the limit it is refused, naming the limit.
    auto big = ctrl.allocate((limit_blocks + 1) * 4096);
    try {
        ns.zone_append(big, zone_start(7), limit_blocks + 1);
        FAIL() << "a Zone Append above the limit was sent";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("Zone Append size limit of " +
                                             std::to_string(limit_blocks * 4096) + " bytes"),
                  std::string::npos)
            << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
    EXPECT_EQ(io.submit(ns, {Op::zone_append, zone_start(7), limit_blocks + 1, &big, 0, 9}),
              SubmitResult::invalid);
    EXPECT_EQ(io.last_error().sys_errno, EINVAL);
    EXPECT_EQ(ns.zone_append(big, zone_start(7), limit_blocks), zone_start(7));  // at the limit
    EXPECT_THROW(ns.zone_append(data, zone_start(7) + 1, 1), InvalidArgument);   // not a zone start
}

TEST(Zoned, EachZoneStatusNamedWithItsErrno) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (zoned namespaces, zone faults)";
    TargetProcess target({"--fault", "zone-read-only=" + std::to_string(zone_start(60)), "--fault",
                          "zone-offline=" + std::to_string(zone_start(61))},
                         kZoned);
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto data = ctrl.allocate(kCapacity * 4096);
    fill(data, 9);
    const auto expect = [](const wire::NvmeError& e, wire::ZonedStatus code, const char* name,
                           int error) {
        SCOPED_TRACE(name);
        EXPECT_TRUE(e.status().is(code)) << e.what();
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        EXPECT_EQ(errno_of(e), error);
    };

    ns.write(data, zone_start(0), kCapacity - 8);  // split, in order: six pieces
    expect(status_of([&] { ns.write(data, zone_start(0) + kCapacity - 8, 16); }),
           wire::ZonedStatus::zone_boundary_error, "Zone Boundary Error", EIO);
    ns.zone_action(ZoneAction::finish, zone_start(0));
    expect(status_of([&] { ns.write(data, zone_start(0), 1); }), wire::ZonedStatus::zone_is_full,
           "Zone Is Full", EIO);
    expect(status_of([&] { ns.write(data, zone_start(60), 1); }),
           wire::ZonedStatus::zone_is_read_only, "Zone Is Read Only", EIO);
    expect(status_of([&] { ns.read(data, zone_start(61), 1); }), wire::ZonedStatus::zone_is_offline,
           "Zone Is Offline", EIO);
    expect(status_of([&] { ns.write(data, zone_start(1) + 5, 1); }),
           wire::ZonedStatus::zone_invalid_write, "Zone Invalid Write", EIO);
    expect(status_of([&] { ns.zone_action(ZoneAction::close, zone_start(2)); }),
           wire::ZonedStatus::invalid_zone_state_transition, "Invalid Zone State Transition", EIO);
    // Four open (explicitly), a fifth is refused; closed they stay active,
    // and two more open make six: a seventh is refused for lack of an active one.
    for (std::uint64_t i = 10; i < 14; ++i) {
        ns.zone_action(ZoneAction::open, zone_start(i));
    }
    expect(status_of([&] { ns.zone_action(ZoneAction::open, zone_start(14)); }),
           wire::ZonedStatus::too_many_open_zones, "Too Many Open Zones", ETOOMANYREFS);
    ns.zone_action(ZoneAction::close, 0, ZoneSelect::all);
    ns.zone_action(ZoneAction::open, zone_start(14));
    ns.zone_action(ZoneAction::open, zone_start(15));
    expect(status_of([&] { ns.zone_action(ZoneAction::open, zone_start(16)); }),
           wire::ZonedStatus::too_many_active_zones, "Too Many Active Zones", EOVERFLOW);
    // The same status through the non-blocking path, in its completion.
    IoQueue io = ctrl.io();
    ASSERT_EQ(io.submit(ns, {Op::write, zone_start(17), 1, &data, 0, 1}), SubmitResult::queued);
    const std::vector<Completion> done = wait_for(io, 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_TRUE(done[0].status.nvme.is(wire::ZonedStatus::too_many_active_zones));
    EXPECT_EQ(done[0].status.error_number(), EOVERFLOW);
    EXPECT_NE(describe(done[0].status).find("Write: Too Many Active Zones"), std::string::npos)
        << describe(done[0].status);
}

// The trap: a write above MDTS is cut into pieces, and a zone takes writes at
// its write pointer only. With --fault reorder-io the target runs every third
// command of a queue after the one that arrived next, as a controller free to
// reorder may. Pieces sent together (what the split did for every namespace)
// then land past the write pointer (Zone Invalid Write); the core sends a
// zoned namespace's pieces one at a time, so every write lands whole, at QD 16
// over 16 zones.
TEST(Zoned, SplitWritesReachEachZoneInOrder) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (--fault reorder-io)";
    constexpr std::uint64_t kZoneOf = 256;  // no capacity below the zone, no open limit
    TargetProcess target({"--fault", "reorder-io=3"}, "ram:64M:4096:zoned=1M");
    Options options = target.options();
    options.io_queues = 2;
    auto ctrl = Controller::connect(options);
    auto ns = ctrl.namespace_at(1);
    const std::uint64_t per_command = ctrl.limits().max_transfer_bytes / 4096;
    ASSERT_EQ(per_command, 32u);  // the default MDTS, 128 KiB: 8 pieces a zone
    constexpr std::size_t kDepth = 16;
    auto data = ctrl.allocate(kDepth * kZoneOf * 4096);
    fill(data, 11);
    IoQueue io = ctrl.io();
    ASSERT_EQ(io.pieces(ns, {Op::write, 0, kZoneOf, &data, 0, 0}), 8u);

    // The control: the same pieces as separate commands, sent together, as
    // an unordered split sends them; the fault makes some land out of order.
    // (Half the zones: a queue holds 127 commands.)
    for (std::size_t z = 0; z < kDepth / 2; ++z) {
        for (std::uint64_t p = 0; p < kZoneOf / per_command; ++p) {
            const std::uint64_t lba = zone_start(32 + z) + p * per_command;
            ASSERT_EQ(io.submit(ns, {Op::write, lba, per_command, &data, p * per_command * 4096, p},
                                Post::deferred),
                      SubmitResult::queued);
        }
    }
    io.commit();
    std::size_t invalid_writes = 0;
    for (const Completion& c : wait_for(io, kDepth / 2 * kZoneOf / per_command)) {
        invalid_writes += c.status.nvme.is(wire::ZonedStatus::zone_invalid_write) ? 1 : 0;
    }
    EXPECT_GT(invalid_writes, 0u) << "the fault did not reorder: the test would prove nothing";

    // Split writes, QD 16: whole zones, each one transfer of 8 pieces.
    for (std::size_t z = 0; z < kDepth; ++z) {
        ASSERT_EQ(io.submit(ns, {Op::write, zone_start(z), kZoneOf, &data, z * kZoneOf * 4096, z},
                            Post::deferred),
                  SubmitResult::queued);
    }
    io.commit();
    for (const Completion& c : wait_for(io, kDepth)) {
        EXPECT_TRUE(c.status.ok()) << "zone " << c.user_data << ": " << describe(c.status);
    }
    // And blocking ones, with two I/O queues to spread pieces over.
    for (std::size_t z = kDepth; z < 2 * kDepth; ++z) {
        ns.write(data, zone_start(z), kZoneOf, (z - kDepth) * kZoneOf * 4096);
    }
    auto back = ctrl.allocate(kZoneOf * 4096);
    for (std::size_t z = 0; z < 2 * kDepth; ++z) {
        SCOPED_TRACE(z);
        const Zone zone = ns.report_zones(zone_start(z), 1).at(0);
        EXPECT_EQ(zone.state, ZoneState::full);
        ns.read(back, zone_start(z), kZoneOf);
        EXPECT_TRUE(same(back, 0, data, (z % kDepth) * kZoneOf * 4096, kZoneOf * 4096));
    }
    ctrl.close();
    const std::string stats = target.stop();
    EXPECT_GT(TargetProcess::stat(stats, "faults_injected").value_or(0), 20u);
}
