// TcpQueue: one NVMe queue over one TCP connection (NVMe/TCP transport
// specification 1.0; internal). The TCP backend of a QueueCore
// (queue_core.hpp), as RdmaQueue is the RDMA one: the core keeps IDs,
// records, deadlines, the MDTS split and replay; this class carries the
// capsules as PDUs (nvmeof/wire/tcp.hpp) over a non-blocking socket
// (socket/stream_socket.hpp) and implements the core's transport operations.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "socket/stream_socket.hpp"
#include "transport/host_queue.hpp"

namespace nvmeof::detail {

// What the host asks of every NVMe/TCP connection of a controller.
struct TcpSettings {
    wire::TcpDigests digests;  // asked for in ICReq (Options::header_digest, data_digest)
};

class TcpQueue final : public HostQueue {
  public:
    // The NVMe/TCP admin queue's in-capsule data size (ICD of 8 KiB, fixed
    // by the transport specification).
    static constexpr std::uint32_t kAdminInCapsuleBytes = 8192;

    TcpQueue(const QueueConfig& config, const PeerAddress& peer, const TcpSettings& settings);
    ~TcpQueue() override;

    // Connects the socket and exchanges ICReq/ICResp within the config's
    // connect deadline; throws ConnectError naming the step. Sizes the core
    // (size_for) on the first connect. Writes of at most `in_capsule_bytes`
    // travel in the capsule (kAdminInCapsuleBytes on the admin queue, IOCCSZ's
    // on I/O queues), larger ones are sent on the controller's R2Ts.
    void connect(std::uint64_t max_transfer_bytes, std::uint32_t in_capsule_bytes);
    // The socket, for idle waits (readable: something to poll); -1 when closed.
    int socket_fd() const noexcept;
    // What ICResp granted (valid once connected).
    wire::TcpDigests digests() const noexcept;
    std::uint32_t max_h2c_data() const noexcept;

    // --- HostQueue ---
    SubmitResult submit(const NamespaceRef& ns, const Transfer& transfer,
                        Post post) noexcept override;
    SubmitResult submit_transfer(const NamespaceRef& ns, const Transfer& transfer, bool internal,
                                 std::uint32_t* tid, Post post = Post::now) noexcept override;
    std::size_t take_completions(std::span<Completion> out, std::size_t& failed) noexcept override;
    void commit() noexcept override;
    std::size_t deferred() const noexcept override;
    int poll_cq() noexcept override;
    std::uint16_t submit_command(const wire::Sqe& command,
                                 Deadline deadline = Deadline::request_timeout) override;
    std::size_t replay_held() noexcept override;
    bool arm_if_quiet() noexcept override;
    void retire_sends() noexcept override;
    void fail(TransportErrc code, int sys_errno, const char* why) noexcept override;
    void disconnect(bool wait_for_peer = true) noexcept override;
    void release() noexcept override;
    void reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                std::uint16_t cntlid) override;
    std::string local_address() const override;
    void check_counters() const noexcept override;

    // --- the transport operations (QueueBackend, queue_core.hpp) ---
    // (declared by the implementation)

  private:
    // (the implementation's)
};

}  // namespace nvmeof::detail
