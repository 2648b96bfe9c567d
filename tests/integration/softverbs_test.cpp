// Checks that need the software device itself: device limits in the
// negotiation, and its counters as evidence that every remote access by the
// target fell inside registered memory (softverbs checks rkey, bounds, access
// and PD of each RDMA READ/WRITE it serves and counts violations as errors).
#include <gtest/gtest.h>

#include <softverbs/control.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

namespace {

struct CapGuard {
    explicit CapGuard(const char* rule) {
        char err[128] = {};
        ok = softverbs_fault_add(rule, err, sizeof err) == 0;
    }
    ~CapGuard() { softverbs_fault_clear(); }
    bool ok = false;
};

// Every value of "key": N in the JSON, in order (std::regex trips -Werror under ASan).
std::vector<std::uint64_t> numbers(const std::string& json, const std::string& key) {
    std::vector<std::uint64_t> out;
    const std::string needle = "\"" + key + "\": ";
    for (auto at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
        out.push_back(std::strtoull(json.c_str() + at + needle.size(), nullptr, 10));
    }
    return out;
}

}  // namespace

TEST(Softverbs, DeviceLimitsBoundTheQueueSize) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    TargetProcess target;
    {
        CapGuard cap("cap,max_qp_wr=56");
        ASSERT_TRUE(cap.ok);
        auto ctrl = Controller::connect(target.options());
        // 56 send WRs = 39 slots + one signalling interval of 16 + the drain's marker
        EXPECT_EQ(ctrl.limits().queue_size, 40);
        EXPECT_EQ(ctrl.limits().queue_size_limit, "device max_qp_wr");
    }
    {
        CapGuard cap("cap,max_cqe=97");
        ASSERT_TRUE(cap.ok);
        auto ctrl = Controller::connect(target.options());
        EXPECT_EQ(ctrl.limits().queue_size, 40);  // CQ of 2 × 40 + 16 + 1
        EXPECT_EQ(ctrl.limits().queue_size_limit, "device max_cqe");
    }
    {
        CapGuard cap("cap,max_qp_wr=40");  // not even the 32-entry admin queue fits
        ASSERT_TRUE(cap.ok);
        try {
            Controller::connect(target.options());
            FAIL() << "expected ConnectError";
        } catch (const ConnectError& e) {
            EXPECT_EQ(e.cause(), ConnectFailure::negotiation) << e.what();
        }
    }
}

std::string dump_stats() {
    const std::string path = "/tmp/nvmeof-sv-stats-" + std::to_string(getpid()) + ".json";
    if (softverbs_stats_dump(path.c_str()) != 0)
        return {};
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    unlink(path.c_str());
    return text.str();
}

// The records of one list of the stats dump ("qps" or "cqs"), one per line.
std::vector<std::string> records(const std::string& json, const std::string& list) {
    std::vector<std::string> out;
    const auto start = json.find("\"" + list + "\": [");
    if (start == std::string::npos)
        return out;
    std::istringstream lines(json.substr(start, json.find("\n]", start) - start));
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("  {", 0) == 0)
            out.push_back(line);
    }
    return out;
}

std::uint64_t field(const std::string& record, const std::string& key) {
    const auto values = numbers(record, key);
    return values.empty() ? 0 : values.front();
}

// The newest record's key (qp_num, handle: they grow with every object), 0 if
// none.  Records created later are this test's, wherever the list starts: the
// dump folds the oldest destroyed ones away.
std::uint64_t newest(const std::string& list, const std::string& key) {
    const auto all = records(dump_stats(), list);
    return all.empty() ? 0 : field(all.back(), key);
}

