// Connect paths: negotiation matrix, wrong NQN, nothing listening, bad source,
// and every target fault giving its documented error without hanging.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <mutex>
#include <optional>
#include <thread>

#include "nvmeof/keep_alive_thread.hpp"
#include "nvmeof/nvmeof.hpp"
#include "nvmeof/wire/io.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

#define REQUIRE_CONFIGURABLE()           \
    if (!TargetProcess::can_configure()) \
    GTEST_SKIP() << "needs our nvmeof-target (limits/faults)"

namespace {

template <typename F>
ConnectError expect_connect_error(F&& f) {
    try {
        f();
    } catch (const ConnectError& e) {
        return e;
    }
    ADD_FAILURE() << "expected ConnectError";
    return ConnectError(ConnectFailure::invalid_options, "-", "-");
}

// A TCP port nothing listens on (bound, then closed).
std::uint16_t free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

}  // namespace

struct NegotiationCase {
    std::vector<std::string> target_args;
    std::uint16_t requested;
    std::uint16_t expected;
    std::string limit;
};

class Negotiation : public ::testing::TestWithParam<NegotiationCase> {};

TEST_P(Negotiation, QueueSizeIsTheTightestLimit) {
    REQUIRE_CONFIGURABLE();
    const NegotiationCase& c = GetParam();
    TargetProcess target(c.target_args);
    Options o = target.options();
    o.queue_depth = c.requested;
    auto ctrl = Controller::connect(o);
    EXPECT_EQ(ctrl.limits().queue_size, c.expected);
    EXPECT_EQ(ctrl.limits().usable_slots, c.expected - 1);
    EXPECT_EQ(ctrl.limits().queue_size_limit, c.limit);
    EXPECT_EQ(ctrl.io().capacity(), c.expected - 1u);
    // The negotiated depth really works: fill every slot.
    auto ns = ctrl.namespace_at(1);
    auto io = ctrl.io();
    for (std::uint64_t i = 0; i + 1 < c.expected; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, i}), SubmitResult::queued);
    }
    EXPECT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 99}), SubmitResult::busy);
    Completion done[64];
    std::size_t n = 0;
    while (n + 1 < c.expected)
        n += io.poll(done);
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, Negotiation,
    ::testing::Values(NegotiationCase{{}, 16, 16, "requested"},
                      NegotiationCase{{"--mqes", "7"}, 128, 8, "CAP.MQES"},
                      NegotiationCase{{"--mqes", "63", "--maxcmd", "12"}, 128, 12, "MAXCMD"},
                      NegotiationCase{{"--mqes", "255"}, 200, 200, "requested"}));

TEST(Connect, CrqsizeSmallerThanAskedIsRefused) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--crqsize", "8"});
    Options o = target.options();
    o.queue_depth = 16;
    // The admin queue (32 entries) already gets CRQSIZE 8.
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::negotiation) << e.what();
    EXPECT_NE(std::string(e.what()).find("CRQSIZE 8"), std::string::npos) << e.what();
}

TEST(Connect, WrongSubsystemNqn) {
    TargetProcess target;
    Options o = target.options();
    o.subsystem_nqn = "nqn.2026-01.io.nvmeof:no-such-subsystem";
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::connect_status) << e.what();
    EXPECT_TRUE(e.status().is(wire::FabricsStatus::connect_invalid_parameters)) << e.what();
    EXPECT_NE(std::string(e.what()).find("SUBNQN"), std::string::npos) << e.what();
}

TEST(Connect, NothingListening) {
    Options o;
    // With an external peer, its host may have RDMA only on one interface (rxe): use its address.
    o.target = TargetProcess::external() ? TargetProcess().address() : "127.0.0.1";
    o.subsystem_nqn = nvmeof::test::kTestNqn;
    o.port = free_port();
    o.timeout = 5s;
    const auto start = std::chrono::steady_clock::now();
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::no_listener) << e.what();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Connect, UnreachableAddress) {
    Options o;
    o.target = "192.0.2.1";  // TEST-NET-1: no route, no device
    o.subsystem_nqn = nvmeof::test::kTestNqn;
    o.timeout = 3s;
    const auto start = std::chrono::steady_clock::now();
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_TRUE(e.cause() == ConnectFailure::address_unreachable ||
                e.cause() == ConnectFailure::timeout)
        << e.what();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
}

