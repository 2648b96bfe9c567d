// RdmaQueue: one NVMe queue over one RC queue pair (internal; verbs types
// here). The RDMA backend of a QueueCore (queue_core.hpp): the core keeps the
// command and transfer IDs, the transfer records, deadlines, the split at
// MDTS and the waiting FIFO, the finished ring, held transfers and the
// counters; this class carries the commands over verbs and implements the
// core's transport operations.
//
// Setup (rdma_queue_setup.cpp): address → device → CQ/QP/rings → route →
// rdma_connect with the NVMe/RDMA private data. Data path
// (rdma_queue_datapath.cpp, the inline operations in rdma_queue_command.hpp):
// by command ID, an SQE buffer in registered memory and a SEND WR with its
// SGEs prefilled; a ring of 16-byte response buffers with RECV WRs
// prefilled. The core's per-I/O steps (queue_core_datapath.hpp) are
// instantiated here, so that each transport operation inlines into them:
//   submit           the core's submit; its one command's SQE is filled in
//                    place in its cid's command buffer and its SEND posted at
//                    once (Post::now, nothing deferred) or chained onto the
//                    deferred list;
//   commit           posts the deferred list with one ibv_post_send;
//   take_completions the core's hand-back around one poll_cq;
//   poll_cq          polls up to kPollBatch completions and handles them in
//   handle_completion  one pass: each response goes to the core
//                    (complete_response), its receive is re-posted with the
//                    others of the batch in one ibv_post_recv.
// Failure, drain and the core's recovery steps are rdma_queue_recovery.cpp;
// deallocate's DSM range, rdma_queue_dataless.cpp; a namespace with
// metadata's entry, rdma_queue_protection.cpp.
//
// One CQE per I/O: a request completes on its response alone. SENDs are
// unsignalled except every kSendsPerSignal-th one, whose completion retires it
// and the unsignalled ones before it from the send queue (SQ completions come
// in order). The response implies the SEND was delivered: on an RC QP the
// target can only answer a capsule its receive queue took, and if our side
// retransmits a SEND whose ACK got lost, the responder recognises the
// duplicate PSN and discards it without placing it again. So the command
// buffer may be reused once the response is in, even before the SEND's
// completion (if any) is polled. A send queue entry is only free once a later
// signalled completion retired it: sends_in_queue() counts those in use, the
// SQ is sized for the command IDs plus one signalling interval, and a piece
// that would overflow it waits (transfers) or is refused busy (low-level
// commands): send_room() is what the core asks. A SEND that fails still
// reports a completion (errors are always signalled) and fails the queue.
//
// Any failure (timeout, WC error, bad command ID, close) moves the QP to
// error and drains it before any request is failed back: the drain posts a
// signalled marker SEND on the errored QP and waits for its flush completion
// and for every posted receive (every WR before them has then left its
// queue, signalled or not, as with the kernel's ib_drain_qp).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/command_fields.hpp"
#include "transport/connect_deadline.hpp"
#include "transport/host_queue.hpp"
#include "transport/invariant.hpp"
#include "transport/peer_address.hpp"
#include "transport/queue_core.hpp"
#include "verbs/resources.hpp"

namespace nvmeof::detail {

class RdmaQueue final : public HostQueue {
  public:
    // --- setup (rdma_queue_setup.cpp) ---
    // Creates the CM id and resolves the address, so device() is known.
    RdmaQueue(const QueueConfig& config, const PeerAddress& peer);
    ~RdmaQueue() override;
    RdmaQueue(const RdmaQueue&) = delete;
    RdmaQueue& operator=(const RdmaQueue&) = delete;

    ibv_context* device() const { return id_->verbs; }
    // Creates CQ, QP and rings in `pd`, resolves the route and connects. With
    // `completion_channel`, the CQ reports there once armed (wait_for_completions).
    void connect(ibv_pd* pd, const ibv_device_attr& device, std::uint64_t max_transfer_bytes,
                 ibv_comp_channel* completion_channel = nullptr);
    // Orderly close: the answers already in taken (take_answers_in), then
    // rdma_disconnect, QP to error, drain, fail what is left.
    // `wait_for_peer` false skips the wait for DISCONNECTED (a peer known dead).
    void disconnect(bool wait_for_peer = true) noexcept override;
    // Destroys QP, CQ and ring MRs (before the PD goes), keeps the CM id.
    void release_verbs() noexcept;
    void release() noexcept override { release_verbs(); }
    // Reconnect: a disconnected queue whose verbs are released gets a new CM id
    // resolved to `peer` (then connect() as new). Held transfers, command IDs
    // still owned by Request handles and the transfer records stay.
    void reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                std::uint16_t cntlid) override;
    std::string local_address() const override;
    // The data path makes no system call and copies nothing: all 0.
    TransportCounters transport_counters() const noexcept override { return {}; }
    std::uint16_t crqsize() const { return crqsize_; }
    // Before connect(): writes of at most `bytes` per command carry their data
    // in the capsule (a second SGE on the caller's buffer); 0: all keyed.
    void set_in_capsule_limit(std::uint32_t bytes) { in_capsule_limit_ = bytes; }

