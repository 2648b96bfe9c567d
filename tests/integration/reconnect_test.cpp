// Reconnect (Options::ctrl_loss_tmo) against nvmeof-target's outage-after
// fault: every connection dropped and no listener for a while, mid-run.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kBlock = 512;

Options reconnecting(const TargetProcess& target, std::chrono::milliseconds ctrl_loss_tmo) {
    Options o = target.options(5s);
    o.ctrl_loss_tmo = ctrl_loss_tmo;
    o.reconnect_delay = 200ms;
    return o;
}

void fill(MemoryRegion& block, std::uint32_t seed) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(block.data());
    for (std::size_t i = 0; i < block.size(); ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed * 131 + i * 7);
    }
}

// Writes block 0 until a write fails; its errno (0: 1,000 writes went through).
int errno_of_first_failed_write(Namespace& ns, MemoryRegion& block) {
    for (int i = 0; i < 1000; ++i) {
        try {
            ns.write(block, 0, 1);
        } catch (const TransportError& e) {
            return e.sys_errno();
        }
    }
    return 0;
}

}  // namespace

TEST(Reconnect, BlockingTransfersRideOutAnOutageWithDataIntact) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    // Commands 1..~10 are the connect; the outage hits among the writes.
    TargetProcess target({"--fault", "outage-after=60:700"});
    Controller c = Controller::connect(reconnecting(target, 10s));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock * 8);
    constexpr std::uint32_t kWrites = 200;
    for (std::uint32_t i = 0; i < kWrites; ++i) {
        fill(block, i);
        ns.write(block, std::uint64_t{i} * 8, 8);
    }
    MemoryRegion expected = c.allocate(kBlock * 8);
    for (std::uint32_t i = 0; i < kWrites; ++i) {
        fill(expected, i);
        ns.read(block, std::uint64_t{i} * 8, 8);
        ASSERT_EQ(std::memcmp(block.data(), expected.data(), block.size()), 0) << "write " << i;
    }
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.reconnects, 1u);
    ASSERT_EQ(stats.outages.size(), 1u);
    EXPECT_GE(stats.outages[0], 600ms);  // the target stayed away 700 ms
    EXPECT_FALSE(stats.lost);
    EXPECT_TRUE(c.is_open());
}

TEST(Reconnect, InFlightTransfersAreResentAndNewOnesAreBusyMeanwhile) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    // Each answer held 5 ms: when the outage drops the connection, writes are in
    // flight whatever the timing (without it, a busy machine could have every
    // posted write answered by then, and nothing would be re-sent).
    TargetProcess target({"--fault", "outage-after=40:500", "--fault", "delay-ms=5"});
    Controller c = Controller::connect(reconnecting(target, 10s));
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    const std::size_t depth = std::min<std::size_t>(q.capacity() / 2, 16);
    MemoryRegion arena = c.allocate(kBlock * depth);
    std::size_t completed = 0;
    std::size_t busy_while_reconnecting = 0;
    std::uint64_t next = 0;
    std::vector<Completion> out(depth);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    // Until the outage is over and 100 more have completed after it.
    std::size_t completed_after = 0;
    while ((c.reconnect_stats().reconnects == 0 || completed_after < 100) &&
           std::chrono::steady_clock::now() < deadline) {
        while (q.in_flight() + q.held() < depth) {
            const Transfer t{Op::write, next % 1024, 1, &arena, (next % depth) * kBlock, next};
            const SubmitResult r = q.submit(ns, t);
            if (r == SubmitResult::busy) {
                break;  // the queue failed; the controller notices at its next keep_connected()
            }
            ASSERT_EQ(r, SubmitResult::queued) << describe(q.last_error());
            ++next;
        }
        if (c.is_reconnecting()) {
            // Transfer records are free (depth is half the queue): busy means "wait".
            const Transfer t{Op::write, 0, 1, &arena, 0, ~std::uint64_t{0}};
            ASSERT_EQ(q.submit(ns, t), SubmitResult::busy);
            ++busy_while_reconnecting;
        }
        const std::size_t n = q.poll(out);
        for (std::size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(out[i].status.ok()) << describe(out[i].status);
            ASSERT_NE(out[i].user_data, ~std::uint64_t{0});
        }
        completed += n;
        completed_after += c.reconnect_stats().reconnects > 0 ? n : 0;
        ASSERT_TRUE(c.keep_connected());
    }
    EXPECT_GE(completed_after, 100u);
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.reconnects, 1u);
    EXPECT_GT(stats.transfers_retried, 0u);
    EXPECT_EQ(stats.transfers_failed, 0u);
    EXPECT_GT(busy_while_reconnecting, 0u);
}

