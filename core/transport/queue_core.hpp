// QueueCore: what one NVMe-oF queue keeps whatever carries its capsules
// (internal; no transport type here). A transport's queue (RdmaQueue,
// rdma_queue.hpp) derives from it and is its backend: it implements the
// transport operations below and hands every response to the core.
//
// Two IDs, each with one name:
//   command ID (cid)   the NVMe CID of a command: an index into the command
//                      states (command_at) and into the backend's send
//                      structures. IDs below capacity() come from a pool
//                      (cids_); the one after them is the set-up command's
//                      (Fabrics Connect, authentication), outside the pool.
//   transfer ID (tid)  a caller's transfer: an index into the transfer
//                      records (transfer_at). On the common path (a read or
//                      write in one command) it is its command's cid, taken
//                      once for both and held until the transfer is handed
//                      back; on the general path it is capacity() + 1 + i,
//                      from a pool of its own (general_tids_), and each piece
//                      takes a cid of the pool, freed at its response.
//
// What the core keeps: the ID pools, the transfer records, each command's
// state and deadline (the stamp ring), the split of a transfer at MDTS (its
// PieceCursor) and the FIFO of transfers waiting for cids, the finished ring
// and the hand-back into the caller's array, transfers held through a
// reconnect and their replay, and the counters kept by hand with their
// invariants (queue_counts.hpp). The per-I/O steps are in
// queue_core_datapath.hpp, failure, outages and deadlines in
// queue_core_recovery.hpp, the rest in queue_core.cpp.
//
// The transport operations (QueueBackend below), called by the core's
// function templates with the backend as their first argument, so that each
// is a direct call the compiler inlines (no virtual call per I/O):
//   send_room()         commands the transport can take now
//   deferred()          commands built and not yet posted
//   commands_built()    commands built since connect, a count that wraps (a
//                       poll reads the clock for deadlines when it moved)
//   sqe(cid)            the SQE of command cid, in the transport's buffer
//   set_data(cid, sqe, address, bytes, rkey, lkey)
//                       a read's, write's or compare's data pointer (the
//                       rest of its SQE is filled by fill_data_command)
//   set_no_data(cid)    a command (a caller's low-level one) goes alone
//   build_dataless(cid, op, nsid, slba, blocks)
//                       flush, write zeroes or deallocate, the whole SQE
//   rebuild_as_built(cid)
//                       a replayed one-command transfer, still built in its
//                       command's buffers: made fit for the reconnected
//                       controller
//   send(cid, post)     the common path's one command (or a low-level one):
//                       posted now or deferred
//   defer(cid)          a general-path piece: after the commands deferred
//   commit()            posts what is deferred
//   poll_cq()           takes completions and feeds responses to
//                       complete_response(); returns how many
//   fail(code, errno, why)
//                       stops the transport (no memory touched after it
//                       returns), then fail_outstanding()
//
// Deadlines read no clock and keep no list per request: a command records
// the number of the next clock read (its stamp), and the next poll that
// finds commands built since its last read reads the clock once and keeps
// now + request_timeout in a ring of stamp deadlines. The clock is read after
// the submission, so a deadline is never early; it is late by the time
// between the submission and the caller's next poll (no request can complete
// without one anyway). Until that read, a command has no deadline.
// check_deadlines() copies a command's deadline from the ring into its state
// the first time it sees it, and sees every command at least every
// kStampScanInterval reads, long before the ring (kStampRing) wraps.
//
// A transfer with more pieces than there are free cids (or than the queue has
// at all) is queued in parts: the pieces that fit go out at once, the rest
// wait in a FIFO of transfers (one entry per transfer record) and go out in
// order as polling frees cids. A held common-path transfer (reconnecting)
// keeps its cid and SQE and is re-sent as built, so the common path records
// nothing for a replay; a general-path one is built again from its start
// (origin_).
//
// Zoned namespaces (NamespaceRef::ordered_writes): a split write goes one
// piece at a time, as a zone takes writes at its write pointer only; each
// next piece joins the FIFO when the one before it is answered, and a replay
// starts at the first piece not answered. Those pieces and Zone Appends are
// marked (PieceKind::ordered, append): their command names no transfer
// (marked_tids_ does), so that their answers take the out-of-line path of
// errors and low-level commands (complete_with_status), and the answers of
// every other piece test nothing more. A Zone Append keeps its CQE's DW0/DW1
// (append_lbas_), is never split, and fails back rather than being held.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/command_fields.hpp"
#include "transport/connect_deadline.hpp"
#include "transport/id_pool.hpp"
#include "transport/invariant.hpp"
#include "transport/queue_impl.hpp"

