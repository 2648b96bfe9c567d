// QueueCore where it needs no transport operation: sizing, refusals, the
// stamp ring's clock reads, the hand-back of finished transfers, holding and
// failing transfers in an outage, what request owners take back outside
// polling, the flush of reads into GPU memory, and the counters' check
// (queue_core.hpp describes the core).
#include "transport/queue_core.hpp"

#include <bit>
#include <cerrno>
#include <utility>

#include "base/log.hpp"
#include "memory/memory_record.hpp"
#include "transport/queue_core_datapath.hpp"
#include "transport/queue_counts.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof::detail {

const char* queue_state_name(QueueState state) {
    switch (state) {
        case QueueState::resolving:
            return "resolving";
        case QueueState::resolved:
            return "resolved";
        case QueueState::connected:
            return "connected";
        case QueueState::live:
            return "live";
        case QueueState::failed:
            return "failed";
        case QueueState::closed:
            return "closed";
    }
    return "?";
}

void QueueCore::size_for(std::uint16_t capacity) {
    // One more command: the queue's set-up commands (Fabrics Connect,
    // authentication) run at a cid of their own, free even while held
    // transfers keep theirs through a reconnect. Nothing else is in flight
    // then, so the target's queue still holds at most capacity commands.
    command_count_ = std::uint32_t{capacity} + 1;
    responses_ = std::vector<Response>(command_count_);
    cids_ = IdPool(capacity);
    general_tids_ = IdPool(capacity);
    stamp_deadlines_ = std::make_unique<Clock::time_point[]>(kStampRing);
    // The common path's (at their command's cid), then the general path's.
    const std::size_t records = std::size_t{command_count_} + capacity;
    id_states_ = std::vector<IdState>(records);
    transfers_awaiting_several_ = 0;
    // Rings of a power of two entries: their indices wrap with a mask.
    const std::size_t ring = std::bit_ceil(records);
    ring_mask_ = ring - 1;
    finished_ = std::vector<std::uint32_t>(ring);
    waiting_ = std::vector<std::uint32_t>(ring);
    waiting_next_ = std::vector<PieceCursor>(records);
    origin_ = std::vector<PieceCursor>(records);
    append_lbas_ = std::vector<std::uint64_t>(records);
    staged_reads_ = std::vector<StagedRead>(records);
    marked_tids_ = std::vector<std::uint32_t>(command_count_, kNoTransfer);
    replay_order_ = std::vector<std::uint32_t>(records);
    timed_out_sequence_ = std::vector<std::uint64_t>(records, kNoTimeout);
}

void QueueCore::reset_for_reopen() noexcept {
    state_ = QueueState::resolving;
    failure_ = TransportErrc::none;
    failure_errno_ = 0;
    last_error_ = CompletionStatus{};
    busy_polls_since_deadline_check_ = 0;
    earliest_deadline_ = Clock::time_point::max();
    stamped_built_ = 0;  // the new connection's backend counts from 0
}

std::size_t QueueCore::pieces(const NamespaceRef& ns, const Transfer& t) const noexcept {
    if (t.op == Op::flush) {
        return 1;
    }
    const std::uint64_t per_piece = blocks_per_piece(queue_core::block_bytes_of(ns, t), t.op);
    if (t.blocks <= per_piece) [[likely]] {
        return t.blocks == 0 ? 0 : 1;
    }
    return static_cast<std::size_t>(plan_split(t.blocks, per_piece).pieces);
}

void QueueCore::take_stamp(Clock::time_point now, std::uint32_t built) noexcept {
    const Clock::time_point deadline = now + config_.request_timeout;
    stamp_deadlines_[stamps_taken_ & (kStampRing - 1)] = deadline;
    ++stamps_taken_;
    stamped_built_ = built;
    earliest_deadline_ = std::min(earliest_deadline_, deadline);
}

SubmitResult QueueCore::refuse(SubmitResult result, TransportErrc code, int sys_errno,
                               Op op) noexcept {
    last_error_ = CompletionStatus{};
    last_error_.transport = code;
    last_error_.sys_errno = sys_errno;
    last_error_.opcode = static_cast<std::uint8_t>(opcode_of(op));
    last_error_.queue = config_.kind;
    return result;
}

