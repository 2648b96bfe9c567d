// Discovery against nvmeof-target (and, where no target option or stats are
// needed, an external peer): a discovery controller with the admin queue only,
// every record of the log (also in small chunks and within MDTS), host
// filtering, and the errors of an I/O NQN and of nothing listening.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;
namespace w = nvmeof::wire;

#define REQUIRE_CONFIGURABLE()           \
    if (!TargetProcess::can_configure()) \
    GTEST_SKIP() << "needs our nvmeof-target (subsystems, stats)"

namespace {

constexpr char kSecondNqn[] = "nqn.2026-01.io.nvmeof:second";
constexpr char kHiddenNqn[] = "nqn.2026-01.io.nvmeof:other-host-only";

// Three subsystems, one of which only another host may see.
std::vector<std::string> three_subsystems() {
    return {"--subsystem",  kSecondNqn,
            "--namespace",  "ram:1M",
            "--subsystem",  kHiddenNqn,
            "--namespace",  "ram:1M",
            "--allow-host", "nqn.2026-01.io.nvmeof:someone-else"};
}

Options discovery_options(const TargetProcess& target) {
    Options options = target.options();
    options.subsystem_nqn.clear();  // the well-known discovery NQN
    return options;
}

void expect_listed(const DiscoveryRecord& r, const TargetProcess& target, const std::string& nqn) {
    EXPECT_EQ(r.subsystem_nqn, nqn);
    EXPECT_EQ(r.transport, w::TransportType::rdma);
    EXPECT_EQ(r.family, w::AddressFamily::ipv4);
    EXPECT_EQ(r.subtype, w::SubsystemType::nvm);
    EXPECT_EQ(r.treq, w::kTreqSecureChannelNotRequired);
    EXPECT_EQ(r.port_id, 1);
    EXPECT_EQ(r.cntlid, w::kDynamicControllerId);
    EXPECT_EQ(r.admin_queue_size, w::kAdminQueueSize);
    EXPECT_EQ(r.eflags, 0);
    EXPECT_EQ(r.address, target.address());
    EXPECT_EQ(r.service_id, std::to_string(target.port()));
    EXPECT_EQ(r.rdma.qp_type, w::RdmaQpType::reliable_connected);
    EXPECT_EQ(r.rdma.provider_type, w::RdmaProviderType::none);
    EXPECT_EQ(r.rdma.cms, w::RdmaCms::rdma_cm);
    EXPECT_EQ(r.rdma.pkey, 0);
}

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

}  // namespace

TEST(Discovery, ReadsEveryRecordTheHostMaySee) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target(three_subsystems());
    const DiscoveryLog log = read_discovery_log(discovery_options(target));
    EXPECT_EQ(log.generation, 1u);
    ASSERT_EQ(log.records.size(), 2u);
    expect_listed(log.records[0], target, target.nqn());
    expect_listed(log.records[1], target, kSecondNqn);
    EXPECT_EQ(discover(discovery_options(target)), log.records);
}

// Also against an external peer (the kernel's nvmet in the interop stage).
TEST(Discovery, ListsTheTestSubsystem) {
    TargetProcess target;
    const DiscoveryLog log = read_discovery_log(discovery_options(target));
    const auto found = std::find_if(log.records.begin(), log.records.end(),
                                    [&](const auto& r) { return r.subsystem_nqn == target.nqn(); });
    ASSERT_NE(found, log.records.end()) << "no record for " << target.nqn();
    EXPECT_EQ(found->transport, w::TransportType::rdma);
    EXPECT_EQ(found->subtype, w::SubsystemType::nvm);
    EXPECT_EQ(found->address, target.address());
    EXPECT_EQ(found->service_id, std::to_string(target.port()));
    EXPECT_EQ(found->rdma.qp_type, w::RdmaQpType::reliable_connected);
    EXPECT_EQ(found->rdma.cms, w::RdmaCms::rdma_cm);
}