namespace nvmeof {
class GpuOrdering;
struct MemoryRecord;
}  // namespace nvmeof

namespace nvmeof::detail {

class HostStaging;

struct QueueConfig {
    std::uint16_t qid = 0;
    std::uint16_t size = 0;    // entries; size − 1 usable command IDs
    std::uint16_t cntlid = 0;  // for the transport's connect of I/O queues
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
// A transfer whose own command timed out is re-sent once: if a command of it
// times out again after the replay, it fails (ETIMEDOUT) instead of being
// held again. A target that answers the reconnect but never that command in
// time would otherwise keep it in outages forever (each reconnect ends its
// outage, so ctrl_loss_tmo never passes); the kernel bounds a request's
// retries too (nvme_max_retries).
enum class OutagePolicy : std::uint8_t {
    fail,       // no reconnect: a failure fails every transfer back
    hold,       // a failure keeps every unfinished transfer for replay_held();
                // submissions while down are refused busy
    fail_fast,  // reconnecting past fast_io_fail_tmo: submissions fail (ENOLINK)
    lost,       // the controller gave up: submissions fail (ENODEV)
};

// How a transfer's pieces are built and sent.
enum class PieceKind : std::uint8_t {
    plain,     // together, as IDs and send room allow
    as_built,  // a replay: the one command is still built at its cid
    // Marked pieces (build_marked_piece), one at a time:
    ordered,  // a split write on a zoned namespace, each once the one before it is answered
    append,   // a Zone Append, whose answer's DW0/DW1 is kept
};

// Where a transfer's next piece starts; advanced as pieces are built.
struct PieceCursor {
    std::uint64_t slba = 0;
    std::uint64_t blocks_left = 0;  // not yet in a built piece
    std::uint64_t per_piece = 0;    // blocks per command
    std::uint64_t address = 0;      // read/write: next piece's data
    std::uint32_t rkey = 0;
    std::uint32_t lkey = 0;  // in-capsule write data: the transport gathers from it
    std::uint32_t nsid = 0;
    std::uint32_t block_bytes = 0;  // per block in the buffer (data and metadata that travels)
    std::uint32_t unbuilt = 0;      // pieces still waiting for a cid
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
    PieceKind kind = PieceKind::plain;
};

// (clang-format mangles the requires-expression)
// clang-format off
template <class B>
concept QueueBackend = requires(B& backend, const B& view, std::uint16_t cid, wire::Sqe& sqe,
                                std::uint64_t u64, std::uint32_t u32, Op op, Post post,
                                TransportErrc code, int sys_errno, const char* why) {
    { view.send_room() } noexcept -> std::same_as<std::uint32_t>;
    { view.deferred() } noexcept -> std::same_as<std::size_t>;
    { view.commands_built() } noexcept -> std::same_as<std::uint32_t>;
    { backend.sqe(cid) } noexcept -> std::same_as<wire::Sqe&>;
    { backend.set_data(cid, sqe, u64, u32, u32, u32) } noexcept;
    { backend.set_no_data(cid) } noexcept;
    { backend.build_dataless(cid, op, u32, u64, u64) } noexcept;
    { backend.rebuild_as_built(cid) } noexcept;
    { backend.send(cid, post) } noexcept -> std::same_as<SubmitResult>;
    { backend.defer(cid) } noexcept;
    { backend.commit() } noexcept;
    { backend.poll_cq() } noexcept -> std::same_as<int>;
    { backend.fail(code, sys_errno, why) } noexcept;
};
// clang-format on

// A QueueImpl: what the public handles point to (queue_impl.hpp).
class QueueCore : public QueueImpl {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::uint32_t kNoTransfer = 0xFFFFFFFF;
    // Busy polls between deadline checks: at most kStampRing -
    // kStampScanInterval reads can pass between two, so no stamp in use is
    // overwritten.
    static constexpr std::uint32_t kDeadlineCheckInterval = 256;
    // Low level: Deadline::none for a command the target holds until
    // something happens (Asynchronous Event Request).
    enum class Deadline : std::uint8_t { request_timeout, none };

