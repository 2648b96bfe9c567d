// RdmaQueue: one NVMe queue over one RC queue pair (internal; verbs types here).
//
// Setup (rdma_queue_setup.cpp): address → device → CQ/QP/rings → route →
// rdma_connect with the NVMe/RDMA private data. Datapath
// (rdma_queue_datapath.cpp): a fixed pool of request slots, each with its SQE
// buffer, SGE and SEND WR prefilled; a ring of 16-byte response buffers with
// RECV WRs prefilled. Finishing a command, shared with recovery, is
// rdma_queue_completion.hpp; deadlines found passed, failure, drain and
// outages (hold, replay) are rdma_queue_recovery.cpp; what request handles
// take back, rdma_queue_handles.cpp; the flush of reads into GPU memory,
// rdma_queue_gpu.cpp.
//
// The per-I/O path, in rdma_queue_datapath.cpp (with rdma_queue_completion.hpp):
//   submit           (and submit_transfer, a blocking caller's) checks the
//                    transfer. A read or write of host memory in one command
//                    with a slot free and nothing waiting (the common case)
//                    takes one ID, the command's and the transfer's at once:
//                    its SQE is filled in place in the slot's command buffer,
//                    and its SEND posted at once (Post::now, nothing deferred)
//                    or chained onto the deferred list. On a namespace with
//                    metadata the same one command is built by
//                    submit_with_metadata, where submit's one test sends it
//                    (sized by what the format settles once, PRINFO and tags
//                    set in place), so the plain path tests nothing more for
//                    it. Anything
//                    else (split, waiting, other opcodes, GPU memory) goes
//                    through submit_general, whose transfer takes a record of its own
//                    and an ID per piece (build_pieces), so it can wait for slots;
//   commit           posts the deferred list with one ibv_post_send;
//   take_completions hands back finished transfers: those waiting, then what
//                    poll_cq finishes, written straight into the caller's array;
//   poll_cq          polls up to kPollBatch completions and handles them in
//   handle_completion  one pass: a response completes its piece (and, with
//                    the last, the transfer), its receive is re-posted with
//                    the others of the batch in one ibv_post_recv. A finished
//                    transfer goes straight into take_completions()' array, its ID free
//                    at once; without room, polled by anyone else, or a read
//                    into GPU memory (flushed first), it waits in the finished
//                    ring for hand_back.
//
// Transfer records: IDs below capacity() are common-path transfers, whose
// record lives at their command's ID, held from submission until the transfer
// is handed back; IDs above capacity() are the general path's, from a pool
// of their own (a further piece's command ID frees at its response). A held
// common-path transfer (reconnecting) keeps its slot and SQE and is re-sent as
// built, so the common path records nothing for a replay. A common-path
// record's status is written when it finishes (its one answer, or a failure).
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
// SQ is sized for the slots plus one signalling interval, and a piece that
// would overflow it waits (transfers) or is refused busy (low-level commands).
// A SEND that fails still reports a completion (errors are always signalled)
// and fails the queue.
//
// Deadlines read no clock and keep no list per request: a request records
// the number of the next clock read (its stamp), and the next poll that finds
// SENDs built since its last read reads the clock once and keeps now +
// request_timeout in a ring of stamp deadlines. The clock is read after the
// submission, so a deadline is never early; it is late by the time between
// the submission and the caller's next poll (no request can complete without
// one anyway). Until that read, a request has no deadline. check_deadlines()
// copies a request's deadline from the ring into its slot the first time it
// sees it, and sees every slot at least every kStampScanInterval reads, long
// before the ring (kStampRing) wraps.
//
// Any failure (timeout, WC error, bad command ID, close) moves the QP to
// error and drains it before any request is failed back: the drain posts a
// signalled marker SEND and a marker RECV on the errored QP and waits for
// their flush completions (every WR before them has then left its queue,
// signalled or not, as with the kernel's ib_drain_qp). A transfer with more
// pieces than there are free slots (or than the queue has at all) is queued in
// parts: the pieces that fit go out at once, the rest wait in a FIFO of
// transfers (preallocated, one entry per transfer record) and go out in order
// as polling frees slots.
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
#include "transport/cid_pool.hpp"
#include "transport/connect_deadline.hpp"
#include "transport/invariant.hpp"
#include "transport/queue_impl.hpp"
#include "verbs/resources.hpp"