// The outage comes right after the target answered a write, and the admin
// queue sees it before the I/O queue is polled: the teardown of the I/O queue
// takes the answer it had already received, so that write completes and is not
// re-sent (on a zoned namespace a second write would meet Zone Invalid Write).
static void answer_received_before_the_teardown(Transport transport) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    // Commands 1..~10 are the connect; the outage follows one of the writes.
    std::vector<std::string> extra{"--fault", "outage-after=40:300"};
    if (transport == Transport::tcp) {
        extra.insert(extra.begin(), {"--transport", "tcp"});
    }
    TargetProcess target(extra);
    Options o = reconnecting(target, 10s);
    o.transport = transport;
    Controller c = Controller::connect(o);
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    MemoryRegion block = c.allocate(kBlock);
    std::vector<Completion> out(4);
    std::uint64_t completed = 0;
    constexpr std::uint64_t kWrites = 60;
    for (std::uint64_t i = 0; i < kWrites; ++i) {
        const Transfer t{Op::write, i, 1, &block, 0, i};
        SubmitResult r = q.submit(ns, t);
        for (auto until = std::chrono::steady_clock::now() + 10s;
             r == SubmitResult::busy && std::chrono::steady_clock::now() < until;
             r = q.submit(ns, t)) {
            ASSERT_TRUE(c.keep_connected());  // an outage under way: held off until it ends
        }
        ASSERT_EQ(r, SubmitResult::queued) << describe(q.last_error());
        // The answer (and, after the outage's command, the disconnect) comes in
        // before the host looks; then the admin queue is polled first.
        std::this_thread::sleep_for(20ms);
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (completed <= i && std::chrono::steady_clock::now() < deadline) {
            ASSERT_TRUE(c.keep_connected());
            const std::size_t n = q.poll(out);
            for (std::size_t k = 0; k < n; ++k) {
                ASSERT_TRUE(out[k].status.ok()) << describe(out[k].status);
                EXPECT_EQ(out[k].user_data, i);
            }
            completed += n;
        }
        ASSERT_EQ(completed, i + 1) << "write " << i << " did not complete";
    }
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.reconnects, 1u);
    EXPECT_EQ(stats.transfers_retried, 0u) << "an answered write was held and re-sent";
}

TEST(Reconnect, AnAnswerReceivedBeforeTheTeardownIsNotResent) {
    answer_received_before_the_teardown(Transport::rdma);
}

TEST(Reconnect, AnAnswerReceivedBeforeTheTeardownIsNotResentOverTcp) {
    answer_received_before_the_teardown(Transport::tcp);
}

// A blocking read and polled writes share I/O queue 0 when the outage drops
// them all. Both are re-sent, and each completion goes back where it came
// from: the read's to the blocking caller (it is marked so in its transfer
// record), the writes' to the caller's polls, none twice and none lost.
TEST(Reconnect, AReplayedBlockingReadReturnsToItsCallerNotToThePoller) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    // Each answer held 5 ms: whichever command sets the outage off, the
    // blocking read sent with it is still unanswered when the connection drops.
    TargetProcess target({"--fault", "outage-after=40:300", "--fault", "delay-ms=5"});
    Controller c = Controller::connect(reconnecting(target, 10s));
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    constexpr std::uint64_t kReadLba = 4096;
    MemoryRegion pattern = c.allocate(kBlock);
    fill(pattern, 77);
    ns.write(pattern, kReadLba, 1);
    MemoryRegion readback = c.allocate(kBlock);
    constexpr std::size_t kWrites = 8;
    MemoryRegion arena = c.allocate(kBlock * kWrites);
    std::vector<Completion> out(kWrites * 2);
    std::vector<bool> seen;
    std::uint64_t submitted = 0;
    bool read_rode_out_the_outage = false;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!read_rode_out_the_outage && std::chrono::steady_clock::now() < deadline) {
        for (std::size_t i = 0; i < kWrites; ++i) {
            const Transfer t{Op::write, i, 1, &arena, i * kBlock, submitted};
            ASSERT_EQ(q.submit(ns, t), SubmitResult::queued) << describe(q.last_error());
            ++submitted;
        }
        seen.resize(submitted, false);
        const std::uint64_t reconnects_before = c.reconnect_stats().reconnects;
        std::memset(readback.data(), 0, readback.size());
        ns.read(readback, kReadLba, 1);  // waits out the outage when it hits now
        ASSERT_EQ(std::memcmp(readback.data(), pattern.data(), kBlock), 0);
        read_rode_out_the_outage = c.reconnect_stats().reconnects != reconnects_before;
        std::size_t polled = 0;
        while (polled < kWrites && std::chrono::steady_clock::now() < deadline) {
            const std::size_t n = q.poll(out);
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_TRUE(out[i].status.ok()) << describe(out[i].status);
                ASSERT_LT(out[i].user_data, submitted) << "a completion the poller never submitted";
                ASSERT_FALSE(seen[out[i].user_data])
                    << "write " << out[i].user_data << " completed twice";
                seen[out[i].user_data] = true;
            }
            polled += n;
            ASSERT_TRUE(c.keep_connected());
        }
        ASSERT_EQ(polled, kWrites);
    }
    ASSERT_TRUE(read_rode_out_the_outage)
        << "the outage never hit while a blocking read was in flight";
    EXPECT_EQ(q.poll(out), 0u);  // nothing left over, the read's completion included
    EXPECT_EQ(q.in_flight(), 0u);
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.reconnects, 1u);
    EXPECT_GT(stats.transfers_retried, 0u);
    EXPECT_EQ(stats.transfers_failed, 0u);
}