    QueueCore(const QueueCore&) = delete;
    QueueCore& operator=(const QueueCore&) = delete;

    // --- state ---
    QueueState state() const noexcept { return state_; }
    bool failed() const noexcept {
        return state_ == QueueState::failed || state_ == QueueState::closed;
    }
    TransportErrc failure() const noexcept { return failure_; }
    const CompletionStatus& last_error() const noexcept { return last_error_; }
    void mark_live() { state_ = QueueState::live; }
    void set_outage_policy(OutagePolicy policy) noexcept;
    // Deadline for requests submitted from now on (shutdown bounds its own).
    void set_request_timeout(std::chrono::milliseconds timeout) {
        config_.request_timeout = timeout;
    }
    // Memory registered by this controller (MemoryRecord::owner) is the only
    // memory transfers may use.
    void set_owner(const void* owner) { owner_ = owner != nullptr ? owner : &kUnowned; }
    std::uint16_t qid() const noexcept { return config_.qid; }

    // --- counts ---
    std::size_t capacity() const noexcept { return cids_.size(); }
    std::size_t free_cids() const noexcept { return cids_.available(); }
    // Command IDs in use by commands sent or to be sent (not those kept by a
    // finished or held common-path transfer).
    std::size_t in_flight() const noexcept {
        return cids_.outstanding() - kept_cids_ + (setup_in_flight() ? 1 : 0);
    }
    // Open transfers that one more answer (or none) finishes.
    std::size_t transfers_near_completion() const noexcept {
        return open_transfers_ - transfers_awaiting_several_;
    }
    std::size_t held() const noexcept { return held_count_; }
    // Finished transfers waiting to be handed back (take_completions() gives
    // them without polling the transport).
    std::size_t finished() const noexcept { return finished_count_; }
    // The earliest deadline of a command in flight (may be early, never late;
    // commands not yet stamped get theirs on the next poll).
    Clock::time_point earliest_deadline() const noexcept {
        return commands_outstanding() ? earliest_deadline_ : Clock::time_point::max();
    }
    // How many commands a transfer is split into (0 for an empty one).
    std::size_t pieces(const NamespaceRef& ns, const Transfer& transfer) const noexcept;

    // --- what owners take back outside polling (queue_core.cpp) ---
    // Internal transfers (blocking callers): finished yet? Then take its status
    // (and a Zone Append's LBA into `append_lba`).
    bool transfer_finished(std::uint32_t tid) const noexcept;
    CompletionStatus take_transfer(std::uint32_t tid, std::uint64_t* append_lba = nullptr) noexcept;
    // A low-level request (IoQueue::submit(Sqe)), by its cid.
    bool request_done(std::uint16_t cid) const noexcept;
    const Response& request_response(std::uint16_t cid) const noexcept;
    void release_request(std::uint16_t cid) noexcept;

    // Fails every held transfer with `code` (fast_io_fail_tmo or ctrl_loss_tmo
    // passed, or the controller closed). Returns how many.
    std::size_t fail_held(TransportErrc code, int sys_errno) noexcept;

    // Builds with invariants: scans the commands and records and aborts when
    // a counter kept by hand disagrees (queue_counts.hpp). Off the data path.
    void check_counters() const noexcept {
        if constexpr (NVMEOF_INVARIANTS) {
            check_counters_now();
        }
    }

  protected:
    explicit QueueCore(const QueueConfig& config) : config_(config) {}
    ~QueueCore() = default;

