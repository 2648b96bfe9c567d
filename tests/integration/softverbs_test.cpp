// Checks that need the software device itself: device limits in the
// negotiation, and its counters as evidence that every remote access by the
// target fell inside registered memory (softverbs checks rkey, bounds, access
// and PD of each RDMA READ/WRITE it serves and counts violations as errors).
#include <gtest/gtest.h>

#include <softverbs/control.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

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
    if (softverbs_active() == 0) GTEST_SKIP() << "not running on softverbs";
    TargetProcess target;
    {
        CapGuard cap("cap,max_qp_wr=41");
        ASSERT_TRUE(cap.ok);
        auto ctrl = Controller::connect(target.options());
        EXPECT_EQ(ctrl.limits().queue_size, 40);  // 41 receive WRs = 40 entries + drain
        EXPECT_EQ(ctrl.limits().queue_size_limit, "device max_qp_wr");
    }
    {
        CapGuard cap("cap,max_cqe=81");
        ASSERT_TRUE(cap.ok);
        auto ctrl = Controller::connect(target.options());
        EXPECT_EQ(ctrl.limits().queue_size, 40);  // CQ of 2 × 40 + 1
        EXPECT_EQ(ctrl.limits().queue_size_limit, "device max_cqe");
    }
    {
        CapGuard cap("cap,max_qp_wr=20");  // not even the 32-entry admin queue fits
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
    if (softverbs_stats_dump(path.c_str()) != 0) return {};
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    unlink(path.c_str());
    return text.str();
}

TEST(Softverbs, EveryRemoteAccessFellInsideRegisteredMemory) {
    if (softverbs_active() == 0) GTEST_SKIP() << "not running on softverbs";
    // Counters of QPs from earlier tests (fault tests have errors) are skipped.
    const std::size_t earlier = numbers(dump_stats(), "qp_num").size();
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
    const auto reads = numbers(json, "reads_in"), writes = numbers(json, "writes_in"),
               errors = numbers(json, "errors");
    ASSERT_GT(reads.size(), earlier);
    std::uint64_t reads_in = 0, writes_in = 0;
    for (std::size_t i = earlier; i < reads.size(); ++i) reads_in += reads[i];
    for (std::size_t i = earlier; i < writes.size(); ++i) writes_in += writes[i];
    EXPECT_GE(reads_in, 4u * (1 << 20) / (16 * 1024)) << json;   // the target READ our writes
    EXPECT_GE(writes_in, 4u * (1 << 20) / (16 * 1024)) << json;  // and WROTE our reads
    for (std::size_t i = earlier; i < errors.size(); ++i) EXPECT_EQ(errors[i], 0u) << json;
}