    // --- the core's entry points, instantiated for RDMA (rdma_queue_datapath.cpp) ---
    // A caller's transfer (IoQueue::submit): handed back by take_completions().
    // In line: one test sends a namespace with metadata to its own path, so
    // that neither path asks the other's questions.
    SubmitResult submit(const NamespaceRef& ns, const Transfer& transfer,
                        Post post) noexcept override {
        return ns.format.metadata_bytes != 0 ? submit_with_metadata(ns, transfer, post, nullptr)
                                             : submit_plain(ns, transfer, post);
    }
    // `internal`: a blocking caller's, its transfer ID written to *tid, taken
    // by take_transfer(*tid) instead.
    SubmitResult submit_transfer(const NamespaceRef& ns, const Transfer& transfer, bool internal,
                                 std::uint32_t* tid, Post post = Post::now) noexcept override;
    // Finished transfers into `out`: those finished earlier, then what one
    // poll_cq() finishes. `failed`: how many of those did not succeed.
    std::size_t take_completions(std::span<Completion> out, std::size_t& failed) noexcept override;
    // Low level; throws TransportError. Returns the command's cid.
    std::uint16_t submit_command(const wire::Sqe& command,
                                 Deadline deadline = Deadline::request_timeout) override;
    // After a reconnect (rdma_queue_recovery.cpp): QueueCore::replay_held.
    std::size_t replay_held() noexcept override;

    // Idle waiting (off the busy path): arms the CQ's completion event, then
    // polls once more so nothing that arrived before arming is slept through.
    // True when there is nothing to hand back, so the caller may block on the
    // completion channel; false when completions are ready or the queue failed.
    bool arm_if_quiet() noexcept override;

    // Before memory is deregistered: every SEND built so far leaves the send
    // queue (its completion, or a signalled one after it, polled). An
    // unsignalled SEND that gathers in-capsule data is otherwise still in the
    // queue after its response came, and a retransmission of it would read the
    // memory. Off the data path; bounded by the queue's timeout, past which the
    // queue fails (QP to error and drain also retire everything).
    void retire_sends() noexcept override;

    // The core's counters and this transport's (builds with invariants only).
    void check_counters() const noexcept override {
        QueueCore::check_counters();
        if constexpr (NVMEOF_INVARIANTS) {
            check_send_counters();
        }
    }

    // --- the transport operations (QueueBackend, queue_core.hpp) ---
    // Inline ones in rdma_queue_command.hpp.
    std::uint32_t send_room() const noexcept { return send_queue_capacity_ - sends_in_queue(); }
    std::size_t deferred() const noexcept override { return deferred_count_; }
    // SENDs built since connect (0 again after a reconnect: reset_for_reopen).
    std::uint32_t commands_built() const noexcept { return send_position_; }
    wire::Sqe& sqe(std::uint16_t cid) noexcept { return sqes_[cid]; }
    // A keyed SGL on the caller's memory, or (a write at most
    // in_capsule_limit_ bytes) its data gathered into the SEND.
    [[gnu::always_inline]] inline void set_data(std::uint16_t cid, wire::Sqe& sqe,
                                                std::uint64_t address, std::uint32_t bytes,
                                                std::uint32_t rkey, std::uint32_t lkey) noexcept;
    void set_no_data(std::uint16_t cid) noexcept { sends_[cid].wr.num_sge = 1; }
    // Flush, write zeroes or deallocate (a range in the cid's DSM buffer).
    void build_dataless(std::uint16_t cid, Op op, std::uint32_t nsid, std::uint64_t slba,
                        std::uint64_t blocks) noexcept;
    // A replayed in-capsule write whose reconnected controller takes less in
    // the capsule goes keyed instead.
    void rebuild_as_built(std::uint16_t cid) noexcept;
    [[gnu::always_inline]] inline SubmitResult send(std::uint16_t cid, Post post) noexcept;
    // Chains cid's SEND behind those deferred.
    [[gnu::always_inline]] inline void defer(std::uint16_t cid) noexcept;
    void commit() noexcept override;
    // Takes up to kPollBatch completions off the CQ and handles them; returns how many.
    int poll_cq() noexcept override;
    // Fails every outstanding request with `code` after QP → error and drain.
    void fail(TransportErrc code, int sys_errno, const char* why) noexcept override;

    static constexpr int kRecvTagShift = 63;
    static constexpr std::uint64_t kRecvTag = std::uint64_t{1} << kRecvTagShift;  // wr_id of RECVs
    // wr_id of drain()'s markers (the RECV's with kRecvTag)
    static constexpr std::uint64_t kDrainMarker = std::uint64_t{1} << 62;
    // wr_id of retire_sends()' zero-length RDMA WRITEs
    static constexpr std::uint64_t kRetireMarker = kDrainMarker + 1;
    // A busy queue at depth 32 produces about 32 CQEs per round: one poll takes them all.
    static constexpr int kPollBatch = 64;
    static constexpr std::chrono::milliseconds kMaxDrainWait{5000};