    // --- for the backend: setup ---
    // Sizes the pools, records and rings once, at the first connect, for
    // `capacity` command IDs (the set-up command's cid comes after them).
    void size_for(std::uint16_t capacity);
    bool sized() const noexcept { return command_count_ != 0; }
    // A reconnect: the queue resolves again; held transfers, requests still
    // owned by Request handles and the transfer records stay. The backend's
    // commands_built() starts again from 0 with its new connection.
    void reset_for_reopen() noexcept;

    // --- for the backend: the per-I/O path (queue_core_datapath.hpp) ---
    // `tid` null: a caller's transfer, handed back by take_completions();
    // else a blocking caller's (internal), its transfer ID written there and
    // taken by take_transfer().
    template <QueueBackend B>
    [[gnu::always_inline]] inline SubmitResult submit_one(B& backend, const NamespaceRef& ns,
                                                          const Transfer& t, std::uint32_t* tid,
                                                          Post post) noexcept;
    template <QueueBackend B>
    [[gnu::always_inline]] inline SubmitResult submit_with_metadata(B& backend,
                                                                    const NamespaceRef& ns,
                                                                    const Transfer& t, Post post,
                                                                    std::uint32_t* tid) noexcept;
    // Everything but the common case, refusals included. It takes the
    // submission as it came: the common case hands over what it did not
    // take, having built nothing to throw away.
    template <QueueBackend B>
    [[gnu::noinline]] SubmitResult submit_general(B& backend, const NamespaceRef& ns,
                                                  const Transfer& t, std::uint32_t* tid,
                                                  Post post) noexcept;
    // How submit_general cut a checked transfer.
    struct PieceCount {
        std::uint32_t block_bytes = 0;  // per block in the buffer
        std::uint64_t per_piece = 0;    // blocks per command
        std::size_t count = 0;          // commands
    };
    // submit_general's for a Zone Append or any transfer of a zoned namespace.
    template <QueueBackend B>
    [[gnu::noinline]] SubmitResult submit_zoned(B& backend, const NamespaceRef& ns,
                                                const Transfer& t, std::uint32_t* tid,
                                                Post post) noexcept;
    // Both: checked, cut, and (kZoned) the kind of its pieces chosen, a Zone
    // Append that would split refused.
    template <bool kZoned, QueueBackend B>
    [[gnu::always_inline]] inline SubmitResult submit_checked(B& backend, const NamespaceRef& ns,
                                                              const Transfer& t, std::uint32_t* tid,
                                                              Post post) noexcept;
    // The record, the cursor and the pieces of a checked transfer (both
    // submits inline it, submit_general with PieceKind::plain alone).
    template <QueueBackend B>
    [[gnu::always_inline]] inline SubmitResult submit_pieces(B& backend, const NamespaceRef& ns,
                                                             const Transfer& t, std::uint32_t* tid,
                                                             Post post, const PieceCount& split,
                                                             PieceKind kind) noexcept;
    template <QueueBackend B>
    std::uint16_t submit_command(B& backend, const wire::Sqe& command, Deadline deadline);
    // Finished transfers into `out`: those finished earlier, then what one
    // backend.poll_cq() finishes.
    template <QueueBackend B>
    [[gnu::always_inline]] inline std::size_t take_completions(B& backend,
                                                               std::span<Completion> out,
                                                               std::size_t& failed) noexcept;
    // A response the transport received. False when the queue failed (the
    // backend stops handling its batch).
    template <QueueBackend B>
    [[gnu::always_inline]] inline bool complete_response(B& backend, const wire::Cqe& cqe) noexcept;
    // The clock read of a poll, if commands were built since the last one
    // (their deadlines); otherwise no read (a zero time point).
    template <QueueBackend B>
    Clock::time_point stamp_if_due(const B& backend) noexcept {
        const std::uint32_t built = backend.commands_built();
        if (built == stamped_built_) {
            return Clock::time_point{};
        }
        const Clock::time_point now = Clock::now();
        take_stamp(now, built);
        return now;
    }
    // After a poll that took `n` completions: waiting pieces go out, and
    // deadlines are checked now and then (`now`: the poll's clock read, if any).
    template <QueueBackend B>
    [[gnu::always_inline]] inline void after_poll(B& backend, int n,
                                                  Clock::time_point now) noexcept;
    bool has_finished() const noexcept { return finished_count_ != 0; }