// A path that cannot even be resolved is skipped like one that cannot connect,
// whichever place it has in the list, and one line names it; the controller
// works on the path that resolves. With none resolving, the first's error stands.
TEST(Connect, UnresolvablePathIsSkipped) {
    TargetProcess target;
    const std::string good = target.address() + ":" + std::to_string(target.port());
    const std::string bad = "256.1.1.1:" + std::to_string(target.port());
    for (const std::string& list : {good + "," + bad, bad + "," + good}) {
        Options o = target.options(5s);
        o.target = list;
        ::testing::internal::CaptureStderr();
        std::optional<Controller> ctrl;
        EXPECT_NO_THROW(ctrl.emplace(Controller::connect(o))) << list;
        const std::string said = ::testing::internal::GetCapturedStderr();
        if (!ctrl) {
            continue;
        }
        EXPECT_EQ(ctrl->limits().target_address, good) << list;
        EXPECT_NE(said.find("path 256.1.1.1:" + std::to_string(target.port()) + " skipped"),
                  std::string::npos)
            << list << ": " << said;
        Namespace ns = ctrl->namespace_at(1);
        MemoryRegion block = ctrl->allocate(ns.lba_size());
        EXPECT_NO_THROW(ns.write(block, 0, 1)) << list;
        EXPECT_NO_THROW(ns.read(block, 0, 1)) << list;
    }
    Options o = target.options(5s);
    o.target = "256.1.1.1,256.2.2.2";
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::address_unreachable) << e.what();
    EXPECT_NE(std::string(e.what()).find("'256.1.1.1'"), std::string::npos) << e.what();
}

TEST(Connect, BadSourceAddress) {
    TargetProcess target;
    Options o = target.options(5s);
    o.source = "192.0.2.1";  // TEST-NET-1: never local
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::bad_source_address) << e.what();
}

TEST(Connect, GoodSourceAddressIsReported) {
    TargetProcess target;
    Options o = target.options();
    o.source = "127.0.0.1";
    if (TargetProcess::external()) {
        // Loopback may have no RDMA device there (e.g. rxe on one interface): use the
        // address a first connection went out from.
        std::string first = Controller::connect(target.options()).limits().source_address;
        if (const auto colon = first.rfind(':');
            colon != std::string::npos && first.find('.') != std::string::npos) {
            first.resize(colon);
        }
        o.source = first;
    }
    auto ctrl = Controller::connect(o);
    EXPECT_NE(ctrl.limits().source_address.find(o.source), std::string::npos)
        << ctrl.limits().source_address;
}

// A controller with extended LBA formats (CTRATT bit 15, as nvmeof-target
// reports) has them enabled through Set Features Host Behavior Support
// (LBAFEE), as SPDK's and Linux's hosts do; nvmet reports none and gets none.
TEST(Connect, ExtendedLbaFormatsEnabledThroughHostBehaviorSupport) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    if (!TargetProcess::external()) {
        EXPECT_TRUE(ctrl.limits().extended_lba_formats);
    }
    EXPECT_EQ(ctrl.limits().extended_lba_formats_enabled, ctrl.limits().extended_lba_formats);
}

