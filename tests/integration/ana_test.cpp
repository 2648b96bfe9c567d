// Asymmetric namespace access against nvmeof-target on two ports: the path
// preferred at connect, the first path down at start, and the move on an ANA
// change notice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kBlock = 512;

std::string path_text(const TargetProcess& target, std::size_t index) {
    return target.address() + ":" + std::to_string(target.ports().at(index));
}

Options two_paths(const TargetProcess& target) {
    Options o = target.options(5s);
    o.target = path_text(target, 0) + "," + path_text(target, 1);
    return o;
}

}  // namespace

TEST(Ana, ConnectPrefersTheOptimizedPath) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's --ana-state";
    }
    TargetProcess target({"--port", "0", "--ana-state", "0:non-optimized"});
    Controller c = Controller::connect(two_paths(target));
    EXPECT_EQ(c.limits().target_address, path_text(target, 1));
}

TEST(Ana, WithoutAnOptimizedPathTheFirstNonOptimizedIsUsed) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's --ana-state";
    }
    TargetProcess target(
        {"--port", "0", "--ana-state", "0:inaccessible", "--ana-state", "1:non-optimized"});
    Controller c = Controller::connect(two_paths(target));
    EXPECT_EQ(c.limits().target_address, path_text(target, 1));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    EXPECT_NO_THROW(ns.write(block, 0, 1));
}

TEST(Ana, NoUsablePathFailsNamingANA) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's --ana-state";
    }
    TargetProcess target(
        {"--port", "0", "--ana-state", "0:inaccessible", "--ana-state", "1:persistent-loss"});
    try {
        Controller::connect(two_paths(target));
        FAIL() << "connected through inaccessible paths";
    } catch (const ConnectError& e) {
        EXPECT_NE(std::string(e.what()).find("ANA"), std::string::npos) << e.what();
    }
}

TEST(Ana, FirstPathDownAtStartConnectsTheSecond) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's port-down fault";
    }
    // Fires in the target's first pass: port 0 never takes a connection.
    TargetProcess target({"--port", "0", "--fault", "port-down-after=0:0"});
    std::this_thread::sleep_for(200ms);
    Controller c = Controller::connect(two_paths(target));  // no reconnect needed for this
    EXPECT_EQ(c.limits().target_address, path_text(target, 1));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    EXPECT_NO_THROW(ns.write(block, 0, 1));
}

TEST(Ana, ChangeNoticeMovesToTheNextPathWithDataIntact) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's ana-change fault";
    }
    // Commands 1..~16 are the connect; port 0 turns inaccessible among the writes.
    TargetProcess target({"--port", "0", "--fault", "ana-change-after=40:0:inaccessible"});
    Options o = two_paths(target);
    o.ctrl_loss_tmo = 10s;
    o.reconnect_delay = 3s;  // an outage begun by a failed I/O would show it; the move waits none
    Controller c = Controller::connect(o);
    ASSERT_EQ(c.limits().target_address, path_text(target, 0));
    Namespace ns = c.namespace_at(1);
    MemoryRegion block = c.allocate(kBlock);
    constexpr std::uint32_t kWrites = 60;
    for (std::uint32_t i = 0; i < kWrites; ++i) {
        std::memset(block.data(), static_cast<int>(i + 1), kBlock);
        ns.write(block, i, 1);
        // Between writes the notice has time to arrive, and is taken here.
        const auto until = std::chrono::steady_clock::now() + 20ms;
        while (std::chrono::steady_clock::now() < until) {
            ASSERT_TRUE(c.keep_connected());
            std::this_thread::sleep_for(1ms);
        }
    }
    for (std::uint32_t i = 0; i < kWrites; ++i) {
        ns.read(block, i, 1);
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(block.data());
        ASSERT_EQ(bytes[0], static_cast<std::uint8_t>(i + 1)) << "block " << i;
        ASSERT_EQ(bytes[kBlock - 1], static_cast<std::uint8_t>(i + 1)) << "block " << i;
    }
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.ana_moves, 1u);
    EXPECT_EQ(stats.reconnects, 1u);
    ASSERT_EQ(stats.outages.size(), 1u);
    EXPECT_LT(stats.outages[0], 3s) << "the move waited reconnect_delay: not the ANA notice";
    EXPECT_EQ(stats.path, path_text(target, 1));
    EXPECT_EQ(stats.transfers_failed, 0u);
}

TEST(Ana, PathStatusOnIoHoldsItUntilThePathIsUsableAgain) {
    if (!TargetProcess::can_configure()) {
        GTEST_SKIP() << "needs nvmeof-target's ana-change fault";
    }
    // One path: inaccessible for a while (reconnect attempts count as commands
    // too), then optimized again. I/Os answered with the path status are held,
    // reconnects through the inaccessible path are refused, and they are re-sent
    // once it is usable: none fails.
    TargetProcess target({"--fault", "ana-change-after=60:0:inaccessible", "--fault",
                          "ana-change-after=100:0:optimized"});
    Options o = target.options(5s);
    o.ctrl_loss_tmo = 10s;
    o.reconnect_delay = 100ms;
    Controller c = Controller::connect(o);
    Namespace ns = c.namespace_at(1);
    IoQueue q = c.io(0);
    const std::size_t depth = std::min<std::size_t>(q.capacity() / 2, 8);
    MemoryRegion arena = c.allocate(kBlock * depth);
    std::vector<Completion> out(depth);
    std::uint64_t next = 0;
    std::size_t completed_after = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while ((c.reconnect_stats().reconnects == 0 || completed_after < 50) &&
           std::chrono::steady_clock::now() < deadline) {
        while (q.in_flight() + q.held() < depth) {
            const Transfer t{Op::write, next % 1024, 1, &arena, (next % depth) * kBlock, next};
            if (q.submit(ns, t) != SubmitResult::queued) {
                break;
            }
            ++next;
        }
        const std::size_t n = q.poll(out);
        for (std::size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(out[i].status.ok()) << describe(out[i].status);
        }
        completed_after += c.reconnect_stats().reconnects > 0 ? n : 0;
        ASSERT_TRUE(c.keep_connected());
    }
    const ReconnectStats& stats = c.reconnect_stats();
    EXPECT_EQ(stats.reconnects, 1u);
    EXPECT_GT(stats.failed_attempts, 0u) << "no reconnect was refused while inaccessible";
    EXPECT_GT(stats.transfers_retried, 0u);
    EXPECT_EQ(stats.transfers_failed, 0u);
    EXPECT_EQ(stats.ana_moves, 0u);  // one path: nowhere to move on the notice
    EXPECT_GE(completed_after, 50u);
}