TEST(Softverbs, EveryRemoteAccessFellInsideRegisteredMemory) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    // Counters of QPs from earlier tests (fault tests have errors) are skipped.
    const std::uint64_t earlier = newest("qps", "qp_num");
    TargetProcess target({"--mdts", "2"});
    {
        auto ctrl = Controller::connect(target.options());
        auto ns = ctrl.namespace_at(1);
        auto buf = ctrl.allocate(1 << 20);
        for (int i = 0; i < 4; ++i) {
            ns.write(buf, static_cast<std::uint64_t>(i) * 2048);
            ns.read(buf, static_cast<std::uint64_t>(i) * 2048);
        }
        ns.deallocate(0, 4096);
    }
    const std::string json = dump_stats();
    ASSERT_FALSE(json.empty());
    std::uint64_t reads_in = 0, writes_in = 0;
    std::size_t ours = 0;
    for (const std::string& qp : records(json, "qps")) {
        if (field(qp, "qp_num") <= earlier)
            continue;
        ++ours;
        reads_in += field(qp, "reads_in");
        writes_in += field(qp, "writes_in");
        EXPECT_EQ(field(qp, "errors"), 0u) << qp;
    }
    ASSERT_GT(ours, 0u) << json;
    EXPECT_GE(reads_in, 4u * (1 << 20) / (16 * 1024)) << json;   // the target READ our writes
    EXPECT_GE(writes_in, 4u * (1 << 20) / (16 * 1024)) << json;  // and WROTE our reads
}

namespace {

// Completions produced by the CQs created after the one with handle `earlier`
// (this process's CQs only: the target runs in its own).
std::uint64_t cq_completions(std::uint64_t earlier) {
    std::uint64_t sum = 0;
    for (const std::string& cq : records(dump_stats(), "cqs")) {
        if (field(cq, "handle") > earlier)
            sum += field(cq, "completions");
    }
    return sum;
}

// Reads at queue depth 32 on the first I/O queue until `total` are done.
void read_at_depth_32(IoQueue& io, const Namespace& ns, const MemoryRegion& buf,
                      std::size_t total) {
    constexpr std::size_t kDepth = 32;
    std::size_t submitted = 0, finished = 0;
    Completion done[kDepth];
    while (finished < total) {
        while (submitted < total && submitted - finished < kDepth) {
            const std::uint64_t slot = submitted % kDepth;
            ASSERT_EQ(io.submit(ns,
                                {Op::read, (submitted * 7) % 1024, 1, &buf, slot * ns.lba_size(),
                                 submitted},
                                Post::deferred),
                      SubmitResult::queued);
            ++submitted;
        }
        io.commit();
        const std::size_t n = io.poll(done);
        for (std::size_t i = 0; i < n; ++i)
            ASSERT_TRUE(done[i].status.ok()) << describe(done[i].status);
        finished += n;
    }
}

}  // namespace

// A request completes on its response: SENDs are signalled once per interval,
// so the host's CQ sees one completion per I/O (and a few for the signalled
// SENDs), not two.
TEST(Softverbs, OneCompletionPerIoInSteadyState) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    TargetProcess target;
    Options options = target.options();
    options.queue_depth = 64;
    const std::uint64_t earlier = newest("cqs", "handle");  // CQs of earlier tests' controllers
    auto ctrl = Controller::connect(options);
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(32 * ns.lba_size());
    auto io = ctrl.io();
    read_at_depth_32(io, ns, buf, 1000);  // warm up: past connect and the first intervals
    const std::uint64_t before = cq_completions(earlier);
    constexpr std::size_t kReads = 6400;
    read_at_depth_32(io, ns, buf, kReads);
    const std::uint64_t cqes = cq_completions(earlier) - before;
    std::printf("host CQEs per read at QD 32: %.3f (%llu for %zu reads)\n",
                static_cast<double>(cqes) / kReads, static_cast<unsigned long long>(cqes), kReads);
    // One per response, one per 16 SENDs, a little for the admin queue's keep-alive.
    EXPECT_LE(static_cast<double>(cqes) / kReads, 1.0 + 1.0 / 16 + 0.02) << cqes << " CQEs";
    EXPECT_GE(cqes, kReads);
}

// Closing with SENDs outstanding that were never signalled: the drain waits
// for its marker's flush, not for completions those SENDs never produce, and
// every transfer comes back once.
TEST(Softverbs, CloseWithUnsignalledSendsOutstandingLosesNothing) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    TargetProcess target({"--fault", "delay-ms=100"});
    Options options = target.options();
    options.queue_depth = 64;
    auto ctrl = Controller::connect(options);
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    constexpr std::size_t kReads = 40;  // two signalled SENDs, the rest not
    for (std::uint64_t i = 0; i < kReads; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::read, i, 1, &buf, 0, i}), SubmitResult::queued);
    }
    const auto start = std::chrono::steady_clock::now();
    ctrl.close();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
    std::vector<bool> seen(kReads, false);
    Completion done[kReads];
    const std::size_t n = io.poll(done);
    ASSERT_EQ(n, kReads);
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_LT(done[i].user_data, kReads);
        EXPECT_FALSE(seen[done[i].user_data]) << "completed twice: " << done[i].user_data;
        seen[done[i].user_data] = true;
        EXPECT_TRUE(done[i].status.ok() || done[i].status.transport == TransportErrc::closed)
            << describe(done[i].status);
    }
}

