// Connect/close cycles against one target must leave both processes as they
// were: what the fio engine does for every job (and a service for every
// reconnect), thousands of times in one process.  Memory (VmRSS) and open
// descriptors of the host (this process) and of the target are taken after a
// warm-up, so allocator pools and lazily created state are already in place,
// and again at the end.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

namespace {

constexpr int kWarmUp = 200;
constexpr int kCycles = 2000;
// Measured after the warm-up: the host grows by up to 64 KiB, the target by a
// few pages (the Python test's host moves by up to 200 KiB: its heap's
// high-water mark).  A record kept per QP and CQ (about 0.5 KiB per controller)
// grew each by more than 1 MiB.
constexpr long kMaxGrowthKib = 512;

// ASan keeps freed memory in a quarantine, which grows RSS by design (and
// LeakSanitizer looks for leaks there); TSan's shadow memory grows too.  Only
// descriptors are compared under them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

long rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    }
    return -1;
}

int open_fds(pid_t pid) {
    DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
    if (d == nullptr)
        return -1;
    int n = 0;
    while (const dirent* e = readdir(d)) {
        if (e->d_name[0] != '.')
            ++n;
    }
    closedir(d);
    return n - 1;  // the directory stream's own descriptor
}

// A connection's descriptors close a little after close() returns (the target
// and both softverbs engines tear down asynchronously), so a count is the
// lowest seen over a short quiet spell: a leaked descriptor stays in it.
int settled_fds(pid_t pid) {
    int lowest = open_fds(pid);
    for (int i = 0; i < 50; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        lowest = std::min(lowest, open_fds(pid));
    }
    return lowest;
}

struct Sample {
    long host_rss, target_rss;
    int host_fds, target_fds;
};

Sample sample(pid_t target) {
    const int host_fds = settled_fds(getpid()), target_fds = settled_fds(target);
    return {rss_kib(getpid()), rss_kib(target), host_fds, target_fds};
}

}  // namespace

TEST(Leak, ConnectCloseCyclesKeepBothProcessesFlat) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "measures our own nvmeof-target";
    TargetProcess target;
    const Options options = target.options();
    const auto cycle = [&] {
        auto ctrl = Controller::connect(options);
        ctrl.close();
    };
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kWarmUp; ++i)
        ASSERT_NO_THROW(cycle()) << "cycle " << i;
    const Sample before = sample(target.pid());
    for (int i = kWarmUp; i < kCycles; ++i)
        ASSERT_NO_THROW(cycle()) << "cycle " << i;
    const Sample after = sample(target.pid());
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d connect/close cycles in %.1f s (%.2f ms each)\n", kCycles, secs,
                secs * 1000 / kCycles);
    std::printf("host:   VmRSS %ld -> %ld KiB (%+ld), fds %d -> %d\n", before.host_rss,
                after.host_rss, after.host_rss - before.host_rss, before.host_fds, after.host_fds);
    std::printf("target: VmRSS %ld -> %ld KiB (%+ld), fds %d -> %d\n", before.target_rss,
                after.target_rss, after.target_rss - before.target_rss, before.target_fds,
                after.target_fds);
    ASSERT_GT(before.host_rss, 0);
    ASSERT_GT(before.target_rss, 0);
    if (kRssMeaningful) {
        EXPECT_LT(after.host_rss - before.host_rss, kMaxGrowthKib)
            << "the host grew over " << kCycles - kWarmUp << " cycles";
        EXPECT_LT(after.target_rss - before.target_rss, kMaxGrowthKib)
            << "the target grew over " << kCycles - kWarmUp << " cycles";
    }
    EXPECT_EQ(after.host_fds, before.host_fds);
    EXPECT_EQ(after.target_fds, before.target_fds);
}