// Keep Alive every half timeout while the owner calls keep_connected(), with no
// I/O at all (a target that counts I/O as keep-alive traffic sees none): the
// controller outlives several timeouts, and the target counted the commands.
TEST(KeepAlive, ServicedControllerOutlivesSeveralTimeouts) {
    TargetProcess target;
    Options o = target.options();
    o.keep_alive_ms = 1000;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    MemoryRegion block = ctrl.allocate(ns.lba_size());
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < 3200ms) {
        std::string why;
        ASSERT_TRUE(ctrl.keep_connected(&why)) << why;
        std::this_thread::sleep_for(20ms);
    }
    ns.read(block, 0, 1);  // still alive after 3 timeouts
    ctrl.close();
    std::string why;
    EXPECT_FALSE(ctrl.keep_connected(&why));
    EXPECT_EQ(why, "the controller is closed");
    const std::string stats = target.stop();
    if (const auto sent = TargetProcess::stat(stats, "commands.keep_alive")) {
        EXPECT_GE(*sent, 5u) << "one Keep Alive per half second expected over 3.2 s";
    }
}

// The same with nobody calling keep_connected(): a KeepAliveThread does, under the
// caller's lock, while the caller sleeps. Idle past three timeouts, the
// controller is still there; the lock keeps the caller's own I/O apart.
TEST(KeepAlive, BackgroundThreadKeepsAnIdleControllerConnected) {
    TargetProcess target;
    Options o = target.options();
    o.keep_alive_ms = 1000;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    MemoryRegion block = ctrl.allocate(ns.lba_size());
    std::mutex lock;
    {
        KeepAliveThread keeper(ctrl, lock);
        std::this_thread::sleep_for(3500ms);  // silent: no call into the controller
        {
            std::lock_guard guard(lock);
            ns.read(block, 0, 1);
            EXPECT_TRUE(ctrl.is_open());
        }
        EXPECT_GE(keeper.services(), 20u) << "ticks every eighth of the 1 s timeout";
    }
    ctrl.close();
    const std::string stats = target.stop();
    if (const auto sent = TargetProcess::stat(stats, "commands.keep_alive")) {
        EXPECT_GE(*sent, 5u) << "one Keep Alive per half second expected over 3.5 s";
    }
}

// A host that stops calling keep_connected() is dropped by the target once the
// timeout runs out; I/O then fails, and keep_connected() says why.
TEST(KeepAlive, SilentHostIsDroppedAndKeepAliveSaysWhy) {
    TargetProcess target;
    Options o = target.options(2s);
    o.keep_alive_ms = 1000;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    MemoryRegion block = ctrl.allocate(ns.lba_size());
    ns.read(block, 0, 1);
    std::this_thread::sleep_for(3s);  // no keep_connected(), no I/O: silent for three timeouts
    bool dropped = false;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!dropped && std::chrono::steady_clock::now() < deadline) {
        try {
            ns.read(block, 0, 1);
            std::this_thread::sleep_for(200ms);
        } catch (const Error& e) {
            dropped = true;
            std::printf("I/O after the silence: %s\n", e.what());
        }
    }
    ASSERT_TRUE(dropped) << "the target never dropped a controller that sent no Keep Alive";
    std::string why;
    EXPECT_FALSE(ctrl.keep_connected(&why));
    EXPECT_FALSE(why.empty());
    std::printf("after the drop: %s\n", why.c_str());
}

TEST(KeepAlive, TargetRefusingTheTimeoutIsNamed) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "connect-status=0/0x1a"});
    Options o = target.options();
    o.keep_alive_ms = 3000;
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_NE(std::string(e.what()).find("refuses KATO 3000 ms"), std::string::npos) << e.what();
}

// The keep-alive granularity rule lives in the core: every caller (engine,
// Python, tools) is refused a timeout finer than Identify KAS, naming the
// option; a timeout at the granularity connects.
TEST(KeepAlive, TimeoutBelowTheControllersGranularityIsRefused) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--kas", "20"});  // 2000 ms
    Options o = target.options();
    o.keep_alive_ms = 1500;
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_EQ(e.cause(), ConnectFailure::invalid_options) << e.what();
    EXPECT_NE(
        std::string(e.what()).find(
            "keep_alive_ms=1500: below the controller's keep-alive granularity (KAS) of 2000 ms"),
        std::string::npos)
        << e.what();
    o.keep_alive_ms = 2000;
    Controller c = Controller::connect(o);
    EXPECT_EQ(c.limits().kas_ms, 2000u);
}