namespace nvmeof::detail {

struct PeerAddress {
    sockaddr_storage target{};
    sockaddr_storage source{};
    bool has_source = false;
    std::string target_text;  // "addr:port"
};
// Resolves numeric or named addresses; throws ConnectError.
PeerAddress resolve_peer(const std::string& target, std::uint16_t port, const std::string& source);
std::string address_text(const sockaddr* address);

struct QueueConfig {
    std::uint16_t qid = 0;
    std::uint16_t size = 0;    // entries; size − 1 usable slots
    std::uint16_t cntlid = 0;  // for the CM REQ of I/O queues
    wire::QueueKind kind = wire::QueueKind::admin;
    std::chrono::milliseconds timeout{};          // bounds close-time waits (drain, disconnect)
    std::chrono::milliseconds request_timeout{};  // each request once live
    ConnectDeadline connect_deadline{};           // every connect step together
};

enum class QueueState : std::uint8_t { resolving, resolved, connected, live, failed, closed };
const char* queue_state_name(QueueState state);

// What a queue does with transfers when it fails, and with submissions while
// it is down; set by a controller that reconnects (Options::ctrl_loss_tmo).
// Only transfers (read, write, flush, write zeroes, deallocate) are ever held:
// each is idempotent, so re-sending one that already executed stores the same
// blocks again. Low-level commands (anything a caller built itself: compare,
// fused pairs, admin commands) fail back, since executing one twice may differ.
enum class OutagePolicy : std::uint8_t {
    fail,       // no reconnect: a failure fails every transfer back
    hold,       // a failure keeps every unfinished transfer for replay_held();
                // submissions while down are refused busy
    fail_fast,  // reconnecting past fast_io_fail_tmo: submissions fail (ENOLINK)
    lost,       // the controller gave up: submissions fail (ENODEV)
};

class RdmaQueue;

// A one-command transfer's PRINFO and tag words as its SQE carries them
// (command_protection, rdma_queue_command.hpp), worked out before the command
// is filled so that each word is stored once; all zero on a plain namespace.
struct CommandProtection {
    std::uint32_t cdw12_bits = 0;
    wire::CommandTagWords words{};
    std::uint32_t cdw15 = 0;
};

// Told when a queue fails (a timeout, a WC error, a lost connection; not an
// orderly close), wherever the failure is seen: a poll, a post, a deadline
// check. The owner's state machine must not depend on someone calling it
// later to notice (an engine with nothing in flight never polls again).
// Called from inside the queue: the listener may record the failure but must
// not tear the queue down there.
class QueueFailureListener {
public:
    virtual void queue_failed(RdmaQueue& queue) noexcept = 0;

protected:
    ~QueueFailureListener() = default;
};

class RdmaQueue final : public QueueImpl {
public:
    // --- setup (rdma_queue_setup.cpp) ---
    // Creates the CM id and resolves the address, so device() is known.
    RdmaQueue(const QueueConfig& config, const PeerAddress& peer);
    ~RdmaQueue();
    RdmaQueue(const RdmaQueue&) = delete;
    RdmaQueue& operator=(const RdmaQueue&) = delete;