TEST(Discovery, SmallChunksReadTheSameLogWithOffsets) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target(three_subsystems());
    const DiscoveryLog whole = read_discovery_log(discovery_options(target));
    const DiscoveryLog chunked =
        read_discovery_log(discovery_options(target), {.chunk_bytes = 100});
    EXPECT_EQ(chunked.records, whole.records);
    const std::string stats = target.stop();
    // Whole: header, records, header (3). Chunked at 100 bytes: 11 + 21 + 11.
    EXPECT_EQ(TargetProcess::stat(stats, "commands.get_log_page").value_or(0), 3u + 43u) << stats;
}

TEST(Discovery, ChunksStayWithinTheControllerMdts) {
    REQUIRE_CONFIGURABLE();
    // Ten records (10 KiB) behind an 8 KiB MDTS: a 64 KiB chunk must be cut to 8 KiB.
    std::vector<std::string> args = {"--mdts", "1"};
    for (int i = 0; i < 9; ++i) {
        args.insert(args.end(), {"--subsystem", "nqn.2026-01.io.nvmeof:many-" + std::to_string(i),
                                 "--namespace", "ram:1M"});
    }
    TargetProcess target(args);
    const DiscoveryLog log =
        read_discovery_log(discovery_options(target), {.chunk_bytes = 64 * 1024});
    ASSERT_EQ(log.records.size(), 10u);
    for (int i = 0; i < 9; ++i) {
        expect_listed(log.records[i + 1], target,
                      "nqn.2026-01.io.nvmeof:many-" + std::to_string(i));
    }
    const std::string stats = target.stop();
    // Header, records in 8 KiB + 2 KiB, header again.
    EXPECT_EQ(TargetProcess::stat(stats, "commands.get_log_page").value_or(0), 4u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "errors").value_or(99), 0u) << stats;
}

TEST(Discovery, DiscoveryControllerHasNoIoQueues) {
    TargetProcess target;
    Options options = target.options();
    options.subsystem_nqn = w::kDiscoveryNqn;
    {
        Controller ctrl = Controller::connect(options);
        EXPECT_TRUE(ctrl.limits().discovery);
        EXPECT_EQ(ctrl.io_queue_count(), 0u);
        EXPECT_EQ(ctrl.limits().io_queues, 0u);
        EXPECT_THROW(ctrl.io(0), InvalidArgument);
    }
    if (!TargetProcess::can_configure()) {
        return;  // no command counts from an external peer
    }
    const std::string stats = target.stop();
    // Linux sends no Set Features Number of Queues to a discovery controller.
    EXPECT_EQ(TargetProcess::stat(stats, "commands.set_features").value_or(99), 0u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "commands.connect").value_or(0), 1u) << stats;
    EXPECT_EQ(TargetProcess::stat(stats, "commands.identify").value_or(0), 1u) << stats;
}

TEST(Discovery, AnIoSubsystemNqnIsNotADiscoveryController) {
    TargetProcess target;
    const ConnectError e = expect_connect_error([&] { read_discovery_log(target.options()); });
    EXPECT_EQ(e.cause(), ConnectFailure::unsupported_controller);
    EXPECT_NE(std::string(e.what()).find("not a discovery controller"), std::string::npos)
        << e.what();
}

TEST(Discovery, NothingListeningFailsWithinTheTimeout) {
    // A TCP port nothing listens on (bound, then closed).
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    Options options;
    // With an external peer, its host may have RDMA only on one interface (rxe): use its address.
    options.target = TargetProcess::external() ? TargetProcess().address() : "127.0.0.1";
    options.port = ntohs(a.sin_port);
    options.timeout = 2s;
    const auto start = std::chrono::steady_clock::now();
    const ConnectError e = expect_connect_error([&] { discover(options); });
    EXPECT_LT(std::chrono::steady_clock::now() - start, options.timeout + 1s);
    EXPECT_EQ(e.cause(), ConnectFailure::no_listener) << e.what();
}
