// The NVMe/TCP HostTransport (host_transport.hpp): no device and no keys.
// Memory is registered by marking it alive for the controller (the queues
// send and receive its bytes themselves); idle waits sleep on an epoll set
// of the I/O queues' sockets.
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "gpu/gpu_registration.hpp"
#include "memory/memory_record.hpp"
#include "nvmeof/base/errors.hpp"
#include "transport/host_transport.hpp"
#include "transport/tcp_queue.hpp"

namespace nvmeof::detail {
namespace {

// A queue's entries are bounded by the controller only (no device rings).
constexpr std::uint32_t kNoLocalLimit = std::numeric_limits<std::uint16_t>::max() + 1U;

class TcpHostTransport final : public HostTransport {
  public:
    explicit TcpHostTransport(const TransportSettings& settings) {
        settings_.digests.header = settings.header_digest;
        settings_.digests.data = settings.data_digest;
    }
    ~TcpHostTransport() override { close(); }
    TcpHostTransport(const TcpHostTransport&) = delete;
    TcpHostTransport& operator=(const TcpHostTransport&) = delete;

    Transport kind() const noexcept override { return Transport::tcp; }

    std::unique_ptr<HostQueue> create_queue(const QueueConfig& config,
                                            const PeerAddress& peer) override {
        return std::make_unique<TcpQueue>(config, peer, settings_);
    }

    void open(HostQueue& /*admin*/) override {}

    void check_same_device(const HostQueue& /*queue*/, const std::string& /*step*/) const override {
    }

    LocalQueueLimits limits() const override {
        // In-capsule data is a second iovec of the same sendmsg: no gather limit.
        return {kNoLocalLimit, kNoLocalLimit, std::numeric_limits<int>::max()};
    }

    bool needs_keyed_sgls() const noexcept override { return false; }

    std::string device_name() const override { return "tcp"; }

    void connect_queue(HostQueue& queue, std::uint64_t max_transfer_bytes,
                       std::uint32_t in_capsule_bytes) override {
        auto& tcp = static_cast<TcpQueue&>(queue);
        if (queue.qid() == 0) {
            tcp.connect(max_transfer_bytes, TcpQueue::kAdminInCapsuleBytes);
            return;
        }
        tcp.connect(max_transfer_bytes, in_capsule_bytes);
        watch(tcp.socket_fd(), queue.qid());
    }

    void register_memory(MemoryRecord& record) override {
        record.lkey = 0;
        record.rkey = 0;
        record.registered = true;
    }

    // No keys to give the target: the bytes travel through a host copy.
    std::shared_ptr<MemoryRecord> register_gpu(void* device_ptr, std::size_t bytes,
                                               std::shared_ptr<GpuOrdering> ordering) override {
        return gpu::stage_gpu_memory(device_ptr, bytes, std::move(ordering));
    }

    int wakeup_fd() const noexcept override { return epoll_; }

    bool take_wakeups() noexcept override {
        // Level-triggered: a socket stays readable until its queue polls it,
        // so nothing is taken here; say whether any is.
        if (epoll_ < 0) {
            return false;
        }
        epoll_event event{};
        return epoll_wait(epoll_, &event, 1, 0) > 0;
    }

    void close() noexcept override {
        if (epoll_ >= 0) {
            ::close(epoll_);
            epoll_ = -1;
        }
    }

  private:
    // A connected I/O queue's socket joins the wait set (a reconnect's new
    // socket too; a closed one left the set when it was closed).
    void watch(int fd, std::uint16_t qid) {
        if (epoll_ < 0) {
            epoll_ = epoll_create1(EPOLL_CLOEXEC);
            if (epoll_ < 0) {
                throw_error("epoll_create1", errno);
            }
        }
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u32 = qid;
        if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0 &&
            (errno != EEXIST || epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event) != 0)) {
            throw_error("epoll_ctl", errno);
        }
    }

    [[noreturn]] static void throw_error(const char* call, int error) {
        ConnectError::Details d;
        d.sys_errno = error;
        throw ConnectError(ConnectFailure::device_error, "waiting set of the I/O queues",
                           std::string(call) + ": " + std::strerror(error), d);
    }

    TcpSettings settings_;
    int epoll_ = -1;
};

}  // namespace

std::unique_ptr<HostTransport> make_tcp_transport(const TransportSettings& settings) {
    return std::make_unique<TcpHostTransport>(settings);
}

}  // namespace nvmeof::detail