    // --- for the backend: failure and outages (queue_core_recovery.hpp) ---
    // The queue enters `failed`; returns the state it was in (the backend
    // stops its transport if it was connected, then fail_outstanding()).
    QueueState enter_failed(TransportErrc code, int sys_errno) noexcept {
        const QueueState previous = state_;
        state_ = QueueState::failed;
        failure_ = code;
        failure_errno_ = sys_errno;
        return previous;
    }
    // Holds (OutagePolicy::hold) or fails every unfinished transfer, and
    // fails every command in flight. True when the failure is one to report
    // (not an orderly close).
    template <QueueBackend B>
    bool fail_outstanding(B& backend, TransportErrc code, int sys_errno, const char* why) noexcept;
    // After a reconnect (the queue live again): every held transfer is built
    // again from its start and posted, in the order first submitted, with the
    // same memory. Returns how many.
    template <QueueBackend B>
    std::size_t replay_held(B& backend) noexcept;
    template <QueueBackend B>
    void check_deadlines(B& backend, Clock::time_point now) noexcept;
    // A command of transfer `tid` (kNoTransfer: a low-level request) got no
    // answer in time: true when that transfer had timed out before, was held
    // and re-sent (it fails now); else remembered, when transfers are held.
    bool timed_out_again(std::uint32_t tid) noexcept;

    QueueConfig config_;
    QueueState state_ = QueueState::resolving;
    TransportErrc failure_ = TransportErrc::none;
    int failure_errno_ = 0;
    std::uint64_t max_transfer_bytes_ = 0;

  private:
    enum CommandFlag : std::uint8_t {
        kInFlight = 1 << 0,     // sent, no response yet
        kDeadlineSet = 1 << 1,  // `deadline` holds the deadline of its stamp
        kNoDeadline = 1 << 2,   // answered when an event occurs (an AER)
        kLowLevel = 1 << 3,
        kAnswered = 1 << 4,   // low-level request done, handle still alive
        kAbandoned = 1 << 5,  // low-level handle gone before completion
        // A piece of an ordered transfer (NamespaceRef::ordered_writes): its
        // answer sends the next piece (ordered_piece_answered).
        kOrderedPiece = 1 << 6,
        // A Zone Append: its CQE's DW0/DW1 go to append_lbas_[tid].
        kKeepsResult = 1 << 7,
        // Either, a marked piece: its transfer is marked_tids_[cid] and its
        // tid kNoTransfer, so that its answer takes complete_response's status
        // path (that of errors and low-level commands) to
        // complete_marked_piece, and the paths of every other piece test
        // nothing more.
        kMarkedPiece = kOrderedPiece | kKeepsResult,
    };
    // A command's state, by cid.
    struct CommandState {
        // From stamp_deadlines_[stamp] once check_deadlines() saw it (kDeadlineSet).
        Clock::time_point deadline{};
        std::uint32_t stamp = 0;  // the clock read its deadline comes from
        std::uint8_t flags = 0;   // (apart from tid: two plain stores, not one vector's)
        std::uint32_t tid = kNoTransfer;
    };
    // A read into GPU memory through its host copy (HostStaging): the range of
    // the copy to move into the region before the read is handed back.
    struct StagedRead {
        HostStaging* staging = nullptr;
        std::uint64_t address = 0;  // in the copy
        std::size_t bytes = 0;
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

