// RdmaQueue datapath: submit, commit, poll and complete (the per-I/O path is
// described in rdma_queue.hpp; finishing a command is rdma_queue_completion.hpp,
// failure and outages rdma_queue_recovery.cpp). No allocation, no syscall, no
// exception and no clock read per request on the steady-state path.
#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/log.hpp"
#include "memory/memory_record.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_command.hpp"
#include "transport/rdma_queue_completion.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Copied whole (two stores) rather than built field by field.
constexpr CompletionStatus kSucceeded{};

// Bytes per block in the transfer's buffer: the data (a power of two), and
// on a namespace with metadata whatever of the metadata travels.
std::uint32_t block_bytes_of(const NamespaceRef& ns, const Transfer& t) noexcept {
    return ns.format.metadata_bytes == 0 ? std::uint32_t{1} << ns.lba_shift
                                         : ns.buffer_block_bytes(t.protection);
}

}  // namespace

std::size_t RdmaQueue::pieces(const NamespaceRef& ns, const Transfer& t) const noexcept {
    if (t.op == Op::flush) {
        return 1;
    }
    const std::uint64_t per_piece = blocks_per_piece(block_bytes_of(ns, t), t.op);
    if (t.blocks <= per_piece) [[likely]] {
        return t.blocks == 0 ? 0 : 1;
    }
    return static_cast<std::size_t>(plan_split(t.blocks, per_piece).pieces);
}

std::uint64_t RdmaQueue::blocks_per_piece(std::uint32_t block_bytes, Op op) const noexcept {
    return carries_data(op) ? std::min<std::uint64_t>(max_transfer_bytes_ / block_bytes,
                                                      wire::kMaxBlocksPerCommand)
                            : std::uint64_t{wire::kMaxBlocksPerCommand};
}

void RdmaQueue::take_stamp(Clock::time_point now) noexcept {
    const Clock::time_point deadline = now + config_.request_timeout;
    stamp_deadlines_[stamps_taken_ & (kStampRing - 1)] = deadline;
    ++stamps_taken_;
    stamped_position_ = send_position_;
    earliest_deadline_ = std::min(earliest_deadline_, deadline);
}

SubmitResult RdmaQueue::refuse(SubmitResult result, TransportErrc code, int sys_errno, Op op) noexcept {
    last_error_ = CompletionStatus{};
    last_error_.transport = code;
    last_error_.sys_errno = sys_errno;
    last_error_.opcode = static_cast<std::uint8_t>(opcode_of(op));
    last_error_.queue = config_.kind;
    return result;
}

int RdmaQueue::check_transfer(const NamespaceRef& ns, const Transfer& t, const MemoryRecord* memory,
                              std::uint32_t block_bytes) const noexcept {
    if (!lba_range_fits(t.op, t.slba, t.blocks, ns.size_lbas)) {
        return ERANGE;
    }
    if (!carries_data(t.op)) {
        return 0;
    }
    if (memory == nullptr || !memory->alive() || memory->owner != owner_) {
        return EBADF;
    }
    if (!buffer_range_fits(t.blocks, block_bytes, t.offset, memory->length)) {
        return EFAULT;
    }
    return 0;
}

void RdmaQueue::start_record(std::uint32_t tid, const Transfer& t, std::uint32_t pieces,
                             bool internal) noexcept {
    ++open_transfers_;
    TransferRecord& record = transfers_[tid];  // every field set: no zeroing first
    NVMEOF_INVARIANT(record.pieces_left == 0 && !record.held,
                     "a general-path record reused while its transfer is open");
    record.user_data = t.user_data;
    record.sequence = next_sequence_++;
    record.gpu_read = nullptr;
    record.status = CompletionStatus{};
    record.pieces_left = pieces;  // from 0: a general record is reused once finished
    transfers_awaiting_several_ += pieces >= 2 ? 1 : 0;
    record.op = t.op;
    record.internal = internal;
    record.held = false;
}

SubmitResult RdmaQueue::submit_plain(const NamespaceRef& ns, const Transfer& t,
                                     Post post) noexcept {
    NVMEOF_INVARIANT(ns.format.metadata_bytes == 0, "a namespace with metadata on the plain path");
    return submit_one(ns, t, false, nullptr, post);
}

