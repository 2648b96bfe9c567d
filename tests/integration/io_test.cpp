// Data path against a real peer: read/write/flush with data checked, MDTS
// splits, several I/O queues, the non-blocking API, validation errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <optional>

#include "nvmeof/nvmeof.hpp"
#include "nvmeof/wire/io.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;

namespace {

#define REQUIRE_CONFIGURABLE()           \
    if (!TargetProcess::can_configure()) \
    GTEST_SKIP() << "needs our nvmeof-target (limits/faults)"

}  // namespace

TEST(Io, HappyPathReadWriteFlushWithDataChecked) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    const Limits& limits = ctrl.limits();
    EXPECT_GE(limits.queue_size, 2);
    EXPECT_EQ(limits.usable_slots, limits.queue_size - 1);
    EXPECT_EQ(limits.io_queues, 1u);
    EXPECT_FALSE(limits.device_name.empty());
    EXPECT_FALSE(limits.source_address.empty());
    EXPECT_NE(limits.host_nqn.find("nqn."), std::string::npos);

    auto ns = ctrl.namespace_at(1);
    ASSERT_GT(ns.size_lbas(), 64u);
    const std::uint32_t lba = ns.lba_size();
    auto out = ctrl.allocate(8 * lba);
    auto in = ctrl.allocate(8 * lba);
    fill(out, 1);
    ns.write(out, 16);  // blocks from the buffer size
    ns.read(in, 16, 8);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
    ns.flush();

    // buffer_offset and a partial block count
    std::memset(in.data(), 0, in.size());
    ns.read(in, 18, 2, 3 * lba);
    EXPECT_EQ(std::memcmp(in.data() + 3 * lba, out.data() + 2 * lba, 2 * lba), 0);

    ns.write_zeroes(16, 4);
    ns.read(in, 16, 8);
    std::vector<std::byte> zeros(4 * lba);
    EXPECT_EQ(std::memcmp(in.data(), zeros.data(), zeros.size()), 0);
    EXPECT_EQ(std::memcmp(in.data() + 4 * lba, out.data() + 4 * lba, 4 * lba), 0);
    ns.deallocate(0, 8);

    // The low-level API, as in the Python package.
    auto io = ctrl.io();
    auto request =
        io.submit(wire::rw_command(wire::IoOpcode::read, ns.nsid(), 20, 1, in.remote(), lba), &in);
    while (!request.done())
        io.make_progress();
    request.response().raise_for_status();
    EXPECT_EQ(std::memcmp(in.data(), out.data() + 4 * lba, lba), 0);
    ctrl.close();
    EXPECT_FALSE(ctrl.is_open());
    const std::string stats = target.stop();
    if (!stats.empty()) {
        EXPECT_GE(TargetProcess::stat(stats, "commands.write").value_or(0), 1u);
        EXPECT_GE(TargetProcess::stat(stats, "commands.flush").value_or(0), 1u);
    }
}

