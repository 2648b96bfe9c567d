// Failures that used to read vaguely: each error names its cause and where.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <softverbs/control.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;
using namespace std::chrono_literals;

namespace {

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an error";
    return "";
}

// An RDMA-CM listener on 127.0.0.1 that answers every connect request with a
// reject carrying no private data, as a CM (not an NVMe target) would.
class BareRejecter {
  public:
    BareRejecter() {
        channel_ = rdma_create_event_channel();
        if (channel_ == nullptr ||
            rdma_create_id(channel_, &listener_, nullptr, RDMA_PS_TCP) != 0) {
            return;
        }
        sockaddr_in any{};
        any.sin_family = AF_INET;
        any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (rdma_bind_addr(listener_, reinterpret_cast<sockaddr*>(&any)) != 0 ||
            rdma_listen(listener_, 4) != 0) {
            return;
        }
        port_ = ntohs(rdma_get_src_port(listener_));
        thread_ = std::thread([this] { serve(); });
    }
    ~BareRejecter() {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
        if (listener_ != nullptr)
            rdma_destroy_id(listener_);
        if (channel_ != nullptr)
            rdma_destroy_event_channel(channel_);
    }
    std::uint16_t port() const { return port_; }

  private:
    void serve() {
        while (!stop_) {
            pollfd pfd{channel_->fd, POLLIN, 0};
            if (poll(&pfd, 1, 50) <= 0)
                continue;
            rdma_cm_event* event = nullptr;
            if (rdma_get_cm_event(channel_, &event) != 0)
                continue;
            rdma_cm_id* child = event->event == RDMA_CM_EVENT_CONNECT_REQUEST ? event->id : nullptr;
            if (child != nullptr)
                rdma_reject(child, nullptr, 0);
            rdma_ack_cm_event(event);
            if (child != nullptr)
                rdma_destroy_id(child);
        }
    }
    rdma_event_channel* channel_ = nullptr;
    rdma_cm_id* listener_ = nullptr;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

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

// Restores RLIMIT_MEMLOCK and clears softverbs faults.
struct LimitGuard {
    LimitGuard() { getrlimit(RLIMIT_MEMLOCK, &saved); }
    ~LimitGuard() {
        setrlimit(RLIMIT_MEMLOCK, &saved);
        softverbs_fault_clear();
    }
    rlimit saved{};
};

}  // namespace

TEST(Errors, NothingListeningNamesAddressAndPort) {
    if (TargetProcess::external())
        GTEST_SKIP() << "needs the loopback device";
    Options o;
    o.target = "127.0.0.1";
    o.subsystem_nqn = nvmeof::test::kTestNqn;
    o.port = free_port();
    o.timeout = 5s;
    const std::string what = error_of([&] { Controller::connect(o); });
    EXPECT_NE(what.find("nothing listens on 127.0.0.1:" + std::to_string(o.port)),
              std::string::npos)
        << what;
}

TEST(Errors, CmRejectWithoutNvmeDataSaysSo) {
    if (TargetProcess::external())
        GTEST_SKIP() << "needs the loopback device";
    BareRejecter rejecter;
    ASSERT_NE(rejecter.port(), 0);
    Options o;
    o.target = "127.0.0.1";
    o.port = rejecter.port();
    o.subsystem_nqn = nvmeof::test::kTestNqn;
    o.timeout = 5s;
    try {
        Controller::connect(o);
        FAIL() << "connected to a listener that rejects everything";
    } catch (const ConnectError& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.cause(), ConnectFailure::rejected) << what;
        EXPECT_EQ(e.reject_status(), 0) << what;
        EXPECT_NE(what.find("rejected by the target's RDMA-CM at 127.0.0.1:" +
                            std::to_string(o.port) + " with no NVMe/RDMA reject data"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("CM status 28: consumer-defined reject"), std::string::npos) << what;
        EXPECT_EQ(what.find("Unknown Reject Status"), std::string::npos) << what;
    }
}

TEST(Errors, RegistrationFailureBlamesMemlockOnlyWhenItWouldExceedIt) {
    if (softverbs_active() == 0)
        GTEST_SKIP() << "needs softverbs fault injection";
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    LimitGuard guard;
    // A limit far above what this process has locked (softverbs pins nothing),
    // small enough that a buffer beyond it is cheap.
    rlimit lower = guard.saved;
    lower.rlim_cur = std::min<rlim_t>(guard.saved.rlim_max, 8 << 20);
    if (lower.rlim_cur < (1 << 20))
        GTEST_SKIP() << "hard RLIMIT_MEMLOCK too small to test";
    ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &lower), 0);

    char err[128] = {};
    ASSERT_EQ(softverbs_fault_add("fail,obj=mr,count=1", err, sizeof err), 0) << err;
    const std::string small = error_of([&] { ctrl.allocate(4096); });
    EXPECT_NE(small.find("ibv_reg_mr of 4096 bytes"), std::string::npos) << small;
    EXPECT_NE(small.find("Cannot allocate memory"), std::string::npos) << small;
    EXPECT_NE(small.find("not the locked-memory limit"), std::string::npos) << small;
    EXPECT_EQ(small.find("would exceed"), std::string::npos) << small;

    ASSERT_EQ(softverbs_fault_add("fail,obj=mr,count=1", err, sizeof err), 0) << err;
    const std::size_t huge = static_cast<std::size_t>(lower.rlim_cur) + (1 << 20);
    const std::string over = error_of([&] {
        std::vector<std::byte> buffer(huge);
        ctrl.register_memory(buffer.data(), buffer.size());
    });
    EXPECT_NE(over.find("would exceed the locked-memory limit RLIMIT_MEMLOCK"), std::string::npos)
        << over;
}