SubmitResult RdmaQueue::submit_transfer(const NamespaceRef& ns, const Transfer& t, bool internal,
                                        std::uint32_t* transfer_index, Post post) noexcept {
    if (ns.format.metadata_bytes != 0) {
        return submit_with_metadata(ns, t, post, internal, transfer_index);
    }
    return submit_one(ns, t, internal, transfer_index, post);
}

SubmitResult RdmaQueue::submit_one(const NamespaceRef& ns, const Transfer& t, bool internal,
                                   std::uint32_t* transfer_index, Post post) noexcept {
    if (state_ != QueueState::live) [[unlikely]] {
        return refuse_not_live(t.op);
    }
    const std::uint32_t lba_shift = ns.lba_shift;
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    // The common case: a read, write or compare of host memory in one command, with an
    // ID and a send queue entry free and nothing waiting before it. Its checks
    // are check_transfer()'s, cheaper for one command (at most
    // kMaxBlocksPerCommand blocks: no shift overflows; host_owner is set only
    // while host memory is registered, and owner_ is never null); anything
    // else, a refusal included, takes the general path, which checks in full.
    const std::uint64_t bytes = t.blocks << lba_shift;
    if (!carries_data(t.op) || t.blocks - 1 >= wire::kMaxBlocksPerCommand ||
        bytes > max_transfer_bytes_ || t.slba >= ns.size_lbas || t.blocks > ns.size_lbas - t.slba ||
        memory == nullptr || memory->host_owner != owner_ || t.offset > memory->length ||
        bytes > memory->length - t.offset || waiting_count_ != 0 || cids_.available() == 0 ||
        send_room() == 0) [[unlikely]] {
        return submit_general(ns, t, internal, transfer_index, post);
    }
    return submit_one_command<false>(ns, t, memory, bytes, internal, transfer_index, post);
}

SubmitResult RdmaQueue::refuse_not_live(Op op) noexcept {
    if (outage_ == OutagePolicy::hold) {
        return SubmitResult::busy;  // reconnecting: the transfer waits in the caller
    }
    const TransportErrc code = failure_ != TransportErrc::none ? failure_ : TransportErrc::closed;
    return refuse(SubmitResult::failed, code, failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN, op);
}

SubmitResult RdmaQueue::commit_queued() noexcept {
    commit();
    return SubmitResult::queued;
}

SubmitResult RdmaQueue::submit_general(const NamespaceRef& ns, const Transfer& t, bool internal,
                                       std::uint32_t* transfer_index, Post post) noexcept {
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    const std::uint32_t block_bytes = block_bytes_of(ns, t);
    if (const int error = check_transfer(ns, t, memory, block_bytes); error != 0) {
        return refuse(SubmitResult::invalid, TransportErrc::invalid_argument, error, t.op);
    }
    if (open_transfers_ >= capacity()) {
        return SubmitResult::busy;  // capacity() transfers in progress
    }
    const std::uint64_t per_piece = blocks_per_piece(block_bytes, t.op);
    const std::size_t count =
        t.op == Op::flush || t.blocks <= per_piece ? 1 : plan_split(t.blocks, per_piece).pieces;
    GpuOrdering* gpu_read = nullptr;
    if (memory != nullptr && memory->kind == MemoryKind::gpu) {
        // The target may read the MR as soon as the command leaves: the GPU's
        // writes to it must be complete first.
        if (sends_data(t.op) && memory->ordering && memory->ordering->before_write() != 0) {
            return refuse(SubmitResult::invalid, TransportErrc::queue_error, EIO, t.op);
        }
        if (t.op == Op::read) {
            gpu_read = memory->ordering.get();
        }
    }

    const auto tid = static_cast<std::uint32_t>(slot_count_ + general_records_.take());
    start_record(tid, t, static_cast<std::uint32_t>(count), internal);
    TransferRecord& record = transfers_[tid];
    record.gpu_read = gpu_read;
    PieceCursor& next = origin_[tid];  // kept as is for a replay; pieces advance a copy
    next.slba = t.slba;
    next.blocks_left = t.op == Op::flush ? 0 : t.blocks;
    next.per_piece = per_piece;
    next.address =
        memory != nullptr ? reinterpret_cast<std::uint64_t>(memory->address) + t.offset : 0;
    next.rkey = memory != nullptr ? memory->rkey : 0;
    next.lkey = memory != nullptr ? memory->lkey : 0;
    next.nsid = ns.nsid;
    next.block_bytes = block_bytes;
    set_protection_fields(next, ns, t);
    next.unbuilt = static_cast<std::uint32_t>(count);
    next.op = t.op;
    next.as_built = false;
    if (transfer_index != nullptr) {
        *transfer_index = tid;
    }

    if (waiting_count_ == 0 && count <= cids_.available() && count <= send_room()) {
        PieceCursor cursor = next;
        build_pieces(tid, cursor, count);
    } else {
        // The rest waits behind any transfer already waiting, so pieces leave in order.
        waiting_next_[tid] = next;
        NVMEOF_INVARIANT(waiting_count_ <= ring_mask_, "the waiting ring overflows");
        waiting_[(waiting_head_ + waiting_count_) & ring_mask_] = tid;
        ++waiting_count_;
        build_waiting();
    }
    if (post == Post::now) {
        commit();
    }
    return SubmitResult::queued;
}