    ibv_context* device() const { return id_->verbs; }
    // Creates CQ, QP and rings in `pd`, resolves the route and connects. With
    // `completion_channel`, the CQ reports there once armed (wait_for_completions).
    void connect(ibv_pd* pd, const ibv_device_attr& device, std::uint64_t max_transfer_bytes,
                 ibv_comp_channel* completion_channel = nullptr);
    // Orderly close: rdma_disconnect, QP to error, drain, fail what is left.
    // `wait_for_peer` false skips the wait for DISCONNECTED (a peer known dead).
    void disconnect(bool wait_for_peer = true) noexcept;
    // Destroys QP, CQ and ring MRs (before the PD goes), keeps the CM id.
    void release_verbs() noexcept;
    // Reconnect: a disconnected queue whose verbs are released gets a new CM id
    // resolved to `peer` (then connect() as new). Held transfers, request slots
    // still owned by Request handles and the transfer records stay.
    void reopen(const PeerAddress& peer, const ConnectDeadline& deadline, std::uint16_t cntlid);
    void set_outage_policy(OutagePolicy policy) noexcept;
    void set_failure_listener(QueueFailureListener* listener) noexcept {
        failure_listener_ = listener;
    }
    // After a reconnect (the queue live again): every held transfer is built
    // again from its start and posted, in the order first submitted, with the
    // same memory. Returns how many.
    std::size_t replay_held() noexcept;
    // Fails every held transfer with `code` (fast_io_fail_tmo or ctrl_loss_tmo
    // passed, or the controller closed). Returns how many.
    std::size_t fail_held(TransportErrc code, int sys_errno) noexcept;
    std::size_t held() const noexcept { return held_count_; }
    TransportErrc failure() const noexcept { return failure_; }
    std::string local_address() const;
    std::uint16_t crqsize() const { return crqsize_; }
    void mark_live() { state_ = QueueState::live; }
    // Deadline for requests submitted from now on (shutdown bounds its own).
    void set_request_timeout(std::chrono::milliseconds timeout) { config_.request_timeout = timeout; }
    // Memory registered by this controller (MemoryRecord::owner) is the only memory
    // transfers may use.
    void set_owner(const void* owner) { owner_ = owner != nullptr ? owner : &kUnowned; }
    // Before connect(): writes of at most `bytes` per command carry their data
    // in the capsule (a second SGE on the caller's buffer); 0: all keyed.
    void set_in_capsule_limit(std::uint32_t bytes) { in_capsule_limit_ = bytes; }

    // --- datapath (rdma_queue_datapath.cpp) ---
    // A caller's transfer (IoQueue::submit): handed back by take_completions().
    // In line: one test sends a namespace with metadata to its own path, so
    // that neither path asks the other's questions.
    SubmitResult submit(const NamespaceRef& ns, const Transfer& transfer, Post post) noexcept {
        return ns.format.metadata_bytes != 0
                   ? submit_with_metadata(ns, transfer, post, false, nullptr)
                   : submit_plain(ns, transfer, post);
    }
    // `internal`: a blocking caller's, taken by take_transfer(*transfer_index) instead.
    SubmitResult submit_transfer(const NamespaceRef& ns, const Transfer& transfer, bool internal,
                                 std::uint32_t* transfer_index, Post post = Post::now) noexcept;
    void commit() noexcept;
    std::size_t deferred() const noexcept { return deferred_count_; }
    // Finished transfers into `out`: those finished earlier, then what one
    // poll_cq() finishes. `failed`: how many of those did not succeed.
    std::size_t take_completions(std::span<Completion> out, std::size_t& failed) noexcept;
    // Takes up to kPollBatch completions off the CQ and handles them; returns how many.
    int poll_cq() noexcept;
    std::size_t pieces(const NamespaceRef& ns, const Transfer& transfer) const noexcept;
    // Internal transfers (blocking callers): finished yet? Then take its status.
    bool transfer_finished(std::uint32_t index) const noexcept;
    CompletionStatus take_transfer(std::uint32_t index) noexcept;

    // Low level; throws TransportError. Deadline::none: a command the target
    // holds until something happens (Asynchronous Event Request).
    enum class Deadline : std::uint8_t { request_timeout, none };
    std::uint16_t submit_command(const wire::Sqe& command,
                                 Deadline deadline = Deadline::request_timeout);
    bool slot_done(std::uint16_t slot) const noexcept;
    const Response& slot_response(std::uint16_t slot) const noexcept;
    void release_request(std::uint16_t slot) noexcept;