TEST(Reconnect, GivesUpAfterCtrlLossTmoWithENODEV) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    TargetProcess target({"--fault", "outage-after=40:60000"});
    Controller c = Controller::connect(reconnecting(target, 1500ms));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    const auto start = std::chrono::steady_clock::now();  // the outage follows within ~50 ms
    std::chrono::steady_clock::time_point failed_at{};
    int error = 0;
    for (int i = 0; i < 1000 && error == 0; ++i) {
        try {
            ns.write(block, 0, 1);
        } catch (const TransportError& e) {
            error = e.sys_errno();
            failed_at = std::chrono::steady_clock::now();
        }
    }
    ASSERT_EQ(error, ENODEV);
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_TRUE(stats.lost);
    EXPECT_EQ(stats.reconnects, 0u);
    EXPECT_GT(stats.failed_attempts, 0u);
    EXPECT_FALSE(c.keep_connected());
    EXPECT_LT(failed_at - start, 1500ms + 1s) << "not given up within ctrl_loss_tmo + 1 s";
}

// Transfers in flight at the drop are held (each keeps its slot), then failed
// with ENODEV when ctrl_loss_tmo passes: once handed back, every slot is free
// again and nothing counts as in flight or held.
TEST(Reconnect, HeldTransfersGivenUpFreeEverySlot) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    TargetProcess target({"--fault", "outage-after=40:60000", "--fault", "delay-ms=5"});
    Controller c = Controller::connect(reconnecting(target, 1500ms));
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    const std::size_t depth = std::min<std::size_t>(q.capacity(), 16);
    MemoryRegion arena = c.allocate(kBlock * depth);
    std::vector<Completion> out(depth);
    std::size_t given_up = 0;
    std::uint64_t next = 0;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    auto reap = [&] {
        const std::size_t n = q.poll(out);
        for (std::size_t i = 0; i < n; ++i) {
            given_up += out[i].status.sys_errno == ENODEV ? 1 : 0;
        }
        c.keep_connected();
    };
    while (!c.reconnect_stats().lost && std::chrono::steady_clock::now() < deadline) {
        while (q.in_flight() + q.held() < depth) {
            const Transfer t{Op::write, next % 1024, 1, &arena, (next % depth) * kBlock, next};
            if (q.submit(ns, t) != SubmitResult::queued) {
                break;  // busy while reconnecting
            }
            ++next;
        }
        reap();
    }
    ASSERT_TRUE(c.reconnect_stats().lost);
    while (q.in_flight() + q.held() > 0 && std::chrono::steady_clock::now() < deadline) {
        reap();
    }
    reap();
    EXPECT_GT(c.reconnect_stats().transfers_failed, 0u);
    EXPECT_EQ(given_up, c.reconnect_stats().transfers_failed);
    EXPECT_EQ(q.in_flight(), 0u);
    EXPECT_EQ(q.held(), 0u);
    EXPECT_EQ(q.free_slots(), q.capacity());
}

TEST(Reconnect, ZeroCtrlLossTmoKeepsFailingBack) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    TargetProcess target({"--fault", "outage-after=40:500"});
    Controller c = Controller::connect(target.options(5s));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    bool failed = false;
    for (int i = 0; i < 1000 && !failed; ++i) {
        try {
            ns.write(block, 0, 1);
        } catch (const TransportError&) {
            failed = true;
        }
    }
    EXPECT_TRUE(failed);
    EXPECT_EQ(c.reconnect_stats().reconnects, 0u);
    EXPECT_FALSE(c.is_reconnecting());
}