// Every piece that does not take the common path is filled here.
void RdmaQueue::build_pieces(std::uint32_t tid, PieceCursor& c, std::size_t count) noexcept {
    Slot* previous = nullptr;
    Slot* first = nullptr;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t cid = 0;
        if (c.as_built) {
            cid = static_cast<std::uint16_t>(tid);
            NVMEOF_INVARIANT(record_slots_idle_ > 0, "a held record's slot counted idle");
            --record_slots_idle_;  // its slot in flight again
        } else {
            cid = cids_.take();
        }
        Slot& slot = slots_[cid];
        NVMEOF_INVARIANT(slot.flags == 0, "a piece built into a slot still in use");
        const std::uint64_t blocks = std::min(c.per_piece, c.blocks_left);
        // Built in place in the registered command buffer (every field written:
        // the buffer held the slot's previous command), unless a replay of a
        // one-command transfer re-sends the command still there.
        if (c.as_built) {
            // A replay of a one-command transfer: its command is still in the
            // slot, unless the reconnected controller takes less in the capsule.
            if (slot.wr.num_sge == Slot::kMaxSges && slot.sge[1].length > in_capsule_limit_) {
                commands_[cid].dptr = wire::keyed_data_block(slot.sge[1].addr, slot.sge[1].length,
                                                             slot.in_capsule_rkey);
                slot.wr.num_sge = 1;
            }
        } else {
            wire::Sqe& sqe = commands_[cid];
            if (carries_data(c.op)) {
                const auto bytes = static_cast<std::uint32_t>(blocks * c.block_bytes);
                fill_data_command(slot, sqe, cid, c.op, c.nsid, c.slba, blocks, c.address, bytes,
                                  c.rkey, c.lkey);
                c.address += bytes;
            } else {
                fill_dataless_command(slot, sqe, cid, c.op, c.nsid, c.slba, blocks);
            }
            if (c.protected_blocks) {
                wire::set_protection(sqe, c.prinfo,
                                     wire::with_reftag(c.storage_words, c.reftag & c.reftag_mask),
                                     c.apptag, c.apptag_mask);
                c.reftag += c.reftag_step * blocks;
            }
        }
        c.slba += blocks;
        c.blocks_left -= blocks;
        --c.unbuilt;
        slot.flags = kInFlight;
        slot.transfer = tid;
        prepare_send(slot);
        if (previous != nullptr) {
            previous->wr.next = &slot.wr;
        } else {
            first = &slot;
        }
        previous = &slot;
    }
    if (first != nullptr) {
        // A transfer's pieces go out in one post: they reach the target together.
        defer(first->wr, previous->wr, static_cast<std::uint32_t>(count));
    }
}

void RdmaQueue::build_waiting() noexcept {
    while (waiting_count_ > 0 && send_room() > 0) {
        const std::uint32_t tid = waiting_[waiting_head_];
        PieceCursor& c = waiting_next_[tid];
        const std::size_t ids = c.as_built ? 1 : cids_.available();  // as built: its own slot
        if (ids == 0) {
            return;
        }
        build_pieces(tid, c, std::min<std::size_t>({c.unbuilt, ids, send_room()}));
        if (c.unbuilt == 0) {
            waiting_head_ = (waiting_head_ + 1) & ring_mask_;
            --waiting_count_;
        }
    }
}