  private:
    // By cid: the SEND that carries command cid's capsule, on cache lines of
    // its own.
    struct alignas(64) CommandSend {
        ibv_send_wr wr{};
        static constexpr std::uint32_t kMaxSges = 2;  // the SQE; then in-capsule write data
        ibv_sge sge[kMaxSges]{};
        // An in-capsule write's rkey: a replay after a reconnect whose
        // controller takes less in the capsule sends it keyed instead.
        std::uint32_t in_capsule_rkey = 0;
    };

    // setup helpers
    void create_resources(ibv_pd* pd, ibv_comp_channel* completion_channel);
    void post_all_receives();
    void connect_cm(const ibv_device_attr& device);
    // The CM id bound and resolved to `peer` (constructor and reopen()).
    void resolve(const PeerAddress& peer);
    verbs::CmEvent expect_event(const char* step);

    // datapath helpers
    // submit() on a namespace without metadata.
    SubmitResult submit_plain(const NamespaceRef& ns, const Transfer& t, Post post) noexcept;
    // submit() and submit_transfer() on a namespace with metadata
    // (rdma_queue_protection.cpp). (`post` third: submit() hands it on in the
    // register it came in.)
    [[gnu::noinline]] SubmitResult submit_with_metadata(const NamespaceRef& ns, const Transfer& t,
                                                        Post post, std::uint32_t* tid) noexcept;
    [[gnu::noinline]] SubmitResult commit_queued() noexcept;
    // Chains a SEND behind those deferred.
    [[gnu::always_inline]] inline void chain_deferred(ibv_send_wr& wr) noexcept;
    // One pass over a polled batch; the receives of its responses go back up in one post.
    void handle_completion(const ibv_wc* wc, int n) noexcept;
    // False when the queue failed (the caller stops handling the batch).
    [[gnu::always_inline]] inline bool handle_response(std::uint32_t index,
                                                       std::uint32_t byte_len) noexcept;
    bool handle_send_completion(const ibv_wc& wc) noexcept;
    // Send queue entries taken by SENDs built since connect and not yet
    // retired by a signalled completion (posted or still deferred).
    std::uint32_t sends_in_queue() const noexcept { return send_position_ - sends_retired_; }
    // The SEND is the next one built: signalled if it ends a signalling interval.
    [[gnu::always_inline]] inline void prepare_send(CommandSend& send) noexcept;
    void drain() noexcept;
    // Before a live queue is closed: the answers already in its CQ complete
    // their requests, so that none is held and re-sent after it was answered
    // (on a zoned namespace the write pointer would refuse the second write).
    // Nothing new is posted (no after_poll); a failed completion fails the queue.
    void take_answers_in() noexcept;
    // Always `queued`: a failed post fails the queue, and the transfers with it.
    [[gnu::always_inline]] inline SubmitResult post_chain(ibv_send_wr* head) noexcept;
    // A batch not handled whole: its receives leave receives_outstanding_.
    void batch_receives_taken_off() noexcept;
    void check_send_counters() const noexcept;  // rdma_queue_recovery.cpp

    verbs::EventChannel channel_;
    verbs::CompletionQueue cq_;  // declared before id_: the QP (owned by id_) goes first
    verbs::CmId id_;
    ibv_qp* qp_ = nullptr;  // id_.qp() once created; the datapath posts here
    // By cid (the core's command IDs, the set-up command's last): the SQE
    // buffers, registered, and their SENDs.
    std::unique_ptr<wire::Sqe[]> sqes_;
    verbs::MemoryRegion sqes_mr_;
    std::vector<CommandSend> sends_;
    std::unique_ptr<wire::DsmRange[]> dsm_ranges_;  // by cid, for deallocate
    verbs::MemoryRegion dsm_mr_;
    // The receive ring: a response buffer and its RECV per entry.
    std::unique_ptr<wire::Cqe[]> receive_buffers_;
    verbs::MemoryRegion receive_buffers_mr_;
    std::vector<ibv_recv_wr> recv_wrs_;
    std::uint32_t receive_count_ = 0;  // recv_wrs_.size()
    std::vector<ibv_sge> recv_sges_;

    ibv_send_wr* deferred_head_ = nullptr;           // built, not yet posted (Post::deferred)
    ibv_send_wr** deferred_next_ = &deferred_head_;  // where the next deferred SEND is linked
    std::uint32_t deferred_count_ = 0;
    // Send queue accounting (see the header comment); counters wrap harmlessly.
    std::uint32_t send_position_ = 0;         // SENDs built since connect
    std::uint32_t sends_retired_ = 0;         // of those, retired by a signalled completion
    std::uint32_t send_queue_capacity_ = 0;   // the QP's SQ less the drain marker's entry
    std::uint32_t receives_outstanding_ = 0;  // posted, not yet taken off the CQ (drain())
    // The batch handle_completion() is handling: its receives, taken off the
    // CQ, still count in receives_outstanding_ until it ends.
    const ibv_wc* batch_ = nullptr;
    int batch_size_ = 0;
    std::uint32_t in_capsule_limit_ = 0;
    std::uint16_t crqsize_ = 0;
};

}  // namespace nvmeof::detail
