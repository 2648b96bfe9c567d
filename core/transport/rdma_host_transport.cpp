// The RDMA HostTransport (host_transport.hpp): the device the admin queue's
// address resolved to, a protection domain on it that registers the
// controller's memory, and the completion channel the I/O queues' CQs report
// to once armed.
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "gpu/gpu_registration.hpp"
#include "memory/memory_record.hpp"
#include "nvmeof/base/errors.hpp"
#include "transport/host_transport.hpp"
#include "transport/rdma_queue.hpp"
#include "verbs/resources.hpp"

namespace nvmeof::detail {

namespace {

constexpr int kRegistrationAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

ConnectError device_error(const char* step, const std::system_error& e) {
    ConnectError::Details d;
    d.sys_errno = e.code().value();
    return ConnectError(ConnectFailure::device_error, step, e.what(), d);
}

class RdmaHostTransport final : public HostTransport {
  public:
    Transport kind() const noexcept override { return Transport::rdma; }

    std::unique_ptr<HostQueue> create_queue(const QueueConfig& config,
                                            const PeerAddress& peer) override {
        return std::make_unique<RdmaQueue>(config, peer);
    }

    void open(HostQueue& admin) override {
        ibv_context* device = rdma(admin).device();
        if (ibv_query_device(device, &device_) != 0) {
            throw ConnectError(ConnectFailure::device_error, "ibv_query_device",
                               std::strerror(errno));
        }
        try {
            pd_ = verbs::alloc_pd(device);
        } catch (const std::system_error& e) {
            throw device_error("allocating connect resources", e);
        }
        device_name_ = ibv_get_device_name(device->device);
    }

    void check_same_device(const HostQueue& queue, const std::string& step) const override {
        if (rdma(queue).device() != pd_->context) {
            throw ConnectError(ConnectFailure::device_error, step,
                               "qid " + std::to_string(queue.qid()) +
                                   " resolved to another RDMA device (" +
                                   ibv_get_device_name(rdma(queue).device()->device) +
                                   ") than the one the controller's memory is registered with (" +
                                   device_name_ + ")");
        }
    }

    LocalQueueLimits limits() const override {
        return {static_cast<std::uint32_t>(device_.max_qp_wr),
                static_cast<std::uint32_t>(device_.max_cqe), device_.max_sge};
    }

    bool needs_keyed_sgls() const noexcept override { return true; }

    std::string device_name() const override { return device_name_; }

    void connect_queue(HostQueue& queue, std::uint64_t max_transfer_bytes,
                       std::uint32_t in_capsule_bytes) override {
        RdmaQueue& rdma_queue = rdma(queue);
        if (queue.qid() == 0) {
            rdma_queue.connect(pd_.get(), device_, max_transfer_bytes);
            return;
        }
        open_completion_channel();
        rdma_queue.set_in_capsule_limit(in_capsule_bytes);
        rdma_queue.connect(pd_.get(), device_, max_transfer_bytes, completion_channel_.get());
    }

    void register_memory(MemoryRecord& record) override {
        try {
            record.mr = verbs::register_memory(pd_.get(), record.address, record.length,
                                               kRegistrationAccess);
        } catch (const std::system_error& e) {
            throw Error(std::string("memory registration failed: ") + e.what());
        }
        record.registered = true;
        record.lkey = record.mr->lkey;
        record.rkey = record.mr->rkey;
    }

    std::shared_ptr<MemoryRecord> register_gpu(void* device_ptr, std::size_t bytes,
                                               std::shared_ptr<GpuOrdering> ordering) override {
        return gpu::register_gpu_memory({pd_.get(), device_name_}, device_ptr, bytes,
                                        std::move(ordering));
    }

    int wakeup_fd() const noexcept override {
        return completion_channel_ ? completion_channel_->fd : -1;
    }

    bool take_wakeups() noexcept override {
        // Every event is taken and acknowledged now (a CQ cannot be destroyed
        // with events unacknowledged); the CQs are re-armed on the next wait.
        bool woke = false;
        if (!completion_channel_) {
            return woke;  // a first connect that failed before its I/O queues
        }
        ibv_cq* cq = nullptr;
        void* context = nullptr;
        while (ibv_get_cq_event(completion_channel_.get(), &cq, &context) == 0) {
            ibv_ack_cq_events(cq, 1);
            woke = true;
        }
        return woke;
    }

    void close() noexcept override {
        completion_channel_.reset();  // after every CQ that reports to it
        pd_.reset();
    }

  private:
    static RdmaQueue& rdma(HostQueue& queue) noexcept { return static_cast<RdmaQueue&>(queue); }
    static const RdmaQueue& rdma(const HostQueue& queue) noexcept {
        return static_cast<const RdmaQueue&>(queue);
    }

    // Once, for the first I/O queue: a reconnect keeps it (the CQs are new,
    // the device is not). Non-blocking, so draining its events after poll()
    // never blocks.
    void open_completion_channel() {
        if (completion_channel_) {
            return;
        }
        try {
            completion_channel_ = verbs::create_comp_channel(pd_->context);
        } catch (const std::system_error& e) {
            throw device_error("creating the completion channel", e);
        }
        const int flags = fcntl(completion_channel_->fd, F_GETFL);
        if (flags < 0 || fcntl(completion_channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
            const int error = errno;
            completion_channel_.reset();
            ConnectError::Details d;
            d.sys_errno = error;
            throw ConnectError(ConnectFailure::device_error, "creating the completion channel",
                               std::string("fcntl O_NONBLOCK: ") + std::strerror(error), d);
        }
    }

    ibv_device_attr device_{};
    std::string device_name_;
    verbs::ProtectionDomain pd_;
    verbs::CompletionChannel completion_channel_;
};

}  // namespace

std::unique_ptr<HostTransport> HostTransport::create(const TransportSettings& settings) {
    if (settings.transport == Transport::tcp) {
        return make_tcp_transport(settings);
    }
    return std::make_unique<RdmaHostTransport>();
}

}  // namespace nvmeof::detail