    // Idle waiting (off the busy path): arms the CQ's completion event, then
    // polls once more so nothing that arrived before arming is slept through.
    // True when there is nothing to hand back, so the caller may block on the
    // completion channel; false when completions are ready or the queue failed.
    bool arm_if_quiet() noexcept;
    // The earliest deadline of a request in flight (may be early, never late;
    // requests not yet stamped get theirs on the next poll).
    std::chrono::steady_clock::time_point earliest_deadline() const noexcept {
        return commands_outstanding() ? earliest_deadline_
                                      : std::chrono::steady_clock::time_point::max();
    }

    // Before memory is deregistered: every SEND built so far leaves the send
    // queue (its completion, or a signalled one after it, polled). An
    // unsignalled SEND that gathers in-capsule data is otherwise still in the
    // queue after its response came, and a retransmission of it would read the
    // memory. Off the data path; bounded by the queue's timeout, past which the
    // queue fails (QP to error and drain also retire everything).
    void retire_sends() noexcept;

    // Fails every outstanding request with `code` after QP → error and drain.
    void fail(TransportErrc code, int sys_errno, const char* why) noexcept;

    // Builds with invariants: scans the slots and records and aborts when a
    // counter kept by hand disagrees (queue_counts.hpp). Off the data path.
    void check_counters() const noexcept {
        if constexpr (NVMEOF_INVARIANTS) {
            check_counters_now();
        }
    }

    const CompletionStatus& last_error() const noexcept { return last_error_; }
    std::uint16_t qid() const noexcept { return config_.qid; }
    std::size_t capacity() const noexcept { return cids_.size(); }
    std::size_t free_slots() const noexcept { return cids_.available(); }
    // Command IDs in use by commands sent or to be sent (not those kept by a
    // finished or held transfer's record).
    std::size_t in_flight() const noexcept {
        return cids_.outstanding() - record_slots_idle_ + (setup_in_flight() ? 1 : 0);
    }
    bool failed() const noexcept { return state_ == QueueState::failed || state_ == QueueState::closed; }
    QueueState state() const noexcept { return state_; }
    // Open transfers that one more answer (or none) finishes.
    std::size_t transfers_near_completion() const noexcept {
        return open_transfers_ - transfers_awaiting_several_;
    }

    static constexpr std::uint32_t kNoTransfer = 0xFFFFFFFF;
    static constexpr int kRecvTagShift = 63;
    static constexpr std::uint64_t kRecvTag = std::uint64_t{1} << kRecvTagShift;  // wr_id of RECVs
    // wr_id of drain()'s markers (the RECV's with kRecvTag)
    static constexpr std::uint64_t kDrainMarker = std::uint64_t{1} << 62;
    // wr_id of retire_sends()' zero-length RDMA WRITEs
    static constexpr std::uint64_t kRetireMarker = kDrainMarker + 1;
    // A busy queue at depth 32 produces about 32 CQEs per round: one poll takes them all.
    static constexpr int kPollBatch = 64;
    // Busy polls between checks: at most kStampRing - kStampScanInterval reads
    // can pass between two, so no stamp in use is overwritten.
    static constexpr std::uint32_t kDeadlineCheckInterval = 256;
    static constexpr std::chrono::milliseconds kMaxDrainWait{5000};

private:
    enum SlotFlag : std::uint8_t {
        kInFlight = 1 << 0,  // sent, no response yet
        kDeadlineSet = 1 << 1,  // `deadline` holds the deadline of its stamp
        kNoDeadline = 1 << 2,  // answered when an event occurs (an AER)
        kLowLevel = 1 << 3,
        kHeld = 1 << 4,       // low-level request done, handle still alive
        kAbandoned = 1 << 5,  // low-level handle gone before completion
    };
    struct Slot {
        ibv_send_wr wr{};
        static constexpr std::uint32_t kMaxSges = 2;  // the SQE; then in-capsule write data
        ibv_sge sge[kMaxSges]{};
        // From stamp_deadlines_[stamp] once check_deadlines() saw it (kDeadlineSet).
        std::chrono::steady_clock::time_point deadline{};
        std::uint32_t stamp = 0;  // the clock read its deadline comes from (see the header)
        std::uint32_t transfer = kNoTransfer;
        // An in-capsule write's rkey: a replay after a reconnect whose
        // controller takes less in the capsule sends it keyed instead.
        std::uint32_t in_capsule_rkey = 0;
        std::uint8_t flags = 0;
        Response response;  // cqe and status; command only for low-level requests
    };
    // Where a transfer's next piece starts; advanced as pieces are built.
    struct PieceCursor {
        std::uint64_t slba = 0;
        std::uint64_t blocks_left = 0;  // not yet in a built piece
        std::uint64_t per_piece = 0;    // blocks per command
        std::uint64_t address = 0;      // read/write: next piece's data
        std::uint32_t rkey = 0;
        std::uint32_t lkey = 0;  // in-capsule write data: the SEND gathers from it
        std::uint32_t nsid = 0;
        std::uint32_t block_bytes = 0;  // per block in the buffer (data and metadata that travels)
        std::uint32_t unbuilt = 0;  // pieces still waiting for a slot
        // End-to-end protection (a namespace with PI): the next piece's tags,
        // the storage tag's part of the command's words worked out once.
        wire::CommandTagWords storage_words;
        std::uint64_t reftag = 0;
        std::uint64_t reftag_mask = 0;
        std::uint16_t apptag = 0;
        std::uint16_t apptag_mask = 0;
        std::uint8_t prinfo = 0;
        std::uint8_t reftag_step = 0;  // type 1 and 2 count the tag up with the blocks
        bool protected_blocks = false;
        Op op = Op::flush;
        bool as_built = false;  // a replay: the one command is still built in the record's slot
    };
    struct TransferRecord {
        std::uint64_t user_data = 0;
        std::uint64_t sequence = 0;       // submission order, for the replay
        GpuOrdering* gpu_read = nullptr;  // a read into GPU memory: flush before handing back
        CompletionStatus status;
        std::uint32_t pieces_left = 0;  // built or not, not yet completed; 0: finished
        Op op = Op::flush;
        bool internal = false;
        bool held = false;  // waiting for a reconnect to be replayed
        bool finished() const noexcept { return pieces_left == 0 && !held; }
    };