// The low-level submit posts no command whose keyed SGL lies outside its data
// owner: none named, another registration's rkey, or past either end.
TEST(Io, LowLevelSubmitChecksTheDataOwner) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t lba = ns.lba_size();
    auto buf = ctrl.allocate(4 * lba);
    auto other = ctrl.allocate(4 * lba);
    auto io = ctrl.io();
    const auto read = [&](const wire::RemoteBuffer& data) {
        return wire::rw_command(wire::IoOpcode::read, ns.nsid(), 0,
                                static_cast<std::uint32_t>(data.length / lba), data, lba);
    };
    const auto refused = [&](const wire::Sqe& command, const MemoryRegion* owner,
                             const std::string& why) {
        try {
            io.submit(command, owner);
            ADD_FAILURE() << "submitted, though " << why;
        } catch (const InvalidArgument& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    refused(read(buf.remote(lba, lba)), nullptr, "no data_owner");
    refused(read(buf.remote(lba, lba)), &other, "not under the data_owner's rkey");
    wire::RemoteBuffer past_the_end = buf.remote(2 * lba, 2 * lba);
    past_the_end.address += lba;
    refused(read(past_the_end), &buf, "outside the data_owner");
    wire::RemoteBuffer before_the_start = buf.remote(0, lba);
    before_the_start.address -= lba;
    refused(read(before_the_start), &buf, "outside the data_owner");
    EXPECT_EQ(io.in_flight(), 0u);
    // Inside it up to its last byte, and a command without data, go out.
    auto request = io.submit(read(buf.remote(3 * lba, lba)), &buf);
    auto flush = io.submit(wire::flush_command(ns.nsid()));
    while (!request.done() || !flush.done()) {
        io.make_progress();
    }
    request.response().raise_for_status();
    flush.response().raise_for_status();
}

TEST(Io, WritesAboveMdtsAreSplitAndSubmittedTogether) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--mdts", "1"});  // 8 KiB per command
    auto ctrl = Controller::connect(target.options());
    EXPECT_EQ(ctrl.limits().mdts_bytes, 8192u);
    auto ns = ctrl.namespace_at(1);
    const std::size_t bytes = 256 * 1024;  // 32 commands
    auto out = ctrl.allocate(bytes);
    auto in = ctrl.allocate(bytes);
    fill(out, 7);
    ns.write(out, 100);
    ns.read(in, 100);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0);
    ctrl.close();
    const std::string stats = target.stop();
    EXPECT_EQ(TargetProcess::stat(stats, "commands.write").value_or(0), 32u) << stats;
    EXPECT_GE(TargetProcess::stat(stats, "max_inflight.io").value_or(0), 2u) << stats;
}

TEST(Io, NonBlockingTransfersOnSeveralQueues) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--max-io-queues", "2", "--mdts", "2"});
    Options o = target.options();
    o.io_queues = 3;
    auto ctrl = Controller::connect(o);
    ASSERT_EQ(ctrl.io_queue_count(), 2u);
    EXPECT_EQ(ctrl.limits().io_queues, 2u);
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t lba = ns.lba_size();
    const std::uint64_t blocks = 64 * 1024 / lba;  // 4 pieces of 16 KiB
    auto arena = ctrl.allocate(4 * blocks * lba);
    fill(arena, 3);
    // Write four transfers, two per queue, then read them back into a second arena.
    for (std::size_t q = 0; q < 2; ++q) {
        auto io = ctrl.io(q);
        for (std::uint64_t j = 0; j < 2; ++j) {
            const std::uint64_t k = q * 2 + j;
            const Transfer t{Op::write, k * blocks, blocks, &arena, k * blocks * lba, 1000 + k};
            EXPECT_EQ(io.pieces(ns, t), 4u);
            ASSERT_EQ(io.submit(ns, t), SubmitResult::queued) << describe(io.last_error());
        }
    }
    std::vector<std::uint64_t> seen;
    Completion done[8];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (seen.size() < 4 && std::chrono::steady_clock::now() < deadline) {
        for (std::size_t q = 0; q < 2; ++q) {
            const std::size_t n = ctrl.io(q).poll(done);
            for (std::size_t i = 0; i < n; ++i) {
                EXPECT_TRUE(done[i].status.ok()) << describe(done[i].status);
                seen.push_back(done[i].user_data);
            }
        }
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{1000, 1001, 1002, 1003}));
    auto back = ctrl.allocate(arena.size());
    ns.read(back, 0, 4 * blocks);
    EXPECT_EQ(std::memcmp(back.data(), arena.data(), arena.size()), 0);
}

TEST(Io, BusyWhenTheQueueIsFullAndNothingIsSubmitted) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--mqes", "3", "--fault", "delay-ms=50"});  // 4 entries, 3 usable
    auto ctrl = Controller::connect(target.options());
    ASSERT_EQ(ctrl.limits().usable_slots, 3);
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(4 * ns.lba_size());
    auto io = ctrl.io();
    EXPECT_EQ(io.submit(ns, {Op::write, 0, 1, &buf, 0, 1}), SubmitResult::queued);
    EXPECT_EQ(io.submit(ns, {Op::write, 1, 1, &buf, 0, 2}), SubmitResult::queued);
    EXPECT_EQ(io.free_slots(), 1u);
    EXPECT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 3}), SubmitResult::queued);
    EXPECT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 4}), SubmitResult::busy);
    EXPECT_EQ(io.in_flight(), 3u);
    std::size_t finished = 0;
    Completion done[4];
    while (finished < 3)
        finished += io.poll(done);
    EXPECT_EQ(io.free_slots(), 3u);
}