    // complete_response() past a success: an error status, a low-level
    // request's answer, a marked piece's (out of line: the hot path keeps its
    // registers).
    template <QueueBackend B>
    [[gnu::noinline]] bool complete_with_status(B& backend, const wire::Cqe& cqe) noexcept;
    // The per-I/O helpers are named steps of one path, not calls: each is a
    // few stores, and the path's cost per I/O is what the instruction budget
    // (bench/instruction-budget.json) holds, so they are inlined where used.
    [[gnu::always_inline]] inline std::uint64_t blocks_per_piece(std::uint32_t block_bytes,
                                                                 Op op) const noexcept;
    // 0, or the errno refusing the transfer (range, memory handle, buffer bounds).
    [[gnu::always_inline]] inline int check_transfer(const NamespaceRef& ns, const Transfer& t,
                                                     const MemoryRecord* memory,
                                                     std::uint32_t block_bytes) const noexcept;
    // The common path's test, both submits': one command of `bytes` (the
    // blocks as they travel) of host memory this queue's controller
    // registered, inside the namespace and the region, with a cid and room in
    // the transport free and nothing waiting before it. check_transfer()'s
    // rules, cheaper for one command: at most kMaxBlocksPerCommand blocks, so
    // no shift overflows; host_owner is set only while host memory is
    // registered, and owner_ is never null.
    template <QueueBackend B>
    [[gnu::always_inline]] inline bool fits_one_command(B& backend, const NamespaceRef& ns,
                                                        const Transfer& t,
                                                        const MemoryRecord* memory,
                                                        std::uint64_t bytes) const noexcept;
    // PRINFO and the first piece's tags of a transfer on a namespace with PI.
    static void set_protection_fields(PieceCursor& cursor, const NamespaceRef& ns,
                                      const Transfer& t) noexcept;
    // The common case's one command, the checks passed: a record at the
    // command's own cid (replayed as built), PRINFO and tags set in place on
    // a namespace with metadata.
    template <bool kWithMetadata, QueueBackend B>
    [[gnu::always_inline]] inline SubmitResult submit_one_command(
        B& backend, const NamespaceRef& ns, const Transfer& t, const MemoryRecord* memory,
        std::uint64_t bytes, std::uint32_t* tid, Post post) noexcept;
    // A submission to a queue that is not live: busy while it reconnects
    // (the caller holds the transfer), else failed with the queue's failure.
    [[gnu::cold, gnu::noinline]] SubmitResult refuse_not_live(Op op) noexcept;
    [[gnu::cold, gnu::noinline]] SubmitResult refuse(SubmitResult result, TransportErrc code,
                                                     int sys_errno, Op op) noexcept;
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
    // Command cid is built for transfer `tid` (kNoTransfer: a low-level
    // request) and goes out next: in flight, its deadline from the next
    // clock read unless it has none.
    [[gnu::always_inline]] inline void start_command(std::uint16_t cid, std::uint32_t tid,
                                                     std::uint8_t flags,
                                                     bool with_deadline = true) noexcept {
        CommandState& command = command_at(cid);
        command.flags = with_deadline ? flags : static_cast<std::uint8_t>(flags | kNoDeadline);
        command.tid = tid;
        command.stamp = stamps_taken_;
    }
    // A common-path transfer: its tid is its command's cid.
    bool tid_is_cid(std::uint32_t tid) const noexcept { return tid < command_count_; }
    [[gnu::always_inline]] inline void release_transfer(std::uint32_t tid) noexcept;
    // Copies finished transfers out and frees their IDs (queue_core.cpp).
    [[gnu::noinline]] std::size_t hand_back(std::span<Completion> out,
                                            std::size_t& failed) noexcept;
    [[gnu::always_inline]] inline void complete_command(std::uint16_t cid,
                                                        const CompletionStatus& status) noexcept;
    // A transfer's piece answered with success.
    [[gnu::always_inline]] inline void complete_piece(std::uint16_t cid,
                                                      CommandState& command) noexcept;
    // A one-command transfer answered with success.
    [[gnu::always_inline]] inline void complete_one_command(std::uint16_t cid,
                                                            CommandState& command) noexcept;
    // A marked piece answered, or failed back (`result`: the CQE's DW0/DW1):
    // a Zone Append keeps it and finishes with it handed to the caller
    // polling; an ordered piece goes on to ordered_piece_answered.
    [[gnu::noinline]] void complete_marked_piece(std::uint16_t cid, const CompletionStatus& status,
                                                 std::uint64_t result) noexcept;
    // An ordered transfer's piece answered: the next one waits for an ID (in
    // the FIFO), or, after an error, the rest is dropped and it finishes.
    void ordered_piece_answered(std::uint32_t tid) noexcept;
    [[gnu::always_inline]] inline void finish_transfer(std::uint32_t tid) noexcept;
    // The deadline of every command built since the last clock read.
    void take_stamp(Clock::time_point now, std::uint32_t built) noexcept;
    // Builds the next `count` pieces of transfer `tid` from `next` at free
    // cids, deferred in the backend.
    template <QueueBackend B>
    void build_pieces(B& backend, std::uint32_t tid, PieceCursor& next, std::size_t count) noexcept;
    // An ordered transfer's next piece, or a Zone Append: one piece built, its
    // command marked (kOrderedPiece, kKeepsResult), its transfer kept in
    // marked_tids_ (a free cid and send room known to be there).
    template <QueueBackend B>
    [[gnu::noinline]] void build_marked_piece(B& backend, std::uint32_t tid,
                                              PieceCursor& c) noexcept;
    // Builds waiting pieces, oldest transfer first, at the free cids.
    template <QueueBackend B>
    void build_waiting(B& backend) noexcept;
    void enqueue_waiting(std::uint32_t tid) noexcept {
        NVMEOF_INVARIANT(waiting_count_ <= ring_mask_, "the waiting ring overflows");
        waiting_[(waiting_head_ + waiting_count_) & ring_mask_] = tid;
        ++waiting_count_;
    }
    void fail_waiting(const CompletionStatus& status) noexcept;
    // Turns unfinished transfers into held ones instead of failing them.
    void hold_unfinished() noexcept;
    // GPU memory ordering (GpuOrdering): off the host-memory path.
    // A transfer of GPU memory, before it takes a record: the GPU's writes
    // complete before a write leaves (GpuOrdering::before_write); over a host
    // copy, `address` moved into it and a write's bytes copied there; a read's
    // ordering and staged copy to set. False: the driver failed (said in a line).
    [[gnu::noinline]] bool prepare_gpu_transfer(const MemoryRecord& memory, const Transfer& t,
                                                std::size_t bytes, std::uint64_t& address,
                                                GpuOrdering*& gpu_read,
                                                StagedRead& staged_read) noexcept;
    void flush_gpu_reads(std::size_t count) noexcept;
    // A finished read into GPU memory, made visible to its owner: copied from
    // the host copy (a staged read, where it succeeded), else by `flushed`'s
    // after_read (once per ordering: `*last`). 0 or the driver's error code.
    int finish_gpu_read(std::uint32_t tid, GpuOrdering*& last, int& flushed) noexcept;
    static void gpu_read_failed(CompletionStatus& status, int result, bool staged) noexcept;
    void check_counters_now() const noexcept;

