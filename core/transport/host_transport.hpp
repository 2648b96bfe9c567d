// HostTransport: what a controller needs of its transport besides the queues
// themselves (internal), one per controller, as SPDK's
// spdk_nvme_transport_ops and the kernel's nvme_ctrl_ops split a transport
// from the fabrics logic above it. The controller (core/host) creates and
// connects its queues, registers memory and waits for completions through
// it, and never names a transport's types.
//
//   RDMA (rdma_host_transport.cpp): the device the admin queue's address
//        resolved to, its protection domain, memory registrations with
//        keys, a completion channel the I/O queues' CQs report to.
//   TCP  (tcp_host_transport.cpp): no device; memory is registered without
//        keys (the queue moves the bytes); an epoll set of the I/O queues'
//        sockets to wait on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nvmeof/base/gpu.hpp"
#include "nvmeof/base/transport.hpp"
#include "transport/host_queue.hpp"
#include "transport/peer_address.hpp"

namespace nvmeof {
struct MemoryRecord;
}

namespace nvmeof::detail {

// Limits of the local side that bound a queue (negotiate_queue_size) and
// in-capsule writes (in_capsule_write_limit).
struct LocalQueueLimits {
    std::uint32_t max_queue_entries = 0;       // RDMA: the device's max_qp_wr
    std::uint32_t max_completion_entries = 0;  // RDMA: the device's max_cqe
    int max_send_gather = 0;                   // RDMA: the device's max_sge
};

// The transport-specific connection settings of Options.
struct TransportSettings {
    Transport transport = Transport::rdma;
    bool header_digest = false;  // NVMe/TCP
    bool data_digest = false;    // NVMe/TCP
};

class HostTransport {
  public:
    // Throws ConnectError when the transport is not available in this build.
    static std::unique_ptr<HostTransport> create(const TransportSettings& settings);
    virtual ~HostTransport() = default;

    virtual Transport kind() const noexcept = 0;
    // A queue aimed at `peer`, not connected (RDMA: its address resolved, so
    // its device is known). Throws ConnectError.
    virtual std::unique_ptr<HostQueue> create_queue(const QueueConfig& config,
                                                    const PeerAddress& peer) = 0;
    // The controller's local resources, from its first admin queue (RDMA: the
    // device's attributes and a protection domain). Throws ConnectError.
    virtual void open(HostQueue& admin) = 0;
    // A queue created or reopened after open() reaches the peer through the
    // resources memory is registered with (RDMA: the same device); throws
    // ConnectError naming `step` when it does not.
    virtual void check_same_device(const HostQueue& queue, const std::string& step) const = 0;
    virtual LocalQueueLimits limits() const = 0;
    // The controller must take keyed SGL data blocks (Identify SGLS bit 2):
    // RDMA's data moves by them; NVMe/TCP's by transport data blocks.
    virtual bool needs_keyed_sgls() const noexcept = 0;
    // "rxe0", "softverbs0"; "tcp" for a transport without a device.
    virtual std::string device_name() const = 0;
    // Connects a created or reopened queue: writes of at most
    // `in_capsule_bytes` travel in the capsule (the admin queue's is the
    // transport's own). Throws ConnectError.
    virtual void connect_queue(HostQueue& queue, std::uint64_t max_transfer_bytes,
                               std::uint32_t in_capsule_bytes) = 0;
    // Registers the record's [address, +length) of host memory: keys set
    // where the transport has them, alive() true. Throws Error.
    virtual void register_memory(MemoryRecord& record) = 0;
    // GPU memory (core/gpu). Throws InvalidArgument or Error naming the cause.
    virtual std::shared_ptr<MemoryRecord> register_gpu(void* device_ptr, std::size_t bytes,
                                                       std::shared_ptr<GpuOrdering> ordering) = 0;
    // Idle waits: the descriptor that turns readable when an I/O queue armed
    // by arm_if_quiet() has something to poll; -1 before the I/O queues.
    virtual int wakeup_fd() const noexcept = 0;
    // Takes what made wakeup_fd() readable; true if there was something.
    virtual bool take_wakeups() noexcept = 0;
    // After every queue released (HostQueue::release) and every memory record
    // closed (RDMA: their MRs need the protection domain).
    virtual void close() noexcept = 0;
};

// The NVMe/TCP one (tcp_host_transport.cpp), for create().
std::unique_ptr<HostTransport> make_tcp_transport(const TransportSettings& settings);

}  // namespace nvmeof::detail