// One pool of IDs: a one-command transfer's record lives at its command's ID,
// so the ID stays taken after the response until the transfer is handed back;
// a split transfer's further pieces free theirs at their responses.
TEST(Io, AOneCommandTransferKeepsItsIdUntilHandedBack) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--mqes", "3", "--mdts", "1"});  // 3 usable slots, 8 KiB per command
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(64 * 1024);
    auto io = ctrl.io();
    ASSERT_EQ(io.capacity(), 3u);
    const std::uint64_t small = 8192 / ns.lba_size();  // one command
    for (std::uint64_t i = 0; i < 3; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::write, i * small, small, &buf, i * 8192, 10 + i}),
                  SubmitResult::queued);
    }
    EXPECT_EQ(io.free_slots(), 0u);
    EXPECT_EQ(io.in_flight(), 3u);
    // Answered but not handed back: nothing in flight, yet no ID is free.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (io.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
        io.make_progress();
    }
    ASSERT_EQ(io.in_flight(), 0u);
    EXPECT_EQ(io.free_slots(), 0u);
    Completion done[3];
    ASSERT_EQ(io.poll(done), 3u);
    for (const Completion& c : done) {
        EXPECT_TRUE(c.status.ok()) << describe(c.status);
    }
    EXPECT_EQ(io.free_slots(), 3u);

    // A 4-command write: its IDs all free at their responses (its record is
    // its own), so once answered every slot is free before it is handed back.
    ASSERT_EQ(io.submit(ns, {Op::write, 0, 4 * small, &buf, 0, 20}), SubmitResult::queued);
    while (io.free_slots() < 3 && std::chrono::steady_clock::now() < deadline) {
        io.make_progress();
    }
    EXPECT_EQ(io.free_slots(), 3u);
    ASSERT_EQ(io.poll(done), 1u);
    EXPECT_EQ(done[0].user_data, 20u);
    EXPECT_TRUE(done[0].status.ok()) << describe(done[0].status);
}

TEST(Io, RangeAndBufferValidation) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t lba = ns.lba_size();
    auto buf = ctrl.allocate(4 * lba);
    EXPECT_THROW(ns.read(buf, ns.size_lbas() - 1, 2), InvalidArgument);  // past the end
    EXPECT_THROW(ns.read(buf, ns.size_lbas()), InvalidArgument);
    EXPECT_THROW(ns.write(buf, 0, 5), InvalidArgument);           // buffer too small
    EXPECT_THROW(ns.write(buf, 0, 2, 3 * lba), InvalidArgument);  // offset + length
    EXPECT_THROW(ns.write_zeroes(ns.size_lbas(), 1), InvalidArgument);
    EXPECT_THROW(ns.read(buf, 0, 0), InvalidArgument);
    EXPECT_THROW(ctrl.namespace_at(0), InvalidArgument);

    // The non-blocking path refuses without throwing and says why.
    auto io = ctrl.io();
    EXPECT_EQ(io.submit(ns, {Op::read, ns.size_lbas(), 1, &buf, 0, 1}), SubmitResult::invalid);
    EXPECT_EQ(io.last_error().transport, TransportErrc::invalid_argument);
    EXPECT_EQ(io.submit(ns, {Op::read, 0, 5, &buf, 0, 1}), SubmitResult::invalid);
    EXPECT_EQ(io.submit(ns, {Op::read, 0, 1, nullptr, 0, 1}), SubmitResult::invalid);

    // A closed memory region is an error, not a crash.
    MemoryRegion closed = ctrl.allocate(lba);
    closed.reset();
    EXPECT_FALSE(closed.valid());
    EXPECT_THROW(ns.read(closed, 0, 1), InvalidArgument);
    EXPECT_EQ(io.submit(ns, {Op::read, 0, 1, &closed, 0, 1}), SubmitResult::invalid);

    // Memory outlives the controller: it reports invalid, I/O on it is refused.
    ctrl.close();
    EXPECT_FALSE(buf.valid());
    EXPECT_THROW(ns.read(buf, 0, 1), Error);
    // Queue handles held past close() answer "failed", they do not crash.
    EXPECT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 1}), SubmitResult::failed);
    EXPECT_EQ(io.last_error().transport, TransportErrc::closed);
    Completion done[2];
    EXPECT_EQ(io.poll(done), 0u);
    EXPECT_TRUE(io.failed());
    EXPECT_THROW(ctrl.io(), TransportError);
}

