// RdmaQueue datapath: submit, poll, complete, fail. No allocation, no syscall
// and no exception on the steady-state path (clock reads are vDSO).
#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

#include "host/memory_record.hpp"
#include "host/negotiation.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/log.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {
namespace {

using Clock = std::chrono::steady_clock;

void set_slba(wire::Sqe& sqe, std::uint64_t slba) {
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> wire::kSlbaHighShift);
}

wire::IoOpcode opcode_of(Op op) {
    switch (op) {
        case Op::read: return wire::IoOpcode::read;
        case Op::write: return wire::IoOpcode::write;
        case Op::flush: return wire::IoOpcode::flush;
        case Op::write_zeroes: return wire::IoOpcode::write_zeroes;
        case Op::deallocate: return wire::IoOpcode::dataset_management;
    }
    return wire::IoOpcode::flush;
}

bool has_data(Op op) { return op == Op::read || op == Op::write; }

}  // namespace

bool RdmaQueue::post_receive(std::uint32_t index) noexcept {
    ibv_recv_wr* bad = nullptr;
    recv_wrs_[index].next = nullptr;
    if (ibv_post_recv(qp_, &recv_wrs_[index], &bad) != 0) {
        return false;
    }
    ++receives_posted_;
    return true;
}

std::size_t RdmaQueue::pieces(const NamespaceRef& ns, const Transfer& t) const noexcept {
    if (t.op == Op::flush) {
        return 1;
    }
    return static_cast<std::size_t>(plan_split(t.blocks, blocks_per_piece(ns, t.op)).pieces);
}

std::uint64_t RdmaQueue::blocks_per_piece(const NamespaceRef& ns, Op op) const noexcept {
    return has_data(op) ? max_blocks_per_command(max_transfer_bytes_, ns.lba_size)
                        : std::uint64_t{wire::kMaxBlocksPerCommand};
}

SubmitResult RdmaQueue::refuse(SubmitResult result, TransportErrc code, int sys_errno, Op op) noexcept {
    last_error_ = CompletionStatus{};
    last_error_.transport = code;
    last_error_.sys_errno = sys_errno;
    last_error_.opcode = static_cast<std::uint8_t>(opcode_of(op));
    last_error_.queue = config_.kind;
    return result;
}