    // setup helpers
    void create_resources(ibv_pd* pd, ibv_comp_channel* completion_channel);
    void post_all_receives();
    void connect_cm(const ibv_device_attr& device);
    // The CM id bound and resolved to `peer` (constructor and reopen()).
    void resolve(const PeerAddress& peer);
    // Turns unfinished transfers into held ones instead of failing them.
    void hold_unfinished() noexcept;
    verbs::CmEvent expect_event(const char* step);

    // datapath helpers
    // The per-I/O helpers are named steps of one path, not calls: each is a few
    // stores, and the path's cost per I/O is what the instruction budget
    // (bench/instruction-budget.json) holds, so they are inlined where used.
    [[gnu::always_inline]] inline std::uint64_t blocks_per_piece(std::uint32_t block_bytes,
                                                                 Op op) const noexcept;
    // PRINFO and the first piece's tags of a transfer on a namespace with PI.
    static void set_protection_fields(PieceCursor& cursor, const NamespaceRef& ns,
                                      const Transfer& t) noexcept;
    // 0, or the errno refusing the transfer (range, memory handle, buffer bounds).
    [[gnu::always_inline]] inline int check_transfer(const NamespaceRef& ns, const Transfer& t,
                                                     const MemoryRecord* memory,
                                                     std::uint32_t block_bytes) const noexcept;
    // Both submit()s on a namespace without metadata: the common case in
    // line (see the header comment).
    [[gnu::always_inline]] inline SubmitResult submit_one(const NamespaceRef& ns, const Transfer& t,
                                                          bool internal, std::uint32_t* transfer_index,
                                                          Post post) noexcept;
    // submit() on a namespace without metadata.
    SubmitResult submit_plain(const NamespaceRef& ns, const Transfer& t, Post post) noexcept;
    // A namespace with metadata, which submit() and submit_transfer() send
    // here: the common case's one command, sized by the transfer's PRACT,
    // PRINFO and tags set in place (rdma_queue_protection.cpp); anything else
    // goes on to submit_general. (`post` third: submit() hands it on in the
    // register it came in.)
    [[gnu::noinline]] SubmitResult submit_with_metadata(const NamespaceRef& ns, const Transfer& t,
                                                        Post post, bool internal,
                                                        std::uint32_t* transfer_index) noexcept;
    // The common case's one command, the checks passed: a record in the
    // command's own slot (replayed as built), PRINFO and tags set in place on
    // a namespace with metadata (rdma_queue_command.hpp).
    template <bool kWithMetadata>
    [[gnu::always_inline]] inline SubmitResult submit_one_command(
        const NamespaceRef& ns, const Transfer& t, const MemoryRecord* memory, std::uint64_t bytes,
        bool internal, std::uint32_t* transfer_index, Post post) noexcept;
    // Everything but the common case (see the header comment), refusals
    // included. It takes the submission as it came: the common case hands
    // over what it did not take, having built nothing to throw away.
    [[gnu::noinline]] SubmitResult submit_general(const NamespaceRef& ns, const Transfer& t,
                                                  bool internal, std::uint32_t* transfer_index,
                                                  Post post) noexcept;
    [[gnu::noinline]] SubmitResult commit_queued() noexcept;
    // A submission to a queue that is not live: busy while it reconnects
    // (the caller holds the transfer), else failed with the queue's failure.
    [[gnu::cold, gnu::noinline]] SubmitResult refuse_not_live(Op op) noexcept;
    [[gnu::always_inline]] inline void start_record(std::uint32_t tid, const Transfer& t,
                                                    std::uint32_t pieces, bool internal) noexcept;
    // Changes a record's pieces_left, keeping transfers_awaiting_several_ true.
    // Three hot places do it by hand: the common path's record (from 0 or a
    // stale 1 to 1), start_record (from 0) and complete_piece (one less).
    void set_pieces_left(TransferRecord& record, std::uint32_t pieces) noexcept {
        NVMEOF_INVARIANT(record.pieces_left < 2 || transfers_awaiting_several_ > 0,
                         "a record awaiting several pieces is counted");
        transfers_awaiting_several_ -= record.pieces_left >= 2 ? 1 : 0;
        transfers_awaiting_several_ += pieces >= 2 ? 1 : 0;
        record.pieces_left = pieces;
    }
    // A read or write command's SQE and data SGEs (in place, every field
    // written), with its PRINFO and tag words (none: all zero).
    [[gnu::always_inline]] inline void fill_data_command(
        Slot& slot, wire::Sqe& sqe, std::uint16_t cid, Op op, std::uint32_t nsid,
        std::uint64_t slba, std::uint64_t blocks, std::uint64_t address, std::uint32_t bytes,
        std::uint32_t rkey, std::uint32_t lkey,
        const CommandProtection& protection = {}) const noexcept;
    // Flush, write zeroes or deallocate (a range in the slot's DSM buffer).
    void fill_dataless_command(Slot& slot, wire::Sqe& sqe, std::uint16_t cid, Op op,
                               std::uint32_t nsid, std::uint64_t slba, std::uint64_t blocks) noexcept;
    // Chains SENDs first..last (linked already) behind those deferred.
    [[gnu::always_inline]] inline void defer(ibv_send_wr& first, ibv_send_wr& last,
                                             std::uint32_t count) noexcept;
    bool in_record_slot(std::uint32_t tid) const noexcept { return tid < slot_count_; }
    [[gnu::always_inline]] inline void release_record(std::uint32_t tid) noexcept;
    // Copies finished transfers out and frees their IDs.
    [[gnu::noinline]] std::size_t hand_back(std::span<Completion> out, std::size_t& failed) noexcept;
    // One pass over a polled batch; the receives of its responses go back up in one post.
    void handle_completion(const ibv_wc* wc, int n) noexcept;
    // False when the queue failed (the caller stops handling the batch).
    [[gnu::always_inline]] inline bool handle_response(std::uint32_t index,
                                                       std::uint32_t byte_len) noexcept;
    bool handle_send_completion(const ibv_wc& wc) noexcept;
    [[gnu::always_inline]] inline void complete_slot(std::uint16_t cid,
                                                     const CompletionStatus& status) noexcept;
    // A transfer's piece answered with success.
    [[gnu::always_inline]] inline void complete_piece(std::uint16_t cid, Slot& slot) noexcept;
    // A one-command transfer answered with success.
    [[gnu::always_inline]] inline void complete_one_command(std::uint16_t cid, Slot& slot) noexcept;
    // Send queue entries taken by SENDs built since connect and not yet
    // retired by a signalled completion (posted or still deferred).
    std::uint32_t sends_in_queue() const noexcept { return send_position_ - sends_retired_; }
    std::uint32_t send_room() const noexcept { return send_queue_capacity_ - sends_in_queue(); }
    // The slot's SEND is the next one built: signalled if it ends a signalling
    // interval; its deadline is set on the next poll.
    [[gnu::always_inline]] inline void prepare_send(Slot& slot, bool with_deadline = true) noexcept;
    // The deadline of every request built since the last clock read.
    void take_stamp(std::chrono::steady_clock::time_point now) noexcept;
    [[gnu::always_inline]] inline void finish_transfer(std::uint32_t index) noexcept;
    // Builds the next `count` pieces of transfer `tid` from `next` into free
    // slots, appended to the deferred chain.
    void build_pieces(std::uint32_t tid, PieceCursor& next, std::size_t count) noexcept;
    // Builds waiting pieces, oldest transfer first, into the free slots.
    void build_waiting() noexcept;
    void fail_waiting(const CompletionStatus& status) noexcept;
    // GPU memory ordering (GpuOrdering): off the host-memory path.
    void flush_gpu_reads(std::size_t count) noexcept;
    static void gpu_read_failed(CompletionStatus& status, int result) noexcept;
    void check_deadlines(std::chrono::steady_clock::time_point now) noexcept;
    void check_counters_now() const noexcept;  // rdma_queue_invariants.cpp
    void drain() noexcept;
    [[gnu::cold, gnu::noinline]] SubmitResult refuse(SubmitResult result, TransportErrc code,
                                                     int sys_errno, Op op) noexcept;
    // Always `queued`: a failed post fails the queue, and the transfers with it.
    [[gnu::always_inline]] inline SubmitResult post_chain(ibv_send_wr* head) noexcept;