// The target comes back on the same port with a smaller namespace: resending
// held writes there could land past its end, so the controller gives up at once
// (before ctrl_loss_tmo) and says why.
TEST(Reconnect, GivesUpWhenTheNamespaceNoLongerFits) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs its own target, restarted with another namespace";
    }
    auto first = std::make_unique<TargetProcess>(std::vector<std::string>{}, "ram:64M");
    const std::uint16_t port = first->port();
    Controller c = Controller::connect(reconnecting(*first, 20s));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    ns.write(block, 0, 1);
    first->stop();
    TargetProcess second({}, "ram:32M", port);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(errno_of_first_failed_write(ns, block), ENODEV);
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_TRUE(stats.lost);
    EXPECT_EQ(stats.reconnects, 0u);
    EXPECT_NE(stats.lost_reason.find("namespace 1 has 65536 blocks of 512 bytes, not 131072"),
              std::string::npos)
        << stats.lost_reason;
    std::string why;
    EXPECT_FALSE(c.keep_connected(&why));
    EXPECT_NE(why.find("namespace 1 has"), std::string::npos) << why;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "gave up only at ctrl_loss_tmo";
}

// Same for the largest transfer: a target back with a smaller MDTS could not take
// the held transfers as they were split.
TEST(Reconnect, GivesUpWhenTheLargestTransferShrinks) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs its own target, restarted with another MDTS";
    }
    auto first = std::make_unique<TargetProcess>();
    const std::uint16_t port = first->port();
    Controller c = Controller::connect(reconnecting(*first, 20s));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    ns.write(block, 0, 1);
    first->stop();
    TargetProcess second({"--mdts", "1"}, "ram:64M", port);
    ASSERT_EQ(errno_of_first_failed_write(ns, block), ENODEV);
    EXPECT_NE(c.reconnect_stats().lost_reason.find("(MDTS), below the"), std::string::npos)
        << c.reconnect_stats().lost_reason;
}

// In-capsule writes in flight at the drop are re-sent as built after the
// reconnect, unless the new controller takes less in the capsule: then they go
// keyed (the target fetches the data) and the data still lands.
TEST(Reconnect, HeldInCapsuleWritesGoKeyedWhenTheCapsuleShrinks) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs its own target, restarted with a smaller capsule";
    }
    constexpr std::size_t kWrites = 4;
    constexpr std::uint32_t kBytes = 4096;
    // Every answer held 300 ms: the writes are surely in flight when the target goes.
    auto first =
        std::make_unique<TargetProcess>(std::vector<std::string>{"--fault", "delay-ms=300"});
    const std::uint16_t port = first->port();
    Options options = reconnecting(*first, 20s);
    options.timeout = 30s;  // the connect's commands are held too
    Controller c = Controller::connect(options);
    ASSERT_GE(c.limits().in_capsule_bytes, kBytes);
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    MemoryRegion data = c.allocate(kWrites * kBytes);
    fill(data, 7);
    const std::uint64_t blocks = kBytes / ns.lba_size();
    for (std::size_t i = 0; i < kWrites; ++i) {
        ASSERT_EQ(q.submit(ns, {Op::write, i * blocks, blocks, &data, i * kBytes, i}),
                  SubmitResult::queued);
    }
    first->stop();
    first.reset();
    TargetProcess second({"--ioccsz", "4"}, "ram:64M", port);  // the 64-byte SQE alone
    std::vector<Completion> out(kWrites);
    std::size_t done = 0;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (done < kWrites && std::chrono::steady_clock::now() < deadline) {
        const std::size_t n = q.poll(out);
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_TRUE(out[i].status.ok()) << describe(out[i].status);
        }
        done += n;
        c.keep_connected();
    }
    ASSERT_EQ(done, kWrites);
    EXPECT_EQ(c.reconnect_stats().reconnects, 1u);
    ASSERT_EQ(c.reconnect_stats().transfers_retried, kWrites) << "the writes were not in flight";
    EXPECT_EQ(c.limits().in_capsule_bytes, 0u);
    MemoryRegion back = c.allocate(kWrites * kBytes);
    ns.read(back, 0, kWrites * blocks);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), kWrites * kBytes), 0);
    c.close();
    const std::string stats = second.stop();
    EXPECT_EQ(TargetProcess::stat(stats, "in_capsule_writes").value_or(99), 0u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "commands.write").value_or(0), kWrites) << stats;
}