SubmitResult QueueCore::refuse_not_live(Op op) noexcept {
    if (outage_ == OutagePolicy::hold) {
        return SubmitResult::busy;  // reconnecting: the transfer waits in the caller
    }
    const TransportErrc code = failure_ != TransportErrc::none ? failure_ : TransportErrc::closed;
    return refuse(SubmitResult::failed, code, failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN, op);
}

void QueueCore::set_protection_fields(PieceCursor& c, const NamespaceRef& ns,
                                      const Transfer& t) noexcept {
    c.protected_blocks = ns.pi && (carries_data(t.op) || t.op == Op::write_zeroes);
    if (!c.protected_blocks) {
        return;
    }
    // pi_tags' rule, with the namespace's reference tag mask kept ready.
    const Protection& p = t.protection;
    c.reftag_mask = ns.reftag_mask;
    c.reftag = initial_reftag(p, t.slba) & ns.reftag_mask;
    c.storage_words = storage_words(ns, p);
    c.prinfo = p.prinfo;
    c.reftag_step = ns.format.pi_type == PiType::type3 ? 0 : 1;
    c.apptag = p.apptag;
    c.apptag_mask = p.apptag_mask;
}

std::size_t QueueCore::hand_back(std::span<Completion> out, std::size_t& failed) noexcept {
    if (gpu_reads_finished_ != 0) [[unlikely]] {
        flush_gpu_reads(std::min(out.size(), finished_count_));
    }
    const std::size_t n = std::min(out.size(), finished_count_);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t tid = finished_[finished_head_];
        finished_head_ = (finished_head_ + 1) & ring_mask_;
        out[i].user_data = transfer_at(tid).user_data;
        out[i].status = transfer_at(tid).status;
        if (transfer_at(tid).op == Op::zone_append) {
            out[i].append_lba = append_lbas_[tid];
        }
        failed += out[i].status.ok() ? 0 : 1;
        release_transfer(tid);
    }
    finished_count_ -= n;
    return n;
}

void QueueCore::complete_marked_piece(std::uint16_t cid, const CompletionStatus& status,
                                      std::uint64_t result) noexcept {
    CommandState& command = command_at(cid);
    const std::uint32_t tid = marked_tids_[cid];
    const std::uint8_t flags = command.flags;
    command.flags = 0;
    cids_.put(cid);
    TransferRecord& record = transfer_at(tid);
    if (!status.ok() && record.status.ok()) {
        record.status = status;  // the first error wins
    }
    if ((flags & kOrderedPiece) != 0) {
        ordered_piece_answered(tid);
        return;
    }
    // A Zone Append, the transfer's one piece: its LBA goes with it.
    NVMEOF_INVARIANT(record.pieces_left == 1, "a Zone Append is one piece");
    append_lbas_[tid] = result;
    set_pieces_left(record, 0);
    if (!record.internal && sink_ != sink_end_) {
        Completion& out = *sink_;
        finish_transfer(tid);  // into the sink (host memory: no GPU read to flush)
        out.append_lba = result;
        return;
    }
    finish_transfer(tid);  // the finished ring (hand_back copies the LBA) or a blocking caller
}

void QueueCore::ordered_piece_answered(std::uint32_t tid) noexcept {
    TransferRecord& record = transfer_at(tid);
    PieceCursor& rest = waiting_next_[tid];
    std::uint32_t left = record.pieces_left - 1;
    if (!record.status.ok()) {
        // The rest would land past a write pointer the failed piece did not
        // move: it finishes with that error, the rest never sent.
        left -= std::exchange(rest.unbuilt, 0);
    }
    set_pieces_left(record, left);
    if (left == 0) {
        finish_transfer(tid);
        return;
    }
    origin_[tid] = rest;  // a replay starts at the first piece not answered
    // Behind whatever waits already: after_poll() builds it once IDs are free.
    enqueue_waiting(tid);
}