    QueueConfig config_;
    // Never null: no memory record (whose host_owner is null when closed or
    // GPU memory) matches a queue no controller has claimed.
    static constexpr char kUnowned = 0;
    const void* owner_ = &kUnowned;
    QueueState state_ = QueueState::resolving;
    verbs::EventChannel channel_;
    verbs::CompletionQueue cq_;  // declared before id_: the QP (owned by id_) goes first
    verbs::CmId id_;
    ibv_qp* qp_ = nullptr;  // id_.qp() once created; the datapath posts here
    std::unique_ptr<wire::Sqe[]> commands_;
    std::unique_ptr<wire::Cqe[]> responses_;
    verbs::MemoryRegion commands_mr_;
    verbs::MemoryRegion responses_mr_;
    std::unique_ptr<wire::DsmRange[]> dsm_ranges_;  // one per slot, for deallocate
    verbs::MemoryRegion dsm_mr_;

    std::vector<Slot> slots_;  // the pool's, then the set-up slot (see create_resources)
    std::uint32_t slot_count_ = 0;  // slots_.size(), without a division by sizeof(Slot)
    std::uint16_t setup_slot() const noexcept { return static_cast<std::uint16_t>(slot_count_ - 1); }
    bool setup_in_flight() const noexcept {
        return slot_count_ != 0 && (slots_[setup_slot()].flags & kInFlight) != 0;
    }
    // Any command ID in use, or the set-up slot's command in flight.
    bool commands_outstanding() const noexcept { return cids_.outstanding() > 0 || setup_in_flight(); }
    // A low-level request's slot back to where it came from.
    void free_command_slot(std::uint16_t cid) noexcept;
    std::vector<ibv_recv_wr> recv_wrs_;
    std::uint32_t receive_count_ = 0;  // recv_wrs_.size()
    std::vector<ibv_sge> recv_sges_;
    CidPool cids_;  // command IDs = slots
    CidPool general_records_;  // transfer IDs slot_count_ + i of the general path
    std::vector<TransferRecord> transfers_;  // by transfer ID: slot_count_ + capacity()
    // Common-path records whose slot is not in flight (answered, or held).
    std::uint32_t record_slots_idle_ = 0;
    // Transfers submitted and not yet handed back; at most capacity() (else busy).
    std::uint32_t open_transfers_ = 0;
    // Of those, the ones whose pieces_left is 2 or more (set_pieces_left keeps it).
    std::uint32_t transfers_awaiting_several_ = 0;
    // While take_completions() polls: where finished transfers go straight to its caller.
    Completion* sink_ = nullptr;
    Completion* sink_end_ = nullptr;
    std::size_t sunk_failed_ = 0;  // of those, how many did not succeed
    std::vector<std::uint32_t> finished_;  // ring of finished external transfers
    std::size_t ring_mask_ = 0;  // finished_ and waiting_ hold a power of two entries (≥ records)
    std::size_t finished_head_ = 0;
    std::size_t finished_count_ = 0;
    std::size_t gpu_reads_finished_ = 0;  // in the finished ring, not yet flushed
    std::vector<std::uint32_t> waiting_;  // FIFO of transfers with pieces not yet built
    std::vector<PieceCursor> waiting_next_;  // by transfer index: where its rest starts
    // By transfer index: a general-path transfer's start, for a replay (a
    // common-path one is re-sent as built).
    std::vector<PieceCursor> origin_;
    std::vector<std::uint32_t> replay_order_;  // scratch of replay_held(), sized once
    std::uint64_t next_sequence_ = 0;
    std::size_t held_count_ = 0;
    OutagePolicy outage_ = OutagePolicy::fail;
    std::size_t waiting_head_ = 0;
    std::size_t waiting_count_ = 0;

