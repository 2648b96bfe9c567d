// HostQueue: a controller's queue as the host drives it, whatever carries its
// capsules (internal). The transport-neutral QueueCore (queue_core.hpp) keeps
// IDs, records, deadlines, the MDTS split and replay; each transport's queue
// (RdmaQueue, TcpQueue) derives from HostQueue, is its core's backend, and is
// `final`, so that a call through the transport's own type is direct.
//
// The host (core/host) knows HostQueue only: what it does off the data path
// (Fabrics commands, close, reconnect, idle waits) are the virtual functions
// below; what a transport needs to set its queues up is its HostTransport's
// (host_transport.hpp). The public handles (IoQueue, Request) reach the
// per-I/O functions through the transport's own type instead
// (queue_dispatch.hpp): one test of transport(), then direct calls that cost
// what they cost before a second transport existed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "nvmeof/base/transport.hpp"
#include "transport/peer_address.hpp"
#include "transport/queue_core.hpp"

namespace nvmeof::detail {

class HostQueue;

// Told when a queue fails (a timeout, a transport error, a lost connection;
// not an orderly close), wherever the failure is seen: a poll, a post, a
// deadline check. The owner's state machine must not depend on someone
// calling it later to notice (an engine with nothing in flight never polls
// again). Called from inside the queue: the listener may record the failure
// but must not tear the queue down there.
class QueueFailureListener {
  public:
    virtual void queue_failed(HostQueue& queue) noexcept = 0;

  protected:
    ~QueueFailureListener() = default;
};

class HostQueue : public QueueCore {
  public:
    ~HostQueue() override = default;
    HostQueue(const HostQueue&) = delete;
    HostQueue& operator=(const HostQueue&) = delete;

    Transport transport() const noexcept { return transport_; }
    void set_failure_listener(QueueFailureListener* listener) noexcept {
        failure_listener_ = listener;
    }

    // --- per I/O (the handles call these through the final type) ---
    // A caller's transfer (IoQueue::submit): handed back by take_completions().
    virtual SubmitResult submit(const NamespaceRef& ns, const Transfer& transfer,
                                Post post) noexcept = 0;
    // `internal`: a blocking caller's, its transfer ID written to *tid, taken
    // by take_transfer(*tid) instead.
    virtual SubmitResult submit_transfer(const NamespaceRef& ns, const Transfer& transfer,
                                         bool internal, std::uint32_t* tid,
                                         Post post = Post::now) noexcept = 0;
    // Finished transfers into `out`: those finished earlier, then what one
    // poll_cq() finishes. `failed`: how many of those did not succeed.
    virtual std::size_t take_completions(std::span<Completion> out,
                                         std::size_t& failed) noexcept = 0;
    // Posts what is deferred.
    virtual void commit() noexcept = 0;
    // Commands built and not yet posted.
    virtual std::size_t deferred() const noexcept = 0;
    // Takes what the transport has received and hands responses to the core;
    // returns how many completions it took.
    virtual int poll_cq() noexcept = 0;

    // --- off the data path ---
    // Low level; throws TransportError. Returns the command's cid. A keyed
    // SGL in `command` names memory of this process the transport may move
    // the data through (RDMA: the target reaches it by its rkey; TCP: the
    // queue sends or receives it itself).
    virtual std::uint16_t submit_command(const wire::Sqe& command,
                                         Deadline deadline = Deadline::request_timeout) = 0;
    // After a reconnect: QueueCore::replay_held.
    virtual std::size_t replay_held() noexcept = 0;
    // Idle waiting: readies the transport's wake-up (host_transport.hpp's
    // wakeup_fd), then polls once more so nothing that arrived before is
    // slept through. True when there is nothing to hand back, so the caller
    // may block; false when completions are ready or the queue failed.
    virtual bool arm_if_quiet() noexcept = 0;
    // Before memory is deregistered: nothing the transport still holds to
    // send gathers from it (RDMA: unsignalled SENDs retired).
    virtual void retire_sends() noexcept = 0;
    // Stops the transport (no memory touched after it returns) and fails
    // or holds what is outstanding.
    virtual void fail(TransportErrc code, int sys_errno, const char* why) noexcept = 0;
    // Orderly close: a live queue first completes what was already answered
    // (the answers received and not yet polled), then the transport's
    // disconnect, then what is left fails (or is held for a reconnect).
    // `wait_for_peer` false waits for nothing from a peer known dead.
    virtual void disconnect(bool wait_for_peer = true) noexcept = 0;
    // Frees the transport's connection resources (before the controller's
    // device resources go); the queue's records stay.
    virtual void release() noexcept = 0;
    // Reconnect: a disconnected, released queue aimed at `peer` again (then
    // connected by its HostTransport as new). Held transfers, command IDs
    // still owned by Request handles and the transfer records stay.
    virtual void reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                        std::uint16_t cntlid) = 0;
    virtual std::string local_address() const = 0;
    // What the transport did over the queue's life (IoQueue::transport_counters).
    virtual TransportCounters transport_counters() const noexcept = 0;
    // The core's counters and the transport's (builds with invariants only).
    virtual void check_counters() const noexcept = 0;

  protected:
    HostQueue(const QueueConfig& config, Transport transport)
        : QueueCore(config), transport_(transport) {}
    // A failure to report (not an orderly close): tells the listener.
    void report_failure() noexcept {
        if (failure_listener_ != nullptr) {
            failure_listener_->queue_failed(*this);
        }
    }

  private:
    Transport transport_;
    QueueFailureListener* failure_listener_ = nullptr;
};

}  // namespace nvmeof::detail