// --- outages (a controller reconnecting; off the data path) ---------------

void QueueCore::set_outage_policy(OutagePolicy policy) noexcept {
    outage_ = policy;
    if (state_ == QueueState::live) {
        return;
    }
    // What refused submissions report while the queue is down.
    if (policy == OutagePolicy::fail_fast) {
        failure_ = TransportErrc::path_failed;
        failure_errno_ = ENOLINK;
    } else if (policy == OutagePolicy::lost) {
        failure_ = TransportErrc::controller_lost;
        failure_errno_ = ENODEV;
    }
}

void QueueCore::fail_waiting(const CompletionStatus& status) noexcept {
    for (; waiting_count_ > 0; --waiting_count_) {
        const std::uint32_t tid = waiting_[waiting_head_];
        waiting_head_ = (waiting_head_ + 1) & ring_mask_;
        TransferRecord& record = transfer_at(tid);
        if (record.status.ok()) {
            record.status = status;
            record.status.opcode = static_cast<std::uint8_t>(opcode_of(waiting_next_[tid].op));
        }
        set_pieces_left(record, record.pieces_left - std::exchange(waiting_next_[tid].unbuilt, 0));
        if (record.pieces_left == 0) {
            finish_transfer(tid);
        }
    }
    waiting_head_ = 0;
}

void QueueCore::hold_unfinished() noexcept {
    // Pieces not yet built: the whole transfer is replayed anyway.
    for (; waiting_count_ > 0; --waiting_count_) {
        const std::uint32_t tid = waiting_[waiting_head_];
        waiting_head_ = (waiting_head_ + 1) & ring_mask_;
        TransferRecord& record = transfer_at(tid);
        const std::uint32_t unbuilt = std::exchange(waiting_next_[tid].unbuilt, 0);
        if (!record.status.ok() || tid == failing_tid_) {
            // Already failed by the target, or timed out again: it finishes with
            // that error once its built pieces are failed back (fail_outstanding()
            // does that next).
            set_pieces_left(record, record.pieces_left - unbuilt);
            if (record.pieces_left == 0) {
                finish_transfer(tid);
            }
        } else if (!record.held) {
            record.held = true;
            ++held_count_;
        }
    }
    waiting_head_ = 0;
    for (std::size_t cid = 0; cid < command_count_; ++cid) {
        CommandState& command = command_at(cid);
        if ((command.flags & kInFlight) == 0) {
            continue;
        }
        const std::uint32_t tid =
            (command.flags & kMarkedPiece) != 0 ? marked_tids_[cid] : command.tid;
        if (tid == kNoTransfer) {
            continue;  // a low-level request: failed back
        }
        if (tid == failing_tid_) {
            continue;  // timed out again after its replay: failed back, not held
        }
        TransferRecord& record = transfer_at(tid);
        const bool own_cid = tid == cid;
        // (A one-command transfer in flight has no answer yet: its record's
        // status is written when it finishes.)
        if (!own_cid && !record.status.ok()) {
            continue;  // already failed by the target: it completes with that error
        }
        if (record.op == Op::zone_append) {
            // Not idempotent: sent again it would append the blocks twice if
            // the controller ran it before the failure. It fails back (one
            // still waiting for an ID, never sent, was held above).
            continue;
        }
        if (!record.held) {
            record.held = true;
            ++held_count_;
        }
        command.flags = 0;
        command.tid = kNoTransfer;
        if (own_cid) {
            ++kept_cids_;  // kept, with its SQE, for the replay
        } else {
            cids_.put(static_cast<std::uint16_t>(cid));  // a general path's piece
        }
    }
}

bool QueueCore::timed_out_again(std::uint32_t tid) noexcept {
    if (tid == kNoTransfer || outage_ != OutagePolicy::hold) {
        return false;  // a low-level request, or no reconnect: it fails anyway
    }
    const std::uint64_t sequence = transfer_at(tid).sequence;
    if (timed_out_sequence_[tid] == sequence) {
        return true;
    }
    timed_out_sequence_[tid] = sequence;
    return false;
}