    ibv_send_wr* deferred_head_ = nullptr;  // built, not yet posted (Post::deferred)
    ibv_send_wr* deferred_tail_ = nullptr;
    std::uint32_t deferred_count_ = 0;
    std::uint32_t busy_polls_since_deadline_check_ = 0;
    // Send queue accounting (see the header comment); counters wrap harmlessly.
    std::uint32_t send_position_ = 0;        // SENDs built since connect
    std::uint32_t sends_retired_ = 0;        // of those, retired by a signalled completion
    std::uint32_t send_queue_capacity_ = 0;  // the QP's SQ less the drain marker's entry
    std::uint32_t receives_outstanding_ = 0;  // posted, not yet taken off the CQ (drain())
    // The batch handle_completion() is handling: its receives, taken off the
    // CQ, still count in receives_outstanding_ until it ends.
    const ibv_wc* batch_ = nullptr;
    int batch_size_ = 0;
    // A batch not handled whole: its receives leave receives_outstanding_.
    void batch_receives_taken_off() noexcept;
    std::uint64_t max_transfer_bytes_ = 0;
    // Deadlines by stamp (the header comment): a ring of the latest clock reads'.
    static constexpr std::uint32_t kStampRing = 1024;  // a power of two
    static constexpr std::uint32_t kStampScanInterval = 256;
    std::unique_ptr<std::chrono::steady_clock::time_point[]> stamp_deadlines_;
    std::uint32_t stamps_taken_ = 0;    // clock reads so far (wraps harmlessly)
    std::uint32_t stamped_position_ = 0;  // send_position_ at the last one
    std::uint32_t stamps_at_scan_ = 0;  // stamps_taken_ when check_deadlines() last saw every slot
    std::uint32_t in_capsule_limit_ = 0;
    std::chrono::steady_clock::time_point earliest_deadline_ = std::chrono::steady_clock::time_point::max();
    std::uint16_t crqsize_ = 0;
    CompletionStatus last_error_;
    QueueFailureListener* failure_listener_ = nullptr;
    TransportErrc failure_ = TransportErrc::none;
    int failure_errno_ = 0;
};

}  // namespace nvmeof::detail