TEST(KeepAlive, AskedOfAControllerWithoutKeepAliveIsRefused) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--kas", "0"});
    Options o = target.options();
    o.keep_alive_ms = 1000;
    const ConnectError e = expect_connect_error([&] { Controller::connect(o); });
    EXPECT_NE(std::string(e.what()).find("does not support keep-alive (Identify KAS is 0)"),
              std::string::npos)
        << e.what();
}

TEST(Faults, CmRejectNamesTheRejectStatus) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "reject-connect=6"});
    const ConnectError e = expect_connect_error([&] { Controller::connect(target.options()); });
    EXPECT_EQ(e.cause(), ConnectFailure::rejected) << e.what();
    EXPECT_EQ(e.reject_status(), 6);
    EXPECT_NE(std::string(e.what()).find("No Resources"), std::string::npos) << e.what();
}

TEST(Faults, ConnectStatusInvalidHost) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "connect-status=1/0x84"});
    const ConnectError e = expect_connect_error([&] { Controller::connect(target.options()); });
    EXPECT_EQ(e.cause(), ConnectFailure::connect_status) << e.what();
    EXPECT_TRUE(e.status().is(wire::FabricsStatus::connect_invalid_host)) << e.what();
    EXPECT_EQ(e.step(), "Fabrics Connect (qid 0)");
}

TEST(Faults, KatoRejectedSaysSo) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "connect-status=0/0x1a"});
    const ConnectError e = expect_connect_error([&] { Controller::connect(target.options()); });
    EXPECT_NE(std::string(e.what()).find("KATO 0"), std::string::npos) << e.what();
}

TEST(Faults, NoAnswerDuringConnectNamesTheStep) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "stop-answering-after=1"});  // answers only the Connect
    const auto start = std::chrono::steady_clock::now();
    const ConnectError e = expect_connect_error([&] { Controller::connect(target.options(1s)); });
    EXPECT_EQ(e.cause(), ConnectFailure::timeout) << e.what();
    EXPECT_EQ(e.step(), "Property Get CAP") << e.what();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
}

// Controller::connect's `cancelled` ends a connect the target never answers
// (here its admin Fabrics Connect) within the hook's polling, not the timeout,
// asking the hook only now and then; a connect that succeeds lets it go.
TEST(Faults, CancelledConnectStopsPromptly) {
    REQUIRE_CONFIGURABLE();
    {
        TargetProcess silent({"--fault", "stop-answering-after=0"});
        const auto start = std::chrono::steady_clock::now();
        int asked = 0;
        const ConnectError e = expect_connect_error([&] {
            Controller::connect(silent.options(8s), [&] {
                ++asked;
                return std::chrono::steady_clock::now() - start >= 300ms;
            });
        });
        const auto took = std::chrono::steady_clock::now() - start;
        EXPECT_EQ(e.cause(), ConnectFailure::cancelled) << e.what();
        EXPECT_EQ(e.step(), "Fabrics Connect (qid 0)") << e.what();
        EXPECT_EQ(e.sys_errno(), ECANCELED);
        EXPECT_GE(took, 300ms);
        EXPECT_LT(took, 1s);  // released without waiting for the silent target either
        EXPECT_LE(asked, 20) << "asked about every 50 ms, not spun";
    }
    TargetProcess target;
    int asked = 0;
    auto ctrl = Controller::connect(target.options(), [&] {
        ++asked;
        return false;
    });
    const int during_connect = asked;
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    ns.read(buf, 0, 1);
    ctrl.close();
    EXPECT_EQ(asked, during_connect) << "the hook was asked after connect() returned";
}

TEST(Faults, NvmeErrorStatusOfOneIo) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "fail-io=2:2/0x81"});
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    ns.write(buf, 0, 1);
    try {
        ns.read(buf, 0, 1);
        FAIL() << "expected NvmeError";
    } catch (const wire::NvmeError& e) {
        EXPECT_EQ(e.status().type(), wire::StatusCodeType::media);
        EXPECT_EQ(e.status().code(), 0x81);
        EXPECT_EQ(e.command(), "Read");
        EXPECT_NE(std::string(e.what()).find("Unrecovered Read Error"), std::string::npos)
            << e.what();
    }
    ns.read(buf, 0, 1);  // the queue is still fine
}