std::size_t QueueCore::fail_held(TransportErrc code, int sys_errno) noexcept {
    std::size_t count = 0;
    for (std::uint32_t tid = 0; tid < id_states_.size() && held_count_ > 0; ++tid) {
        TransferRecord& record = transfer_at(tid);
        if (!record.held) {
            continue;
        }
        record.held = false;
        --held_count_;
        record.status = CompletionStatus{};
        record.status.transport = code;
        record.status.sys_errno = sys_errno;
        record.status.opcode = static_cast<std::uint8_t>(opcode_of(record.op));
        record.status.queue = config_.kind;
        set_pieces_left(record, 0);
        finish_transfer(tid);
        ++count;
    }
    check_counters();
    return count;
}

// --- what request owners take back outside polling ------------------------

bool QueueCore::transfer_finished(std::uint32_t tid) const noexcept {
    return tid < id_states_.size() && transfer_at(tid).finished();
}

CompletionStatus QueueCore::take_transfer(std::uint32_t tid, std::uint64_t* append_lba) noexcept {
    CompletionStatus status = transfer_at(tid).status;
    if (append_lba != nullptr && transfer_at(tid).op == Op::zone_append) {
        *append_lba = append_lbas_[tid];
    }
    if (transfer_at(tid).gpu_read != nullptr) [[unlikely]] {
        // A blocking read into GPU memory: visible to the owner before it returns.
        const bool staged = staged_reads_[tid].staging != nullptr;
        GpuOrdering* last = nullptr;
        int flushed = 0;
        if (const int result = finish_gpu_read(tid, last, flushed); result != 0) {
            gpu_read_failed(status, result, staged);
        }
    }
    transfer_at(tid) = TransferRecord{};
    release_transfer(tid);
    return status;
}

void QueueCore::free_request_cid(std::uint16_t cid) noexcept {
    if (cid != setup_cid()) {
        const bool released = cids_.release(cid);
        NVMEOF_INVARIANT(released, "a low-level request's command ID was handed out by acquire()");
    }
}

bool QueueCore::request_done(std::uint16_t cid) const noexcept {
    return cid < command_count_ && (command_at(cid).flags & kAnswered) != 0;
}

const Response& QueueCore::request_response(std::uint16_t cid) const noexcept {
    return responses_[cid];
}

void QueueCore::release_request(std::uint16_t cid) noexcept {
    if (cid >= command_count_) {
        return;
    }
    CommandState& command = command_at(cid);
    if ((command.flags & kAnswered) != 0) {
        command.flags = 0;
        free_request_cid(cid);
    } else if ((command.flags & kInFlight) != 0) {
        command.flags |= kAbandoned;
    }
}

// --- reads into GPU memory (GpuOrdering): off the host-memory path ---------

void QueueCore::gpu_read_failed(CompletionStatus& status, int result, bool staged) noexcept {
    if (status.ok()) {
        status.transport = TransportErrc::queue_error;
        status.sys_errno = EIO;
        status.opcode = static_cast<std::uint8_t>(opcode_of(Op::read));
        status.queue = wire::QueueKind::io;
    }
    log_error("%s after a read into GPU memory failed (CUDA error %d)",
              staged ? "cuMemcpyHtoD from its host copy" : "cuFlushGPUDirectRDMAWrites", result);
}

bool QueueCore::prepare_gpu_transfer(const MemoryRecord& memory, const Transfer& t,
                                     std::size_t bytes, std::uint64_t& address,
                                     GpuOrdering*& gpu_read, StagedRead& staged_read) noexcept {
    // The target may read the memory as soon as the command leaves: the
    // GPU's writes to it must be complete first.
    if (sends_data(t.op) && memory.ordering && memory.ordering->before_write() != 0) {
        return false;
    }
    if (memory.staging) {
        // The bytes travel through the region's host copy.
        address = reinterpret_cast<std::uint64_t>(memory.staging->host()) + t.offset;
        if (sends_data(t.op)) {
            if (const int result = memory.staging->to_host(address, bytes); result != 0) {
                log_error("cuMemcpyDtoH into the host copy of GPU memory failed (CUDA error %d)",
                          result);
                return false;
            }
        } else if (t.op == Op::read) {
            staged_read = {memory.staging.get(), address, bytes};
        }
    }
    if (t.op == Op::read) {
        gpu_read = memory.ordering.get();
    }
    return true;
}

