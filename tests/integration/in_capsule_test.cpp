// In-capsule write data against nvmeof-target: a write that fits the I/O
// capsule (IOCCSZ × 16 − 64 bytes) carries its data in the command SEND, and
// the target's counters show it took no RDMA READ; anything larger, a target
// that allows none, or the option turned off goes keyed. Data is read back
// and compared byte for byte either way.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

namespace {

#define REQUIRE_CONFIGURABLE()                                          \
    do {                                                                \
        if (!TargetProcess::can_configure()) {                          \
            GTEST_SKIP() << "needs our nvmeof-target (stats, options)"; \
        }                                                               \
    } while (false)

constexpr std::uint32_t kDefaultInCapsuleBytes = 4096;  // the target's default IOCCSZ 260

// Writes `blocks` blocks at `slba` from `offset` in a fresh pattern, reads them
// back and compares.
void write_and_check(Controller& ctrl, Namespace& ns, std::uint64_t slba, std::uint64_t blocks,
                     std::uint64_t offset, std::uint32_t seed) {
    const std::uint64_t bytes = blocks * ns.lba_size();
    auto out = ctrl.allocate(offset + bytes);
    auto in = ctrl.allocate(bytes);
    fill(out, seed);
    ns.write(out, slba, blocks, offset);
    ns.read(in, slba, blocks);
    EXPECT_EQ(std::memcmp(in.data(), out.data() + offset, bytes), 0)
        << blocks << " blocks at " << slba;
}

struct WriteCounts {
    std::uint64_t writes = 0;
    std::uint64_t in_capsule = 0;
    // RDMA READs beyond those of the Connect data (always keyed, one per Connect)
    // and of Host Behavior Support's (keyed on the admin queue, one per controller).
    std::uint64_t keyed = 0;
};

WriteCounts counts_after(TargetProcess& target, Controller& ctrl) {
    ctrl.close();
    const std::string stats = target.stop();
    WriteCounts c;
    c.writes = TargetProcess::stat(stats, "commands.write").value_or(0);
    c.in_capsule = TargetProcess::stat(stats, "in_capsule_writes").value_or(0);
    c.keyed = TargetProcess::stat(stats, "rdma.read_ops").value_or(0) -
              TargetProcess::stat(stats, "commands.connect").value_or(0) -
              TargetProcess::stat(stats, "controllers").value_or(0);
    return c;
}

}  // namespace

TEST(InCapsule, WriteThatFitsTheCapsuleTakesNoRdmaRead) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    EXPECT_EQ(ctrl.limits().in_capsule_bytes, kDefaultInCapsuleBytes);
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t lba = ns.lba_size();
    write_and_check(ctrl, ns, 0, 1, 0, 1);                                   // one block
    write_and_check(ctrl, ns, 8, kDefaultInCapsuleBytes / lba, 3 * lba, 2);  // exactly the limit
    write_and_check(ctrl, ns, 64, kDefaultInCapsuleBytes / lba + 1, 0, 3);   // one block above
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, 3u);
    EXPECT_EQ(c.in_capsule, 2u);
    EXPECT_EQ(c.keyed, 1u);
}

TEST(InCapsule, EachPieceOfASplitWriteDecidesOnItsOwnSize) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--mdts", "1"});  // 8 KiB per command
    auto ctrl = Controller::connect(target.options());
    ASSERT_EQ(ctrl.limits().max_transfer_bytes, 8192u);
    auto ns = ctrl.namespace_at(1);
    // 12 KiB: an 8 KiB piece (keyed) and a 4 KiB piece (in-capsule).
    write_and_check(ctrl, ns, 100, 12288 / ns.lba_size(), ns.lba_size(), 4);
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, 2u);
    EXPECT_EQ(c.in_capsule, 1u);
    EXPECT_EQ(c.keyed, 1u);
}

TEST(InCapsule, ManyInFlightSharingSlotsWithReadsAndFlush) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    const std::uint32_t lba = ns.lba_size();
    constexpr std::uint64_t kWrites = 48;  // more than fit at once: slots are reused
    const std::uint64_t blocks = kDefaultInCapsuleBytes / lba;
    auto out = ctrl.allocate(kWrites * kDefaultInCapsuleBytes);
    auto in = ctrl.allocate(kWrites * kDefaultInCapsuleBytes);
    fill(out, 5);
    std::uint64_t next = 0;
    std::uint64_t done = 0;
    Completion completions[16];
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (done < 2 * kWrites && std::chrono::steady_clock::now() < deadline) {
        // Writes first, then reads of the same blocks on the slots they left.
        if (next < 2 * kWrites) {
            const bool write = next < kWrites;
            const std::uint64_t i = next % kWrites;
            const Op op = write ? Op::write : Op::read;
            const MemoryRegion* buffer = write ? &out : &in;
            const Transfer t{op, i * blocks, blocks, buffer, i * kDefaultInCapsuleBytes, next};
            if ((write || done >= kWrites) && io.submit(ns, t) == SubmitResult::queued) {
                ++next;
            }
        }
        const std::size_t n = io.poll(completions);
        for (std::size_t k = 0; k < n; ++k) {
            EXPECT_TRUE(completions[k].status.ok())
                << completions[k].user_data << ": " << describe(completions[k].status);
        }
        done += n;
    }
    ASSERT_EQ(done, 2 * kWrites);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
    ns.flush();
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, kWrites);
    EXPECT_EQ(c.in_capsule, kWrites);
    EXPECT_EQ(c.keyed, 0u);
}

TEST(InCapsule, OptionOffSendsEveryWriteKeyed) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target;
    Options options = target.options();
    options.in_capsule_writes = false;
    auto ctrl = Controller::connect(options);
    EXPECT_EQ(ctrl.limits().in_capsule_bytes, 0u);
    auto ns = ctrl.namespace_at(1);
    write_and_check(ctrl, ns, 0, 1, 0, 6);
    write_and_check(ctrl, ns, 8, kDefaultInCapsuleBytes / ns.lba_size(), 0, 7);
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, 2u);
    EXPECT_EQ(c.in_capsule, 0u);
    EXPECT_EQ(c.keyed, 2u);
}

TEST(InCapsule, TargetWithoutRoomInTheCapsuleGetsKeyedWrites) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--ioccsz", "4"});  // the 64-byte SQE alone
    auto ctrl = Controller::connect(target.options());
    EXPECT_EQ(ctrl.limits().ioccsz, 4u);
    EXPECT_EQ(ctrl.limits().in_capsule_bytes, 0u);
    auto ns = ctrl.namespace_at(1);
    write_and_check(ctrl, ns, 0, 1, 0, 8);
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, 1u);
    EXPECT_EQ(c.in_capsule, 0u);
    EXPECT_EQ(c.keyed, 1u);
}

TEST(InCapsule, SmallerCapsuleMovesTheThreshold) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--ioccsz", "36"});  // 64 + 512 bytes
    auto ctrl = Controller::connect(target.options());
    EXPECT_EQ(ctrl.limits().in_capsule_bytes, 512u);
    auto ns = ctrl.namespace_at(1);
    ASSERT_EQ(ns.lba_size(), 512u);
    write_and_check(ctrl, ns, 0, 1, 0, 9);   // 512 bytes: in the capsule
    write_and_check(ctrl, ns, 8, 2, 0, 10);  // 1 KiB: keyed
    const WriteCounts c = counts_after(target, ctrl);
    EXPECT_EQ(c.writes, 2u);
    EXPECT_EQ(c.in_capsule, 1u);
    EXPECT_EQ(c.keyed, 1u);
}