// poll(out, failed) says how many of the completions it hands back failed, so
// a caller (the fio engine) need look at statuses only then.
TEST(Faults, PollCountsTheCompletionsThatFailed) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "fail-io=2:2/0x81"});  // the second I/O command fails
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(4 * ns.lba_size());
    auto io = ctrl.io();
    for (std::uint64_t i = 0; i < 3; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::read, i, 1, &buf, i * ns.lba_size(), 100 + i}),
                  SubmitResult::queued);
    }
    std::size_t finished = 0;
    std::size_t failed_counted = 0;
    std::size_t failed_seen = 0;
    Completion done[4];
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (finished < 3 && std::chrono::steady_clock::now() < give_up) {
        std::size_t failed = 0;
        const std::size_t n = io.poll(done, failed);
        for (std::size_t i = 0; i < n; ++i) {
            failed_seen += done[i].status.ok() ? 0 : 1;
        }
        failed_counted += failed;
        finished += n;
    }
    ASSERT_EQ(finished, 3u);
    EXPECT_EQ(failed_seen, 1u);
    EXPECT_EQ(failed_counted, 1u);
}

TEST(Faults, DroppedConnectionMidIoFailsWithTransportError) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "drop-after=12", "--mdts", "1"});
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(256 * 1024);
    const auto start = std::chrono::steady_clock::now();
    try {
        for (int i = 0; i < 10; ++i)
            ns.write(buf, 0);
        FAIL() << "expected TransportError";
    } catch (const TransportError& e) {
        EXPECT_TRUE(e.code() == TransportErrc::disconnected ||
                    e.code() == TransportErrc::queue_error)
            << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_TRUE(ctrl.io().failed());
    // Later submissions are refused, not hung.
    auto io = ctrl.io();
    EXPECT_EQ(io.submit(ns, {Op::flush, 0, 0, nullptr, 0, 1}), SubmitResult::failed);
    ctrl.close();  // must not hang either
}

TEST(Faults, NoAnswerTimesOut) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "stop-answering-after=12"});
    auto ctrl = Controller::connect(target.options(2s));
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    const auto start = std::chrono::steady_clock::now();
    std::size_t queued = 0;
    for (std::uint64_t i = 0; i < 8; ++i) {
        queued += io.submit(ns, {Op::read, i, 1, &buf, 0, i}) == SubmitResult::queued;
    }
    std::size_t failed = 0, finished = 0;
    Completion done[8];
    while (finished < queued && std::chrono::steady_clock::now() - start < 10s) {
        const std::size_t n = io.poll(done);
        for (std::size_t i = 0; i < n; ++i) {
            failed += done[i].status.transport == TransportErrc::timeout;
        }
        finished += n;
    }
    EXPECT_EQ(finished, queued);
    EXPECT_GE(failed, 1u);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
    EXPECT_TRUE(io.failed());
    EXPECT_FALSE(ctrl.is_open());  // no reconnect configured: the failure ends it
    const auto closing = std::chrono::steady_clock::now();
    ctrl.close();
    EXPECT_LT(std::chrono::steady_clock::now() - closing, 8s);
}

// Options::timeout bounds the whole connect: with every answer 300 ms late, each
// step fits easily in the timeout, but the eight or so of them together do not.
TEST(Bounds, WholeConnectHasOneDeadline) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "delay-ms=300"});
    const auto start = std::chrono::steady_clock::now();
    const ConnectError e =
        expect_connect_error([&] { Controller::connect(target.options(1200ms)); });
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(e.cause(), ConnectFailure::timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("connect deadline of 1200 ms (every step together)"),
              std::string::npos)
        << e.what();
    EXPECT_FALSE(e.step().empty());
    EXPECT_GE(took, 1200ms);
    EXPECT_LT(took, 2200ms) << e.what();
}