int QueueCore::finish_gpu_read(std::uint32_t tid, GpuOrdering*& last, int& flushed) noexcept {
    if (StagedRead& staged = staged_reads_[tid]; staged.staging != nullptr) {
        const StagedRead read = std::exchange(staged, StagedRead{});
        // A failed read leaves the region as it was.
        return transfer_at(tid).status.ok() ? read.staging->to_device(read.address, read.bytes) : 0;
    }
    if (transfer_at(tid).gpu_read != last) {
        last = transfer_at(tid).gpu_read;
        flushed = last->after_read();
    }
    return flushed;
}

// Before the first `count` finished transfers are handed back: one flush per
// ordering (normally one per batch), or one copy per staged read, for the reads
// into GPU memory among them.
void QueueCore::flush_gpu_reads(std::size_t count) noexcept {
    GpuOrdering* last = nullptr;
    int flushed = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t tid = finished_[(finished_head_ + i) & ring_mask_];
        TransferRecord& record = transfer_at(tid);
        if (record.gpu_read == nullptr) {
            continue;
        }
        const bool staged = staged_reads_[tid].staging != nullptr;
        if (const int result = finish_gpu_read(tid, last, flushed); result != 0) {
            gpu_read_failed(record.status, result, staged);
        }
        record.gpu_read = nullptr;
        NVMEOF_INVARIANT(gpu_reads_finished_ > 0, "a finished GPU read was counted");
        --gpu_reads_finished_;
    }
}

// --- the counters' check (builds with invariants only) ---------------------

// What a scan of the commands and records finds, against the counters the
// data path keeps by hand (queue_counts.hpp), and the states a command may be
// in.
void QueueCore::check_counters_now() const noexcept {
    QueueCounts c;
    c.capacity = capacity();
    c.records = id_states_.size();
    c.ids_outstanding = cids_.outstanding();
    c.general_tids_taken = general_tids_.outstanding();
    c.kept_cids = kept_cids_;
    c.open_transfers = open_transfers_;
    c.transfers_awaiting_several = transfers_awaiting_several_;
    c.held = held_count_;
    c.finished = finished_count_;
    c.gpu_reads_finished = gpu_reads_finished_;
    c.waiting = waiting_count_;
    // The pool's cids; the set-up command's after them is not in the pool.
    for (std::size_t cid = 0; cid < capacity(); ++cid) {
        const CommandState& command = command_at(cid);
        const std::uint8_t flags = command.flags;
        if ((flags & kInFlight) != 0) {
            NVMEOF_INVARIANT((flags & kAnswered) == 0, "a command both in flight and answered");
            NVMEOF_INVARIANT(
                (flags & (kLowLevel | kMarkedPiece)) != 0 || command.tid != kNoTransfer,
                "a transfer's piece in flight names its transfer");
            NVMEOF_INVARIANT((flags & kAbandoned) == 0 || (flags & kLowLevel) != 0,
                             "only a low-level request is abandoned");
            ++c.commands_in_flight;
            c.own_cid_commands_in_flight += command.tid == cid ? 1 : 0;
        } else if ((flags & kAnswered) != 0) {
            NVMEOF_INVARIANT(flags == (kAnswered | kLowLevel),
                             "an answered command is a low-level request's");
            ++c.low_level_answered;
        } else {
            NVMEOF_INVARIANT(flags == 0, "a command neither in flight nor answered has no flags");
        }
    }
    for (const IdState& id : id_states_) {
        c.records_awaiting_several += id.transfer.pieces_left >= 2 ? 1 : 0;
        c.records_held += id.transfer.held ? 1 : 0;
    }
    check_queue_counts(c);
}

}  // namespace nvmeof::detail