SubmitResult RdmaQueue::submit_transfer(const NamespaceRef& ns, const Transfer& t, bool internal,
                                        std::uint32_t* transfer_index, Post post) noexcept {
    if (state_ != QueueState::live) {
        if (outage_ == OutagePolicy::hold) [[unlikely]] {
            return SubmitResult::busy;  // reconnecting: the transfer waits in the caller
        }
        const TransportErrc code = failure_ != TransportErrc::none ? failure_ : TransportErrc::closed;
        return refuse(SubmitResult::failed, code, failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN, t.op);
    }
    auto invalid = [&](int error) {
        return refuse(SubmitResult::invalid, TransportErrc::invalid_argument, error, t.op);
    };
    const MemoryRecord* memory = nullptr;
    if (t.op != Op::flush) {
        if (t.blocks == 0 || t.slba > ns.size_lbas || t.blocks > ns.size_lbas - t.slba) {
            return invalid(ERANGE);
        }
    }
    if (has_data(t.op)) {
        memory = t.memory != nullptr ? t.memory->record() : nullptr;
        if (memory == nullptr || !memory->alive() || memory->owner != owner_) {
            return invalid(EBADF);
        }
        const std::uint64_t bytes = t.blocks * ns.lba_size;
        if (t.blocks > memory->length / ns.lba_size || t.offset > memory->length ||
            bytes > memory->length - t.offset) {
            return invalid(EFAULT);
        }
    }
    const std::size_t count = pieces(ns, t);
    if (transfer_ids_.available() == 0) {
        return SubmitResult::busy;
    }
    GpuOrdering* gpu_read = nullptr;
    if (memory != nullptr && memory->kind == MemoryKind::gpu) [[unlikely]] {
        // The target may read the MR as soon as the command leaves: the GPU's
        // writes to it must be complete first.
        if (t.op == Op::write && memory->ordering && memory->ordering->before_write() != 0) {
            return refuse(SubmitResult::invalid, TransportErrc::queue_error, EIO, t.op);
        }
        if (t.op == Op::read) {
            gpu_read = memory->ordering.get();
        }
    }

    std::uint16_t tid = 0;
    transfer_ids_.acquire(tid);
    TransferRecord& record = transfers_[tid];
    record = TransferRecord{};
    record.user_data = t.user_data;
    record.pieces_left = static_cast<std::uint32_t>(count);
    record.internal = internal;
    record.gpu_read = gpu_read;
    record.sequence = next_sequence_++;
    PieceCursor next;
    next.slba = t.slba;
    next.blocks_left = t.op == Op::flush ? 0 : t.blocks;
    next.per_piece = blocks_per_piece(ns, t.op);
    if (memory != nullptr) {
        next.address = reinterpret_cast<std::uint64_t>(memory->address) + t.offset;
        next.rkey = memory->rkey;
    }
    next.nsid = ns.nsid;
    next.lba_size = ns.lba_size;
    next.unbuilt = static_cast<std::uint32_t>(count);
    next.op = t.op;
    origin_[tid] = next;
    if (transfer_index != nullptr) {
        *transfer_index = tid;
    }

    if (waiting_count_ == 0 && count <= cids_.available()) [[likely]] {
        build_pieces(tid, next, count, Clock::now() + config_.request_timeout);
    } else {
        // The rest waits behind any transfer already waiting, so pieces leave in order.
        waiting_next_[tid] = next;
        waiting_[(waiting_head_ + waiting_count_) % waiting_.size()] = tid;
        ++waiting_count_;
        build_waiting();
    }
    if (post == Post::now) {
        commit();
    }
    return SubmitResult::queued;
}

void RdmaQueue::build_pieces(std::uint32_t tid, PieceCursor& c, std::size_t count,
                             Clock::time_point deadline) noexcept {
    const std::uint8_t opcode = static_cast<std::uint8_t>(opcode_of(c.op));
    Slot* previous = nullptr;
    Slot* first = nullptr;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t cid = 0;
        cids_.acquire(cid);
        const std::uint64_t blocks = std::min(c.per_piece, c.blocks_left);
        wire::Sqe& sqe = commands_[cid];
        sqe = wire::make_sqe(opcode, c.nsid);
        sqe.command_id = cid;
        switch (c.op) {
            case Op::read:
            case Op::write: {
                const std::uint64_t bytes = blocks * c.lba_size;
                sqe.dptr =
                    wire::keyed_data_block(c.address, static_cast<std::uint32_t>(bytes), c.rkey);
                set_slba(sqe, c.slba);
                sqe.cdw12 = static_cast<std::uint32_t>(blocks - 1);
                c.address += bytes;
                break;
            }
            case Op::write_zeroes:
                set_slba(sqe, c.slba);
                sqe.cdw12 = static_cast<std::uint32_t>(blocks - 1);
                break;
            case Op::deallocate: {
                wire::DsmRange& range = dsm_ranges_[cid];
                range = wire::DsmRange{0, static_cast<std::uint32_t>(blocks), c.slba};
                sqe.dptr = wire::keyed_data_block(reinterpret_cast<std::uint64_t>(&range),
                                                  sizeof range, dsm_mr_->rkey);
                sqe.cdw10 = 0;  // one range, 0's based
                sqe.cdw11 = wire::kDsmAttributeDeallocate;
                break;
            }
            case Op::flush:
                break;
        }
        c.slba += blocks;
        c.blocks_left -= blocks;
        --c.unbuilt;
        Slot& slot = slots_[cid];
        slot.flags = kInFlight;
        slot.transfer = tid;
        slot.deadline = deadline;
        slot.wr.next = nullptr;
        if (previous != nullptr) {
            previous->wr.next = &slot.wr;
        } else {
            first = &slot;
        }
        previous = &slot;
    }
    if (first == nullptr) {
        return;
    }
    earliest_deadline_ = std::min(earliest_deadline_, deadline);

    // A transfer's pieces go out in one post: they reach the target together.
    // Deferred ones wait for commit(); anything deferred before goes out first, in order.
    if (deferred_tail_ != nullptr) {
        deferred_tail_->next = &first->wr;
    } else {
        deferred_head_ = &first->wr;
    }
    deferred_tail_ = &previous->wr;
    deferred_count_ += static_cast<std::uint32_t>(count);
}