    std::uint16_t setup_cid() const noexcept {
        return static_cast<std::uint16_t>(command_count_ - 1);
    }
    bool setup_in_flight() const noexcept {
        return command_count_ != 0 && (command_at(setup_cid()).flags & kInFlight) != 0;
    }
    // Any command ID in use, or the set-up command in flight.
    bool commands_outstanding() const noexcept {
        return cids_.outstanding() > 0 || setup_in_flight();
    }
    // A low-level request's cid back to where it came from.
    void free_request_cid(std::uint16_t cid) noexcept;

    // Never null: no memory record (whose host_owner is null when closed or
    // GPU memory) matches a queue no controller has claimed.
    static constexpr char kUnowned = 0;
    const void* owner_ = &kUnowned;
    OutagePolicy outage_ = OutagePolicy::fail;
    CompletionStatus last_error_;

    // By ID: below command_count_ the state of command ID cid (the pool's,
    // then the set-up command's) and the record of transfer ID tid = cid (a
    // common-path transfer's), from command_count_ on the general path's
    // transfer records. One array, so that the common path, whose tid is its
    // cid, reaches both with one index.
    struct IdState {
        TransferRecord transfer;
        CommandState command;
    };
    std::vector<IdState> id_states_;  // command_count_ + capacity()
    CommandState& command_at(std::size_t cid) noexcept { return id_states_[cid].command; }
    const CommandState& command_at(std::size_t cid) const noexcept {
        return id_states_[cid].command;
    }
    TransferRecord& transfer_at(std::size_t tid) noexcept { return id_states_[tid].transfer; }
    const TransferRecord& transfer_at(std::size_t tid) const noexcept {
        return id_states_[tid].transfer;
    }
    std::uint32_t command_count_ = 0;  // command IDs, the set-up command's included
    std::vector<Response> responses_;  // by cid: a low-level request's answer
    IdPool cids_;                      // the pool's command IDs
    IdPool general_tids_;              // transfer IDs command_count_ + i of the general path
    // Command IDs kept by a common-path transfer whose command is not in
    // flight (answered, or held).
    std::uint32_t kept_cids_ = 0;
    // Transfers submitted and not yet handed back; at most capacity() (else busy).
    std::uint32_t open_transfers_ = 0;
    // Of those, the ones whose pieces_left is 2 or more (set_pieces_left keeps it).
    std::uint32_t transfers_awaiting_several_ = 0;
    // While take_completions() polls: where finished transfers go straight to its caller.
    Completion* sink_ = nullptr;
    Completion* sink_end_ = nullptr;
    std::size_t sunk_failed_ = 0;          // of those, how many did not succeed
    std::vector<std::uint32_t> finished_;  // ring of finished external transfers, by tid
    std::size_t ring_mask_ = 0;  // finished_ and waiting_ hold a power of two entries (≥ records)
    std::size_t finished_head_ = 0;
    std::size_t finished_count_ = 0;
    std::size_t gpu_reads_finished_ = 0;  // in the finished ring, not yet flushed
    std::vector<std::uint32_t> waiting_;  // FIFO of transfers with pieces not yet built
    std::size_t waiting_head_ = 0;
    std::size_t waiting_count_ = 0;
    std::vector<PieceCursor> waiting_next_;  // by tid: where its rest starts
    // By tid: a general-path transfer's start, for a replay (a common-path
    // one is re-sent as built); an ordered one's first piece not yet answered.
    std::vector<PieceCursor> origin_;
    // By tid: a read into GPU memory through its host copy (set with the
    // record's gpu_read; staging null otherwise).
    std::vector<StagedRead> staged_reads_;
    // By tid: a Zone Append's LBA written (kKeepsResult), read where the
    // record's op is Op::zone_append.
    std::vector<std::uint64_t> append_lbas_;
    // By cid: the transfer of a marked piece in flight (kMarkedPiece).
    std::vector<std::uint32_t> marked_tids_;
    std::vector<std::uint32_t> replay_order_;  // scratch of replay_held(), sized once
    std::uint64_t next_sequence_ = 0;
    std::size_t held_count_ = 0;
    // By tid: the sequence of the transfer there whose command last timed out
    // while transfers are held (kNoTimeout: none); sequences are never reused,
    // so a later transfer at the same tid never matches.
    static constexpr std::uint64_t kNoTimeout = ~std::uint64_t{0};
    std::vector<std::uint64_t> timed_out_sequence_;
    // While the failure check_deadlines() starts is handled: the transfer
    // that timed out again, failed back instead of held (kNoTransfer: none).
    std::uint32_t failing_tid_ = kNoTransfer;

    // Deadlines by stamp (the header comment): a ring of the latest clock reads'.
    static constexpr std::uint32_t kStampRing = 1024;  // a power of two
    static constexpr std::uint32_t kStampScanInterval = 256;
    std::unique_ptr<Clock::time_point[]> stamp_deadlines_;
    std::uint32_t stamps_taken_ = 0;   // clock reads so far (wraps harmlessly)
    std::uint32_t stamped_built_ = 0;  // the backend's commands_built() at the last clock read
    std::uint32_t stamps_at_scan_ =
        0;  // stamps_taken_ when check_deadlines() last saw every command
    std::uint32_t busy_polls_since_deadline_check_ = 0;
    Clock::time_point earliest_deadline_ = Clock::time_point::max();
};

}  // namespace nvmeof::detail