void RdmaQueue::commit() noexcept {
    NVMEOF_INVARIANT((deferred_head_ == nullptr) == (deferred_count_ == 0),
                     "the deferred count matches the deferred chain");
    if (deferred_head_ == nullptr || state_ != QueueState::live) {
        return;
    }
    ibv_send_wr* head = std::exchange(deferred_head_, nullptr);
    deferred_tail_ = nullptr;
    deferred_count_ = 0;
    post_chain(head);
}

std::uint16_t RdmaQueue::submit_command(const wire::Sqe& command, Deadline deadline) {
    if (state_ != QueueState::live && state_ != QueueState::connected) {
        throw TransportError(failure_ != TransportErrc::none ? failure_ : TransportErrc::closed,
                             failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN,
                             "qid " + std::to_string(config_.qid) + " is " + queue_state_name(state_));
    }
    if (send_room() == 0) {
        poll_cq();  // the send queue is full of SENDs answered but not yet retired
    }
    std::uint16_t cid = 0;
    const bool setting_up = state_ != QueueState::live && slots_[setup_slot()].flags == 0;
    if (setting_up) {
        cid = setup_slot();  // Fabrics Connect, authentication: see create_resources
    }
    if (send_room() == 0 || (!setting_up && !cids_.acquire(cid))) {
        throw TransportError(TransportErrc::busy, EBUSY,
                             "qid " + std::to_string(config_.qid) + ": no free command slot");
    }
    commands_[cid] = command;
    commands_[cid].command_id = cid;
    Slot& slot = slots_[cid];
    NVMEOF_INVARIANT(slot.flags == 0, "a low-level command built into a slot still in use");
    slot.response = Response{};
    slot.response.command = commands_[cid];
    slot.flags = kInFlight | kLowLevel;
    slot.transfer = kNoTransfer;
    prepare_send(slot, deadline == Deadline::request_timeout);
    slot.wr.num_sge = 1;
    slot.wr.next = nullptr;
    commit();
    post_chain(&slot.wr);
    return cid;
}

int RdmaQueue::poll_cq() noexcept {
    if (!cq_ || state_ == QueueState::failed || state_ == QueueState::closed) {
        return 0;
    }
    // One clock read per poll at most: for the deadlines of what was built
    // since the last one, and for checking deadlines.
    Clock::time_point now{};
    if (send_position_ != stamped_position_) {
        now = Clock::now();
        take_stamp(now);
    }
    ibv_wc wc[kPollBatch];
    const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    if (n > 0) {
        handle_completion(wc, n);
    } else if (n < 0) {
        fail(TransportErrc::queue_error, EIO, "ibv_poll_cq failed");
        return 0;
    }
    if (waiting_count_ != 0 && state_ == QueueState::live) [[unlikely]] {
        // Slots freed: the next waiting pieces go out now, unless the caller
        // holds a deferred batch (they join it and leave with its commit()).
        const bool caller_deferred = deferred_head_ != nullptr;
        build_waiting();
        if (!caller_deferred) {
            commit();
        }
    }
    // Reading the clock on every poll costs more than the poll itself on a busy
    // queue; deadlines only need checking when the CQ is quiet, or now and then
    // while completions keep coming (a lost command among many answered ones).
    if (commands_outstanding() && state_ != QueueState::failed &&
        (n == 0 || ++busy_polls_since_deadline_check_ >= kDeadlineCheckInterval)) {
        busy_polls_since_deadline_check_ = 0;
        check_deadlines(now != Clock::time_point{} ? now : Clock::now());
    }
    return n;
}

bool RdmaQueue::arm_if_quiet() noexcept {
    if (!cq_ || failed() || finished_count_ > 0) {
        return false;
    }
    if (ibv_req_notify_cq(cq_.get(), 0) != 0) {
        return false;  // cannot sleep on this CQ: the caller keeps polling
    }
    // Arming reports only completions that come after it: empty the CQ of
    // those already there, or the wait could sleep with work waiting.
    while (poll_cq() == kPollBatch) {
    }
    return finished_count_ == 0 && !failed();
}