void RdmaQueue::build_waiting() noexcept {
    if (cids_.available() == 0) {
        return;
    }
    const auto deadline = Clock::now() + config_.request_timeout;
    while (waiting_count_ > 0 && cids_.available() > 0) {
        const std::uint32_t tid = waiting_[waiting_head_];
        PieceCursor& c = waiting_next_[tid];
        build_pieces(tid, c, std::min<std::size_t>(c.unbuilt, cids_.available()), deadline);
        if (c.unbuilt == 0) {
            waiting_head_ = (waiting_head_ + 1) % waiting_.size();
            --waiting_count_;
        }
    }
}

void RdmaQueue::fail_waiting(const CompletionStatus& status) noexcept {
    for (; waiting_count_ > 0; --waiting_count_) {
        const std::uint32_t tid = waiting_[waiting_head_];
        waiting_head_ = (waiting_head_ + 1) % waiting_.size();
        TransferRecord& record = transfers_[tid];
        if (record.status.ok()) {
            record.status = status;
            record.status.opcode = static_cast<std::uint8_t>(opcode_of(waiting_next_[tid].op));
        }
        record.pieces_left -= std::exchange(waiting_next_[tid].unbuilt, 0);
        if (record.pieces_left == 0) {
            finish_transfer(tid);
        }
    }
    waiting_head_ = 0;
}

void RdmaQueue::commit() noexcept {
    if (deferred_head_ == nullptr || state_ != QueueState::live) {
        return;
    }
    ibv_send_wr* head = std::exchange(deferred_head_, nullptr);
    deferred_tail_ = nullptr;
    post_chain(head, std::exchange(deferred_count_, 0));
}

void RdmaQueue::post_chain(ibv_send_wr* head, std::uint32_t count) noexcept {
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp_, head, &bad) != 0) {
        const int error = errno;
        std::uint32_t posted = 0;
        for (ibv_send_wr* wr = head; wr != nullptr && wr != bad; wr = wr->next) {
            ++posted;
        }
        sends_posted_ += posted;
        for (ibv_send_wr* wr = bad; wr != nullptr; wr = wr->next) {
            slots_[wr->wr_id].flags |= kSendDone;  // never posted: no completion will come
        }
        // Its pieces complete with the transport error.
        fail(TransportErrc::queue_error, error != 0 ? error : EIO, "ibv_post_send failed");
        return;
    }
    sends_posted_ += count;
}

std::uint16_t RdmaQueue::submit_command(const wire::Sqe& command, Deadline deadline) {
    if (state_ != QueueState::live && state_ != QueueState::connected) {
        throw TransportError(failure_ != TransportErrc::none ? failure_ : TransportErrc::closed,
                             failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN,
                             "qid " + std::to_string(config_.qid) + " is " + queue_state_name(state_));
    }
    std::uint16_t cid = 0;
    if (!cids_.acquire(cid)) {
        throw TransportError(TransportErrc::busy, EBUSY,
                             "qid " + std::to_string(config_.qid) + ": no free command slot");
    }
    commands_[cid] = command;
    commands_[cid].command_id = cid;
    Slot& slot = slots_[cid];
    slot.response = Response{};
    slot.response.command = commands_[cid];
    slot.flags = kInFlight | kLowLevel;
    slot.transfer = kNoTransfer;
    slot.wr.next = nullptr;
    if (deadline == Deadline::none) {
        slot.deadline = Clock::time_point::max();  // answered only when an event occurs
    } else {
        slot.deadline = Clock::now() + config_.request_timeout;
        earliest_deadline_ = std::min(earliest_deadline_, slot.deadline);
    }
    commit();
    post_chain(&slot.wr, 1);
    return cid;
}

