// Transfers of more pieces than the queue has slots: queued in parts, posted
// in order as slots free up, each completing once with its data intact.
#include <gtest/gtest.h>

#include <cstring>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

namespace {

// Polls until `count` transfers finished; returns them in completion order.
std::vector<Completion> wait_for(IoQueue& io, std::size_t count) {
    std::vector<Completion> seen;
    Completion done[8];
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (seen.size() < count && std::chrono::steady_clock::now() < deadline) {
        const std::size_t n = io.poll(done);
        seen.insert(seen.end(), done, done + n);
    }
    return seen;
}

constexpr std::uint64_t kPieceBytes = 8 * 1024;  // --mdts 1: 2 × 4 KiB pages
constexpr std::uint64_t kBigBytes = 1 << 20;     // 128 pieces

}  // namespace

TEST(LargeTransfer, MorePiecesThanTheQueueHoldsWithDataChecked) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (limits)";
    TargetProcess target({"--mqes", "7", "--mdts", "1"});  // 8 entries, 7 usable slots
    auto ctrl = Controller::connect(target.options());
    ASSERT_EQ(ctrl.limits().max_transfer_bytes, kPieceBytes);
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    ASSERT_EQ(io.capacity(), 7u);
    const std::uint64_t blocks = kBigBytes / ns.lba_size();

    auto out = ctrl.allocate(2 * kBigBytes);
    fill(out, 7);
    // Two big writes and a small one behind them: all accepted at once.
    const Transfer first{Op::write, 0, blocks, &out, 0, 1};
    const Transfer second{Op::write, blocks, blocks, &out, kBigBytes, 2};
    ASSERT_EQ(io.pieces(ns, first), kBigBytes / kPieceBytes);
    ASSERT_EQ(io.submit(ns, first), SubmitResult::queued) << describe(io.last_error());
    ASSERT_EQ(io.submit(ns, second), SubmitResult::queued) << describe(io.last_error());
    ASSERT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 3}), SubmitResult::queued);
    EXPECT_LE(io.in_flight(), io.capacity());
    const auto written = wait_for(io, 3);
    ASSERT_EQ(written.size(), 3u);
    for (const Completion& c : written) {
        EXPECT_TRUE(c.status.ok()) << c.user_data << ": " << describe(c.status);
    }
    // Posted in order: the first big write finishes before the second.
    EXPECT_EQ(written[0].user_data, 1u);
    EXPECT_EQ(io.in_flight(), 0u);

    auto in = ctrl.allocate(2 * kBigBytes);
    ASSERT_EQ(io.submit(ns, {Op::read, 0, 2 * blocks, &in, 0, 4}), SubmitResult::queued);
    const auto read = wait_for(io, 1);
    ASSERT_EQ(read.size(), 1u);
    EXPECT_TRUE(read[0].status.ok()) << describe(read[0].status);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);

    ctrl.close();
    const std::string stats = target.stop();
    EXPECT_EQ(TargetProcess::stat(stats, "commands.write").value_or(0), 2 * kBigBytes / kPieceBytes)
        << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "bytes.write").value_or(0), 2 * kBigBytes) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "bytes.read").value_or(0), 2 * kBigBytes) << stats;
    EXPECT_LE(TargetProcess::stat(stats, "max_inflight.io").value_or(99), 7u) << stats;
}

TEST(LargeTransfer, FirstErrorWinsAndWaitingPiecesFailOnce) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (faults)";
    // The 3rd I/O command fails with LBA Out of Range; the rest of the transfer still
    // completes, and the transfer reports that status exactly once.
    TargetProcess target({"--mqes", "3", "--mdts", "1", "--fault", "fail-io=3:0/0x80"});
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    auto buf = ctrl.allocate(kBigBytes);
    ASSERT_EQ(io.submit(ns, {Op::write, 0, kBigBytes / ns.lba_size(), &buf, 0, 9}),
              SubmitResult::queued);
    const auto done = wait_for(io, 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].user_data, 9u);
    EXPECT_TRUE(done[0].status.nvme.is(wire::GenericStatus::lba_out_of_range))
        << describe(done[0].status);
    Completion more[4];
    EXPECT_EQ(io.poll(more), 0u);
    EXPECT_EQ(io.in_flight(), 0u);
}

TEST(LargeTransfer, WaitingPiecesFailWithTheQueue) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (faults)";
    // Connect (admin) and its commands are answered, then nothing: the built pieces time
    // out, the queue fails, and the transfer with unbuilt pieces still finishes once.
    TargetProcess target({"--mqes", "3", "--mdts", "1", "--fault", "stop-answering-after=12"});
    Options o = target.options(2s);
    o.io_timeout = 1s;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    auto buf = ctrl.allocate(kBigBytes);
    ASSERT_EQ(io.submit(ns, {Op::read, 0, kBigBytes / ns.lba_size(), &buf, 0, 5}),
              SubmitResult::queued);
    const auto done = wait_for(io, 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].user_data, 5u);
    EXPECT_FALSE(done[0].status.ok());
    EXPECT_TRUE(io.failed());
}

TEST(LargeTransfer, NearCompletionCountsTransfersTheNextAnswerCanFinish) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (faults)";
    // The connect's 10 commands (admin and I/O queue) and 3 of the split read's 4 pieces
    // are answered, then nothing: the read waits on its last piece until the queue
    // times out. (A connect of more commands fails the ASSERT on in_flight() below.)
    constexpr int kConnectCommands = 10;
    TargetProcess target(
        {"--mdts", "1", "--fault", "stop-answering-after=" + std::to_string(kConnectCommands + 3)});
    Options o = target.options(2s);
    o.io_timeout = 2s;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    auto buf = ctrl.allocate(8 * kPieceBytes);
    const Transfer split{Op::read, 0, 4 * kPieceBytes / ns.lba_size(), &buf, 0, 1};
    ASSERT_EQ(io.pieces(ns, split), 4u);
    EXPECT_EQ(io.near_completion(), 0u);
    ASSERT_EQ(io.submit(ns, split), SubmitResult::queued) << describe(io.last_error());
    // Four answers to go: the next one cannot finish it.
    EXPECT_EQ(io.near_completion(), 0u);

    Completion done[4];
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (io.in_flight() > 1 && std::chrono::steady_clock::now() < deadline) {
        ASSERT_EQ(io.poll(done), 0u);
    }
    ASSERT_EQ(io.in_flight(), 1u);
    EXPECT_EQ(io.near_completion(), 1u);  // three pieces answered, the last one out

    // A one-command transfer is one answer from done as soon as it is submitted.
    const Transfer single{Op::read, 0, kPieceBytes / ns.lba_size(), &buf, 4 * kPieceBytes, 2};
    ASSERT_EQ(io.pieces(ns, single), 1u);
    ASSERT_EQ(io.submit(ns, single), SubmitResult::queued) << describe(io.last_error());
    EXPECT_EQ(io.near_completion(), 2u);

    // Neither is answered: both fail with the queue, and nothing is left near.
    const auto failed = wait_for(io, 2);
    ASSERT_EQ(failed.size(), 2u);
    for (const Completion& c : failed) {
        EXPECT_FALSE(c.status.ok()) << c.user_data;
    }
    EXPECT_EQ(io.near_completion(), 0u);
}