// Split transfers held by an outage are replayed whole; afterwards the queue
// still tells which transfers the next answer can finish (its count of
// transfers waiting for several answers went through the hold and the replay).
TEST(Reconnect, ReplayedSplitTransfersLeaveNearCompletionRight) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's outage fault";
    }
    // 8 KiB per command, 3 commands in flight at most. The connect's 11 commands
    // (9, and the ANA log read and Asynchronous Event Request of a controller that
    // reconnects) and the first transfer's first 3 pieces are answered; its 4th
    // piece, sent as a slot frees, is the 15th command: the outage drops it with
    // that one piece left, and the replay sends all four again.
    TargetProcess target({"--mqes", "3", "--mdts", "1", "--fault", "outage-after=15:300"});
    Controller c = Controller::connect(reconnecting(target, 10s));
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    constexpr std::uint64_t kPiece = 8 * 1024;
    MemoryRegion arena = c.allocate(9 * kPiece);
    const std::uint64_t piece_blocks = kPiece / ns.lba_size();
    const Transfer first{Op::write, 0, 4 * piece_blocks, &arena, 0, 1};
    const Transfer second{Op::write, 4 * piece_blocks, 4 * piece_blocks, &arena, 4 * kPiece, 2};
    ASSERT_EQ(q.pieces(ns, first), 4u);
    ASSERT_EQ(q.submit(ns, first), SubmitResult::queued) << describe(q.last_error());
    ASSERT_EQ(q.submit(ns, second), SubmitResult::queued) << describe(q.last_error());
    EXPECT_EQ(q.near_completion(), 0u);

    std::vector<Completion> out(4);
    std::size_t completed = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (completed < 2 && std::chrono::steady_clock::now() < deadline) {
        const std::size_t n = q.poll(out);
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_TRUE(out[i].status.ok()) << describe(out[i].status);
        }
        completed += n;
        ASSERT_TRUE(c.keep_connected());
    }
    ASSERT_EQ(completed, 2u);
    EXPECT_EQ(c.reconnect_stats().reconnects, 1u);
    EXPECT_GT(c.reconnect_stats().transfers_retried, 0u);
    EXPECT_EQ(q.near_completion(), 0u);

    // After the replay: a split transfer is not near, a one-command one is.
    ASSERT_EQ(q.submit(ns, first), SubmitResult::queued) << describe(q.last_error());
    EXPECT_EQ(q.near_completion(), 0u);
    const Transfer single{Op::write, 0, piece_blocks, &arena, 8 * kPiece, 3};
    ASSERT_EQ(q.submit(ns, single), SubmitResult::queued) << describe(q.last_error());
    EXPECT_EQ(q.near_completion(), 1u);
    completed = 0;
    while (completed < 2 && std::chrono::steady_clock::now() < deadline) {
        completed += q.poll(out);
    }
    ASSERT_EQ(completed, 2u);
    EXPECT_EQ(q.near_completion(), 0u);
}

// Over NVMe/TCP, a target that sends every R2T later than io_timeout but takes
// the reconnect at once: each timeout is an outage that a reconnect ends, so
// ctrl_loss_tmo never passes. The write, re-sent once after its first timeout,
// fails with ETIMEDOUT at its second instead of being held again (it was held
// and re-sent forever before), and the controller serves reads (no R2T) after.
TEST(Reconnect, AnIoThatTimesOutAgainAfterItsResendFails) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's r2t-delay-ms fault";
    }
    TargetProcess target({"--transport", "tcp", "--fault", "r2t-delay-ms=3000"});
    Options o = reconnecting(target, 10s);
    o.transport = Transport::tcp;
    o.io_timeout = 500ms;
    o.reconnect_delay = 100ms;
    Controller c = Controller::connect(o);
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    constexpr std::uint32_t kBytes = 16384;  // above the capsule's 4 KiB: sent on an R2T
    MemoryRegion block = c.allocate(kBytes);
    ASSERT_EQ(q.submit(ns, Transfer{Op::write, 0, kBytes / kBlock, &block, 0, 7}),
              SubmitResult::queued);
    std::vector<Completion> out(1);
    const auto start = std::chrono::steady_clock::now();
    std::size_t n = 0;
    while (n == 0 && std::chrono::steady_clock::now() < start + 10s) {
        n = q.poll(out);
        c.keep_connected();
    }
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_EQ(n, 1u) << "the write was still being re-sent 10 s later";
    EXPECT_EQ(out[0].user_data, 7u);
    EXPECT_EQ(out[0].status.sys_errno, ETIMEDOUT) << describe(out[0].status);
    // Two timeouts and a reconnect between them, with a second of slack.
    EXPECT_LT(took, 2 * 500ms + 100ms + 1s);
    EXPECT_GE(c.reconnect_stats().reconnects, 1u);
    ns.read(block, 0, kBytes / kBlock);  // rides out the outage the second timeout began
    EXPECT_TRUE(c.is_open());
}