void RdmaQueue::handle_completion(const ibv_wc* wc, int n) noexcept {
    // The receives of this batch's responses go back up together, after their
    // buffers have been read: one chain, one post.
    ibv_recv_wr* receives = nullptr;
    ibv_recv_wr** receives_tail = &receives;
    int reposts = 0;
    // receives_outstanding_ (what drain() waits for): a batch handled whole
    // posts again every receive it took off the CQ, so it stays as it is; one
    // that fails midway posts none, so every receive taken leaves it (by
    // drain(), which a failure runs, or below).
    batch_ = wc;
    batch_size_ = n;
    for (int i = 0; i < n; ++i) {
        const std::uint64_t wr_id = wc[i].wr_id;
        if ((wr_id & kRecvTag) != 0 && wc[i].status == IBV_WC_SUCCESS) [[likely]] {
            const auto index = static_cast<std::uint32_t>(wr_id & ~kRecvTag);
            if (!handle_response(index, wc[i].byte_len)) [[unlikely]] {
                batch_receives_taken_off();
                return;  // the queue failed: nothing goes back up
            }
            ibv_recv_wr& receive = recv_wrs_[index];
            *receives_tail = &receive;
            receives_tail = &receive.next;
            ++reposts;
        } else if (!handle_send_completion(wc[i])) {  // (a failed receive fails the queue there)
            batch_receives_taken_off();
            return;
        }
    }
    if (reposts == 0) {
        batch_ = nullptr;
        return;
    }
    *receives_tail = nullptr;
    ibv_recv_wr* bad = nullptr;
    const int posted = ibv_post_recv(qp_, receives, &bad);
    if (posted == 0) [[likely]] {
        batch_ = nullptr;  // as many posted as taken off
    } else {
        const int error = errno;
        batch_receives_taken_off();
        for (ibv_recv_wr* wr = receives; wr != nullptr && wr != bad; wr = wr->next) {
            ++receives_outstanding_;
        }
        fail(TransportErrc::queue_error, error != 0 ? error : EIO, "ibv_post_recv failed");
    }
}

void RdmaQueue::batch_receives_taken_off() noexcept {
    if (batch_ == nullptr) {
        return;
    }
    for (int i = 0; i < batch_size_; ++i) {
        NVMEOF_INVARIANT(receives_outstanding_ >= (batch_[i].wr_id >> kRecvTagShift),
                         "a receive taken off the CQ was counted posted");
        receives_outstanding_ -= static_cast<std::uint32_t>(batch_[i].wr_id >> kRecvTagShift);
    }
    batch_ = nullptr;
}

// A SEND completion: a signalled one retires its signalling interval from the
// send queue; an error (or a receive's error) fails the queue.
bool RdmaQueue::handle_send_completion(const ibv_wc& wc) noexcept {
    const bool is_receive = (wc.wr_id & kRecvTag) != 0;
    if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
        log_error("qid %u: %s completion failed: %s (vendor error 0x%x)", unsigned{config_.qid},
                  is_receive ? "RECV" : "SEND", ibv_wc_status_str(wc.status), wc.vendor_err);
        // Retry exceeded (peer gone) or a flush we did not ask for (the connection
        // moved the QP to error): the connection is lost. Anything else is a QP error.
        const bool lost = wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR;
        fail(lost ? TransportErrc::disconnected : TransportErrc::queue_error, lost ? ECONNRESET : EIO,
             ibv_wc_status_str(wc.status));
        return false;
    }
    if ((wc.wr_id >= slots_.size() && wc.wr_id != kRetireMarker) ||
        sends_in_queue() < kSendsPerSignal) [[unlikely]] {
        fail(TransportErrc::protocol_error, EPROTO, "SEND completion nothing was signalled for");
        return false;
    }
    sends_retired_ += kSendsPerSignal;
    return true;
}