TEST(Io, RegisterExistingMemory) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    std::vector<std::byte> mine(2 * ns.lba_size(), std::byte{0x5A});
    auto region = ctrl.register_memory(mine.data(), mine.size());
    ns.write(region, 3);
    std::vector<std::byte> back(mine.size());
    auto region2 = ctrl.register_memory(back.data(), back.size());
    ns.read(region2, 3);
    EXPECT_EQ(back, mine);
}

TEST(Io, DeferredSubmissionsGoOutOnCommit) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(4 * ns.lba_size());
    fill(buf, 9);
    auto io = ctrl.io();
    for (std::uint64_t i = 0; i < 4; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::write, 40 + i, 1, &buf, i * ns.lba_size(), i}, Post::deferred),
                  SubmitResult::queued);
    }
    EXPECT_EQ(io.deferred(), 4u);
    Completion done[4];
    EXPECT_EQ(io.poll(done), 0u);  // nothing was posted yet
    io.commit();
    EXPECT_EQ(io.deferred(), 0u);
    std::size_t n = 0;
    while (n < 4)
        n += io.poll(std::span<Completion>(done + n, 4 - n));
    auto back = ctrl.allocate(buf.size());
    ns.read(back, 40, 4);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
}

TEST(Io, FourKiBBlocksSplitAndLargeNoDataCommands) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--mdts", "1"}, "ram:1G:4096");  // 2 blocks per data command
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    ASSERT_EQ(ns.lba_size(), 4096u);
    auto out = ctrl.allocate(10 * 4096);
    auto in = ctrl.allocate(10 * 4096);
    fill(out, 11);
    ns.write(out, 5);  // 5 commands
    ns.read(in, 5);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
    // Above 65,536 blocks: several Write Zeroes / Dataset Management commands.
    ns.write_zeroes(0, 65536 * 2 + 10);
    ns.read(in, 5);
    std::vector<std::byte> zeros(in.size());
    EXPECT_EQ(std::memcmp(in.data(), zeros.data(), zeros.size()), 0);
    ns.deallocate(0, ns.size_lbas());
    ctrl.close();
    const std::string stats = target.stop();
    EXPECT_EQ(TargetProcess::stat(stats, "commands.write").value_or(0), 5u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "commands.write_zeroes").value_or(0), 3u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "commands.dataset_management").value_or(0), 4u) << stats;
}

// A command the target never answers, among many it does: its deadline holds
// although thousands of polls, each stamping the requests built since the one
// before (rdma_queue.hpp), pass while it waits, more than the ring of stamp
// deadlines holds.
TEST(Io, OneUnansweredCommandAmongManyAnsweredTimesOut) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "ignore-io=3"});
    Options o = target.options();
    o.io_timeout = std::chrono::milliseconds(2000);
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    constexpr std::uint64_t kBlocks = 8;
    auto buf = ctrl.allocate(kBlocks * ns.lba_size());
    auto io = ctrl.io();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t next = 0;
    std::size_t answered = 0;
    std::optional<CompletionStatus> failure;
    Completion done[16];
    while (!failure && std::chrono::steady_clock::now() - start < std::chrono::seconds(15)) {
        while (io.submit(ns, {Op::read, next % kBlocks, 1, &buf, (next % kBlocks) * ns.lba_size(),
                              next}) == SubmitResult::queued) {
            ++next;
        }
        const std::size_t n = io.poll(done);
        for (std::size_t i = 0; i < n; ++i) {
            if (done[i].status.ok()) {
                ++answered;
            } else if (!failure) {
                failure = done[i].status;
            }
        }
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(failure) << "no request timed out in 15 s";
    EXPECT_EQ(failure->transport, TransportErrc::timeout) << describe(*failure);
    EXPECT_GE(elapsed, o.io_timeout);  // never early
    EXPECT_LT(elapsed, o.io_timeout + std::chrono::milliseconds(1500));
    // The premise: far more clock reads than the ring's 1,024 while it waited.
    EXPECT_GT(answered, 4096u);
}