// After a request timed out, the target is known dead: close() neither shuts
// the controller down (CC.SHN) nor waits for the disconnect.
TEST(Bounds, CloseAfterATimeoutIsPrompt) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "stop-answering-after=12"});
    Options options = target.options(10s);
    options.io_timeout = 1s;
    auto ctrl = Controller::connect(options);
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    for (std::uint64_t i = 0; i < 4; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::read, i, 1, &buf, 0, i}), SubmitResult::queued);
    }
    const auto start = std::chrono::steady_clock::now();
    Completion done[4];
    std::size_t finished = 0;
    while (finished < 4 && std::chrono::steady_clock::now() - start < 5s) {
        finished += io.poll(done);
    }
    ASSERT_TRUE(io.failed());
    const auto closing = std::chrono::steady_clock::now();
    ctrl.close();
    EXPECT_LT(std::chrono::steady_clock::now() - closing, 500ms);
}

static double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// wait_for_completions sleeps on the completion channel: woken by a completion
// at once, otherwise at the bound given, without spinning meanwhile.
TEST(Bounds, WaitForCompletionsWakesForACompletion) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    Completion done[1];
    ASSERT_EQ(io.submit(ns, {Op::read, 0, 1, &buf, 0, 1}), SubmitResult::queued);
    const auto start = std::chrono::steady_clock::now();
    std::size_t got = 0;
    while (got == 0 && std::chrono::steady_clock::now() - start < 5s) {
        ctrl.wait_for_completions(std::chrono::steady_clock::now() + 5s);
        got = io.poll(done);
    }
    EXPECT_EQ(got, 1u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(Bounds, WaitForCompletionsSleepsWithoutSpinning) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--fault", "stop-answering-after=12"});
    // 2 s: the shutdown in close() at the end waits at most that long.
    auto ctrl = Controller::connect(target.options(2s));
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(ns.lba_size());
    auto io = ctrl.io();
    for (std::uint64_t i = 0; i < 8; ++i) {
        ASSERT_EQ(io.submit(ns, {Op::read, i, 1, &buf, 0, i}), SubmitResult::queued);
    }
    Completion done[8];
    for (int i = 0; i < 20; ++i) {  // take whatever the target still answered
        io.poll(done);
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_GT(io.in_flight(), 0u);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_before = thread_cpu_seconds();
    EXPECT_FALSE(ctrl.wait_for_completions(start + 400ms));
    const auto slept = std::chrono::steady_clock::now() - start;
    EXPECT_GE(slept, 390ms);
    EXPECT_LT(slept, 1s);
    EXPECT_LT(thread_cpu_seconds() - cpu_before, 0.05);
}

// Connect, destroy without close, connect again: fine in one process. A child
// forked after that is refused up front with a clear error (rdma-core keeps the
// parent's device files, which the kernel refuses in a child). Children of a
// process that never used RDMA connect normally: the fio e2e tests in process
// mode show it (the engine probes the target from a short-lived child).
TEST(Lifecycle, ConnectCloseConnectAgainAndFork) {
    TargetProcess target;
    int status = 0;
    {
        auto first = Controller::connect(target.options());
        EXPECT_GT(first.namespace_at(1).size_lbas(), 0u);
    }  // destroyed without close()
    {
        auto again = Controller::connect(target.options());
        EXPECT_GT(again.namespace_at(1).size_lbas(), 0u);
    }
    const pid_t late_child = fork();
    if (late_child == 0) {
        int rc = 1;
        try {
            auto refused = Controller::connect(target.options());
        } catch (const ConnectError& e) {
            rc = e.cause() == ConnectFailure::forked_after_use &&
                         std::string(e.what()).find("forked from process") != std::string::npos
                     ? 0
                     : 2;
        } catch (...) {
            rc = 3;
        }
        _exit(rc);
    }
    waitpid(late_child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a child forked after RDMA use must get forked_after_use, exit " << WEXITSTATUS(status);
}