// The target stops answering with unsignalled SENDs outstanding: every
// transfer fails with the timeout within io_timeout (plus slack), and the
// queue is drained without waiting for those SENDs.
TEST(Softverbs, TimeoutWithUnsignalledSendsOutstandingFailsEveryTransfer) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    TargetProcess target({"--fault", "stop-answering-after=20"});  // admin commands included
    Options options = target.options();
    options.queue_depth = 64;
    options.io_timeout = std::chrono::seconds(1);
    auto ctrl = Controller::connect(options);
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    constexpr std::size_t kReads = 40;
    for (std::uint64_t i = 0; i < kReads; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::read, i, 1, &buf, 0, i}), SubmitResult::queued);
    }
    const auto start = std::chrono::steady_clock::now();
    std::size_t finished = 0, timed_out = 0;
    Completion done[kReads];
    while (finished < kReads &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
        const std::size_t n = io.poll(done);
        for (std::size_t i = 0; i < n; ++i) {
            timed_out += done[i].status.transport == TransportErrc::timeout ? 1 : 0;
        }
        finished += n;
    }
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(finished, kReads);
    EXPECT_GT(timed_out, 0u);
    EXPECT_GE(took, std::chrono::milliseconds(900));          // the answered reads took a moment
    EXPECT_LT(took, std::chrono::milliseconds(1000 + 1000));  // timeout + slack
}

// Deregistering memory that in-capsule writes gathered from: SENDs not yet
// retired from the send queue (unsignalled, their responses already in) would
// read it again on a retransmission, so the deregistration first retires them
// (zero-length RDMA WRITEs filling the signalling interval, the last one
// signalled) — and the queue's send accounting stays right for the I/O after.
TEST(Softverbs, DeregisteringRetiresTheSendsThatGatheredInCapsuleData) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "not running on softverbs";
    const std::uint64_t earlier = newest("qps", "qp_num");
    // Sum of `key` over this test's QPs (created after `earlier`).
    const auto ours = [earlier](const std::string& json, const std::string& key) {
        std::uint64_t total = 0;
        for (const std::string& qp : records(json, "qps")) {
            total += field(qp, "qp_num") > earlier ? field(qp, key) : 0;
        }
        return total;
    };
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    ASSERT_LE(4096u / ns.lba_size(), 8u);
    auto source = ctrl.allocate(4096);
    std::memset(source.data(), 0x5a, source.size());
    for (std::uint64_t i = 0; i < 3; ++i) {  // in the capsule, fewer than a signalling interval
        ns.write(source, i * (4096 / ns.lba_size()));
    }
    const std::string before = dump_stats();
    ASSERT_GT(ours(before, "sends"), 0u) << "no record of this test's QPs:\n" << before;
    EXPECT_EQ(ours(before, "writes"), 0u) << before;
    source.reset();
    const std::string after = dump_stats();
    EXPECT_GT(ours(after, "writes"), 0u) << "nothing retired the SENDs before the deregistration:\n"
                                         << after;
    EXPECT_EQ(ours(after, "errors"), 0u) << after;
    // The queue goes on: more in-capsule writes than an interval, read back.
    auto out = ctrl.allocate(4096);
    auto in = ctrl.allocate(4096);
    for (std::uint64_t i = 0; i < 40; ++i) {
        std::memset(out.data(), static_cast<int>(i), out.size());
        ns.write(out, i * (4096 / ns.lba_size()));
        ns.read(in, i * (4096 / ns.lba_size()));
        ASSERT_EQ(std::memcmp(in.data(), out.data(), 4096), 0) << "write " << i;
    }
    out.reset();
    EXPECT_EQ(ours(dump_stats(), "errors"), 0u);
}