bool RdmaQueue::slot_done(std::uint16_t slot) const noexcept {
    return slot < slots_.size() && (slots_[slot].flags & kHeld) != 0;
}

const Response& RdmaQueue::slot_response(std::uint16_t slot) const noexcept {
    return slots_[slot].response;
}

void RdmaQueue::release_request(std::uint16_t slot) noexcept {
    if (slot >= slots_.size()) {
        return;
    }
    Slot& s = slots_[slot];
    if ((s.flags & kHeld) != 0) {
        s.flags = 0;
        cids_.release(slot);
    } else if ((s.flags & kInFlight) != 0) {
        s.flags |= kAbandoned;
    }
}

void RdmaQueue::account_polled(const ibv_wc* wc, int n) noexcept {
    for (int i = 0; i < n; ++i) {
        if ((wc[i].wr_id & kRecvTag) != 0) {
            --receives_posted_;
        } else {
            --sends_posted_;
        }
    }
}

int RdmaQueue::progress() noexcept {
    if (!cq_ || state_ == QueueState::failed || state_ == QueueState::closed) {
        return 0;
    }
    ibv_wc wc[kPollBatch];
    const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    // Account the whole batch first: if a completion fails the queue, the drain
    // must not wait for entries already taken off the CQ.
    account_polled(wc, n);
    for (int i = 0; i < n && (state_ == QueueState::live || state_ == QueueState::connected); ++i) {
        handle_completion(wc[i]);
    }
    if (n < 0) {
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
    if (cids_.outstanding() > 0 && state_ != QueueState::failed &&
        (n == 0 || ++busy_polls_since_deadline_check_ >= kDeadlineCheckInterval)) {
        busy_polls_since_deadline_check_ = 0;
        check_deadlines();
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
    while (progress() == kPollBatch) {
    }
    return finished_count_ == 0 && !failed();
}

void RdmaQueue::handle_completion(const ibv_wc& wc) noexcept {
    const bool is_receive = (wc.wr_id & kRecvTag) != 0;
    if (wc.status != IBV_WC_SUCCESS) {
        log_error("qid %u: %s completion failed: %s (vendor error 0x%x)", unsigned{config_.qid},
                  is_receive ? "RECV" : "SEND", ibv_wc_status_str(wc.status), wc.vendor_err);
        if (!is_receive && wc.wr_id < slots_.size()) {
            slots_[wc.wr_id].flags |= kSendDone;
        }
        // Retry exceeded (peer gone) or a flush we did not ask for (the connection
        // moved the QP to error): the connection is lost. Anything else is a QP error.
        const bool lost = wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR;
        fail(lost ? TransportErrc::disconnected : TransportErrc::queue_error, lost ? ECONNRESET : EIO,
             ibv_wc_status_str(wc.status));
        return;
    }
    if (is_receive) {
        handle_response(static_cast<std::uint32_t>(wc.wr_id & ~kRecvTag), wc.byte_len);
        return;
    }
    const std::uint64_t cid = wc.wr_id;
    if (cid >= slots_.size() || (slots_[cid].flags & kInFlight) == 0) {
        fail(TransportErrc::protocol_error, EPROTO, "SEND completion for a slot not in flight");
        return;
    }
    Slot& slot = slots_[cid];
    slot.flags |= kSendDone;
    if ((slot.flags & kResponseDone) != 0) {
        finish_slot(static_cast<std::uint16_t>(cid));
    }
}

void RdmaQueue::handle_response(std::uint32_t index, std::uint32_t byte_len) noexcept {
    if (index >= recv_wrs_.size() || byte_len < sizeof(wire::Cqe)) {
        fail(TransportErrc::protocol_error, EPROTO, "short response capsule");
        return;
    }
    const wire::Cqe cqe = responses_[index];
    if (!post_receive(index)) {
        fail(TransportErrc::queue_error, errno != 0 ? errno : EIO, "ibv_post_recv failed");
        return;
    }
    const std::uint16_t cid = cqe.command_id;
    if (!cids_.is_outstanding(cid) || (slots_[cid].flags & kInFlight) == 0 ||
        (slots_[cid].flags & kResponseDone) != 0) {
        log_error("qid %u: response for unknown or duplicate command ID %u", unsigned{config_.qid},
                  unsigned{cid});
        fail(TransportErrc::protocol_error, EPROTO, "unknown or duplicate command ID");
        return;
    }
    Slot& slot = slots_[cid];
    slot.response.cqe = cqe;
    slot.flags |= kResponseDone;
    if ((slot.flags & kSendDone) != 0) {
        finish_slot(cid);
    }
}

void RdmaQueue::finish_slot(std::uint16_t cid) noexcept {
    CompletionStatus status;
    status.nvme = wire::Status::from_cqe_field(slots_[cid].response.cqe.status);
    status.opcode = commands_[cid].opcode;
    status.queue = config_.kind;
    if (status.nvme.type() == wire::StatusCodeType::path && outage_ == OutagePolicy::hold &&
        slots_[cid].transfer != kNoTransfer) [[unlikely]] {
        // This path cannot serve the namespace now (ANA inaccessible, a path
        // error): the controller moves to another path and the transfer is
        // held for the replay there, as the kernel's multipath retries it.
        fail(TransportErrc::path_error, ENOLINK, "a path-related status (SCT 3) from the target");
        return;
    }
    complete_slot(cid, status);
}

void RdmaQueue::complete_slot(std::uint16_t cid, const CompletionStatus& status) noexcept {
    Slot& slot = slots_[cid];
    slot.response.status = status;
    if (slot.transfer != kNoTransfer) {
        TransferRecord& record = transfers_[slot.transfer];
        if (record.status.ok() && !status.ok()) {
            record.status = status;  // the first error wins
        }
        const std::uint32_t tid = slot.transfer;
        slot.transfer = kNoTransfer;
        slot.flags = 0;
        cids_.release(cid);
        if (--record.pieces_left == 0) {
            finish_transfer(tid);
        }
        return;
    }
    if ((slot.flags & kAbandoned) != 0) {
        slot.flags = 0;
        cids_.release(cid);
        return;
    }
    slot.flags = kHeld | kLowLevel;
}

void RdmaQueue::finish_transfer(std::uint32_t index) noexcept {
    TransferRecord& record = transfers_[index];
    record.finished = true;
    if (record.internal) {
        return;
    }
    // At most capacity() transfers exist, so the ring cannot overflow.
    finished_[(finished_head_ + finished_count_) % finished_.size()] = index;
    ++finished_count_;
    if (record.gpu_read != nullptr) [[unlikely]] {
        ++gpu_reads_finished_;
    }
}

void RdmaQueue::gpu_read_failed(CompletionStatus& status, int result) noexcept {
    if (status.ok()) {
        status.transport = TransportErrc::queue_error;
        status.sys_errno = EIO;
        status.opcode = static_cast<std::uint8_t>(opcode_of(Op::read));
        status.queue = wire::QueueKind::io;
    }
    log_error("cuFlushGPUDirectRDMAWrites after a read into GPU memory failed (CUDA error %d)", result);
}

// Before the first `count` finished transfers are handed back: one flush per
// ordering (normally one per batch), for the reads into GPU memory among them.
void RdmaQueue::flush_gpu_reads(std::size_t count) noexcept {
    GpuOrdering* last = nullptr;
    int result = 0;
    for (std::size_t i = 0; i < count; ++i) {
        TransferRecord& record = transfers_[finished_[(finished_head_ + i) % finished_.size()]];
        if (record.gpu_read == nullptr) {
            continue;
        }
        if (record.gpu_read != last) {
            last = record.gpu_read;
            result = last->after_read();
        }
        if (result != 0) {
            gpu_read_failed(record.status, result);
        }
        record.gpu_read = nullptr;
        --gpu_reads_finished_;
    }
}

std::size_t RdmaQueue::reap(std::span<Completion> out) noexcept {
    progress();
    if (gpu_reads_finished_ != 0) [[unlikely]] {
        flush_gpu_reads(std::min(out.size(), finished_count_));
    }
    std::size_t n = 0;
    while (n < out.size() && finished_count_ > 0) {
        const std::uint32_t index = finished_[finished_head_];
        finished_head_ = (finished_head_ + 1) % finished_.size();
        --finished_count_;
        out[n].user_data = transfers_[index].user_data;
        out[n].status = transfers_[index].status;
        transfer_ids_.release(static_cast<std::uint16_t>(index));
        ++n;
    }
    return n;
}

bool RdmaQueue::transfer_finished(std::uint32_t index) const noexcept {
    return index < transfers_.size() && transfers_[index].finished;
}

CompletionStatus RdmaQueue::take_transfer(std::uint32_t index) noexcept {
    CompletionStatus status = transfers_[index].status;
    if (transfers_[index].gpu_read != nullptr) [[unlikely]] {
        // A blocking read into GPU memory: visible to the owner before it returns.
        if (const int result = transfers_[index].gpu_read->after_read(); result != 0) {
            gpu_read_failed(status, result);
        }
    }
    transfers_[index] = TransferRecord{};
    transfer_ids_.release(static_cast<std::uint16_t>(index));
    return status;
}

void RdmaQueue::check_deadlines() noexcept {
    const auto now = Clock::now();
    if (now < earliest_deadline_) {
        return;
    }
    auto earliest = Clock::time_point::max();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if ((slot.flags & kInFlight) == 0) {
            continue;
        }
        if (slot.deadline <= now) {
            log_error("qid %u: command ID %zu (%s) got no answer within %lld ms", unsigned{config_.qid}, i,
                      std::string(wire::command_name(commands_[i], config_.kind)).c_str(),
                      static_cast<long long>(config_.request_timeout.count()));
            fail(TransportErrc::timeout, ETIMEDOUT, "request timed out");
            return;
        }
        earliest = std::min(earliest, slot.deadline);
    }
    earliest_deadline_ = earliest;
}

void RdmaQueue::drain() noexcept {
    if (!cq_) {
        return;
    }
    const auto deadline = Clock::now() + std::min(config_.timeout, kMaxDrainWait);
    ibv_wc wc[kPollBatch];
    while (sends_posted_ > 0 || receives_posted_ > 0) {
        const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
        account_polled(wc, n);
        if (n < 0 || Clock::now() >= deadline) {
            log_error("qid %u: drain incomplete (%u sends, %u receives outstanding)",
                      unsigned{config_.qid}, sends_posted_, receives_posted_);
            return;
        }
        if (n == 0) {
            std::this_thread::yield();
        }
    }
}

void RdmaQueue::fail(TransportErrc code, int sys_errno, const char* why) noexcept {
    if (state_ == QueueState::failed || state_ == QueueState::closed) {
        return;
    }
    const QueueState previous = state_;
    state_ = QueueState::failed;
    failure_ = code;
    failure_errno_ = sys_errno;
    if (code != TransportErrc::closed) {
        log_error("qid %u: queue failed (%s): %s; failing %zu outstanding requests",
                  unsigned{config_.qid}, std::string(transport_errc_name(code)).c_str(), why,
                  cids_.outstanding());
    }
    deferred_head_ = deferred_tail_ = nullptr;  // never posted; failed below with the rest
    deferred_count_ = 0;
    // The target must not touch memory after we report anything: error, then drain.
    if (previous != QueueState::resolving && previous != QueueState::resolved) {
        id_.move_qp_to_error();
        drain();
    }
    if (outage_ == OutagePolicy::hold) {
        hold_unfinished();  // a reconnect replays them; low-level requests fail below
    }
    CompletionStatus status;
    status.transport = code;
    status.sys_errno = sys_errno;
    status.queue = config_.kind;
    fail_waiting(status);  // first: a transfer then finishes with its last built piece
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if ((slots_[i].flags & kInFlight) != 0) {
            status.opcode = commands_[i].opcode;
            complete_slot(static_cast<std::uint16_t>(i), status);
        }
    }
}