bool RdmaQueue::handle_response(std::uint32_t index, std::uint32_t byte_len) noexcept {
    if (index >= receive_count_ || byte_len < sizeof(wire::Cqe)) [[unlikely]] {
        fail(TransportErrc::protocol_error, EPROTO, "short response capsule");
        return false;
    }
    // Read in place: the buffer goes back up only after the whole batch.
    const wire::Cqe& cqe = responses_[index];
    const std::uint16_t cid = cqe.command_id;
    // In flight implies the ID is handed out (flags clear before an ID frees).
    if (cid >= slot_count_ || (slots_[cid].flags & kInFlight) == 0) [[unlikely]] {
        log_error("qid %u: response for unknown or duplicate command ID %u", unsigned{config_.qid},
                  unsigned{cid});
        fail(TransportErrc::protocol_error, EPROTO, "unknown or duplicate command ID");
        return false;
    }
    Slot& slot = slots_[cid];
    const wire::Status nvme = wire::Status::from_cqe_field(cqe.status);
    if (slot.transfer == cid && nvme.ok()) [[likely]] {
        complete_one_command(cid, slot);
        return true;
    }
    if (slot.transfer != kNoTransfer && nvme.ok()) {
        complete_piece(cid, slot);
        return true;
    }
    CompletionStatus status;
    status.nvme = nvme;
    status.opcode = commands_[cid].opcode;
    status.queue = config_.kind;
    if (slot.transfer == kNoTransfer) {
        slot.response.cqe = cqe;  // low-level requests hand the whole CQE back
    } else if (status.nvme.type() == wire::StatusCodeType::path &&
               outage_ == OutagePolicy::hold) [[unlikely]] {
        // This path cannot serve the namespace now (ANA inaccessible, a path
        // error): the controller moves to another path and the transfer is
        // held for the replay there, as the kernel's multipath retries it.
        fail(TransportErrc::path_error, ENOLINK, "a path-related status (SCT 3) from the target");
        return false;
    }
    complete_slot(cid, status);
    return true;
}

void RdmaQueue::complete_one_command(std::uint16_t cid, Slot& slot) noexcept {
    slot.flags = 0;
    TransferRecord& record = transfers_[cid];
    if (!record.internal && sink_ != sink_end_) [[likely]] {
        // Straight to the caller polling: the ID is free again at once.
        sink_->user_data = record.user_data;
        sink_->status = kSucceeded;
        ++sink_;
        cids_.put(cid);
        NVMEOF_INVARIANT(open_transfers_ > 0, "a transfer handed back was counted open");
        --open_transfers_;
        return;
    }
    record.status = CompletionStatus{};
    set_pieces_left(record, 0);
    ++record_slots_idle_;  // the record keeps its ID until handed back
    finish_transfer(cid);
}

std::size_t RdmaQueue::take_completions(std::span<Completion> out, std::size_t& failed) noexcept {
    // Those finished earlier first; what finishes while polling goes straight
    // into the rest of `out` (the ring takes any beyond it).
    failed = 0;
    const std::size_t earlier = finished_count_ != 0 ? hand_back(out, failed) : 0;
    if (earlier != 0 && earlier == out.size()) {
        return earlier;
    }
    sink_ = out.data() + earlier;
    sink_end_ = out.data() + out.size();
    sunk_failed_ = 0;
    poll_cq();
    const auto n = static_cast<std::size_t>(sink_ - out.data());
    sink_ = sink_end_ = nullptr;
    failed += sunk_failed_;
    if (finished_count_ != 0 && n < out.size()) [[unlikely]] {
        return n + hand_back(out.subspan(n), failed);  // finished into the ring (reads into GPU memory)
    }
    return n;
}

std::size_t RdmaQueue::hand_back(std::span<Completion> out, std::size_t& failed) noexcept {
    if (gpu_reads_finished_ != 0) [[unlikely]] {
        flush_gpu_reads(std::min(out.size(), finished_count_));
    }
    const std::size_t n = std::min(out.size(), finished_count_);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t index = finished_[finished_head_];
        finished_head_ = (finished_head_ + 1) & ring_mask_;
        out[i].user_data = transfers_[index].user_data;
        out[i].status = transfers_[index].status;
        failed += out[i].status.ok() ? 0 : 1;
        release_record(index);
    }
    finished_count_ -= n;
    return n;
}

}  // namespace nvmeof::detail