// --- outages (a controller reconnecting; off the data path) ---------------

void RdmaQueue::set_outage_policy(OutagePolicy policy) noexcept {
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

void RdmaQueue::hold_unfinished() noexcept {
    // Pieces not yet built: the whole transfer is replayed anyway.
    for (; waiting_count_ > 0; --waiting_count_) {
        const std::uint32_t tid = waiting_[waiting_head_];
        waiting_head_ = (waiting_head_ + 1) % waiting_.size();
        waiting_next_[tid].unbuilt = 0;
        if (transfers_[tid].status.ok() && !transfers_[tid].held) {
            transfers_[tid].held = true;
            ++held_count_;
        }
    }
    waiting_head_ = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& slot = slots_[i];
        if ((slot.flags & kInFlight) == 0 || slot.transfer == kNoTransfer) {
            continue;
        }
        TransferRecord& record = transfers_[slot.transfer];
        if (!record.status.ok()) {
            continue;  // already failed by the target: it completes with that error
        }
        if (!record.held) {
            record.held = true;
            ++held_count_;
        }
        slot.flags = 0;
        slot.transfer = kNoTransfer;
        cids_.release(static_cast<std::uint16_t>(i));
    }
}

std::size_t RdmaQueue::replay_held() noexcept {
    if (held_count_ == 0 || state_ != QueueState::live) {
        return 0;
    }
    std::size_t count = 0;
    for (std::uint32_t tid = 0; tid < transfers_.size(); ++tid) {
        if (transfers_[tid].held) {
            replay_order_[count++] = tid;
        }
    }
    std::sort(replay_order_.begin(), replay_order_.begin() + static_cast<std::ptrdiff_t>(count),
              [&](std::uint32_t a, std::uint32_t b) {
                  return transfers_[a].sequence < transfers_[b].sequence;
              });
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t tid = replay_order_[i];
        TransferRecord& record = transfers_[tid];
        record.held = false;
        record.pieces_left = origin_[tid].unbuilt;
        waiting_next_[tid] = origin_[tid];
        waiting_[(waiting_head_ + waiting_count_) % waiting_.size()] = tid;
        ++waiting_count_;
    }
    held_count_ = 0;
    build_waiting();
    commit();
    return count;
}

std::size_t RdmaQueue::fail_held(TransportErrc code, int sys_errno) noexcept {
    std::size_t count = 0;
    for (std::uint32_t tid = 0; tid < transfers_.size() && held_count_ > 0; ++tid) {
        TransferRecord& record = transfers_[tid];
        if (!record.held) {
            continue;
        }
        record.held = false;
        --held_count_;
        record.status = CompletionStatus{};
        record.status.transport = code;
        record.status.sys_errno = sys_errno;
        record.status.opcode = static_cast<std::uint8_t>(opcode_of(origin_[tid].op));
        record.status.queue = config_.kind;
        record.pieces_left = 0;
        finish_transfer(tid);
        ++count;
    }
    return count;
}

}  // namespace nvmeof::detail
