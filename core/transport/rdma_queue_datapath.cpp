// RdmaQueue datapath: submit, poll, complete, fail (the per-I/O path is
// described in rdma_queue.hpp). No allocation, no syscall, no exception and no
// clock read per request on the steady-state path.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "memory/memory_record.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/log.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Copied whole (two stores) rather than built field by field.
constexpr CompletionStatus kSucceeded{};

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

// Block sizes are powers of two (LBADS is a log2): sizes shift instead of divide.
std::uint32_t lba_shift_of(const NamespaceRef& ns) noexcept { return ns.lba_shift; }

}  // namespace

std::size_t RdmaQueue::pieces(const NamespaceRef& ns, const Transfer& t) const noexcept {
    if (t.op == Op::flush) {
        return 1;
    }
    const std::uint64_t per_piece = blocks_per_piece(lba_shift_of(ns), t.op);
    if (t.blocks <= per_piece) [[likely]] {
        return t.blocks == 0 ? 0 : 1;
    }
    return static_cast<std::size_t>(plan_split(t.blocks, per_piece).pieces);
}

std::uint64_t RdmaQueue::blocks_per_piece(std::uint32_t lba_shift, Op op) const noexcept {
    return has_data(op) ? std::min<std::uint64_t>(max_transfer_bytes_ >> lba_shift,
                                                  wire::kMaxBlocksPerCommand)
                        : std::uint64_t{wire::kMaxBlocksPerCommand};
}

void RdmaQueue::prepare_send(Slot& slot, bool with_deadline) noexcept {
    // Built in post order (commit() posts the deferred chain first), so this
    // position is the SEND's place in the send queue.
    const bool ends_interval = (++send_position_ & (kSendsPerSignal - 1)) == 0;
    NVMEOF_INVARIANT(sends_in_queue() <= send_queue_capacity_,
                     "a SEND built with no send queue entry free");
    slot.wr.send_flags = ends_interval ? IBV_SEND_SIGNALED : 0;
    if (with_deadline) {
        slot.stamp = stamps_taken_;  // the next clock read gives it its deadline
    } else {
        slot.flags |= kNoDeadline;
    }
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
                              std::uint32_t lba_shift) const noexcept {
    if (t.op != Op::flush &&
        (t.blocks == 0 || t.slba > ns.size_lbas || t.blocks > ns.size_lbas - t.slba)) {
        return ERANGE;
    }
    if (!has_data(t.op)) {
        return 0;
    }
    if (memory == nullptr || !memory->alive() || memory->owner != owner_) {
        return EBADF;
    }
    // The first test keeps the shift of the second from overflowing.
    if (t.blocks > (memory->length >> lba_shift) || t.offset > memory->length ||
        (t.blocks << lba_shift) > memory->length - t.offset) {
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

void RdmaQueue::fill_data_command(Slot& slot, wire::Sqe& sqe, std::uint16_t cid, Op op,
                                  std::uint32_t nsid, std::uint64_t slba, std::uint64_t blocks,
                                  std::uint64_t address, std::uint32_t bytes, std::uint32_t rkey,
                                  std::uint32_t lkey) const noexcept {
    sqe.opcode = static_cast<std::uint8_t>(op == Op::read ? wire::IoOpcode::read : wire::IoOpcode::write);
    sqe.flags = wire::kCommandFlagsSgl;
    sqe.command_id = cid;
    sqe.nsid = nsid;
    sqe.cdw2 = 0;
    sqe.cdw3 = 0;
    sqe.metadata_pointer = 0;
    if (op == Op::write && bytes <= in_capsule_limit_) {
        // The data rides in the SEND, straight from the caller's buffer.
        sqe.dptr = wire::in_capsule_data(0, bytes);
        slot.sge[1] = ibv_sge{address, bytes, lkey};
        slot.wr.num_sge = Slot::kMaxSges;
        slot.in_capsule_rkey = rkey;
    } else {
        sqe.dptr = wire::keyed_data_block(address, bytes, rkey);
        slot.wr.num_sge = 1;
    }
    set_slba(sqe, slba);
    sqe.cdw12 = static_cast<std::uint32_t>(blocks - 1);
    sqe.cdw13 = 0;
    sqe.cdw14 = 0;
    sqe.cdw15 = 0;
}

void RdmaQueue::fill_dataless_command(Slot& slot, wire::Sqe& sqe, std::uint16_t cid, Op op,
                                      std::uint32_t nsid, std::uint64_t slba,
                                      std::uint64_t blocks) noexcept {
    // Off the common path: the wire builders (their checks hold: a piece is
    // 1..kMaxBlocksPerCommand blocks, one range).
    switch (op) {
        case Op::deallocate: {
            wire::DsmRange& range = dsm_ranges_[cid];
            range = wire::DsmRange{0, static_cast<std::uint32_t>(blocks), slba};
            sqe = wire::dataset_management_command(
                nsid, 1, wire::kDsmAttributeDeallocate,
                wire::RemoteBuffer{reinterpret_cast<std::uint64_t>(&range), sizeof range, dsm_mr_->rkey});
            break;
        }
        case Op::write_zeroes:
            sqe = wire::write_zeroes_command(nsid, slba, static_cast<std::uint32_t>(blocks));
            break;
        case Op::flush:
        case Op::read:  // not here: fill_data_command
        case Op::write:
            sqe = wire::flush_command(nsid);
            break;
    }
    sqe.command_id = cid;
    slot.wr.num_sge = 1;
}

void RdmaQueue::defer(ibv_send_wr& first, ibv_send_wr& last, std::uint32_t count) noexcept {
    // Anything deferred before goes out first, in order.
    last.next = nullptr;
    if (deferred_tail_ != nullptr) {
        deferred_tail_->next = &first;
    } else {
        deferred_head_ = &first;
    }
    deferred_tail_ = &last;
    deferred_count_ += count;
}

SubmitResult RdmaQueue::submit(const NamespaceRef& ns, const Transfer& t, Post post) noexcept {
    return submit_one(ns, t, false, nullptr, post);
}

SubmitResult RdmaQueue::submit_transfer(const NamespaceRef& ns, const Transfer& t, bool internal,
                                        std::uint32_t* transfer_index, Post post) noexcept {
    return submit_one(ns, t, internal, transfer_index, post);
}

SubmitResult RdmaQueue::submit_one(const NamespaceRef& ns, const Transfer& t, bool internal,
                                   std::uint32_t* transfer_index, Post post) noexcept {
    if (state_ != QueueState::live) [[unlikely]] {
        if (outage_ == OutagePolicy::hold) {
            return SubmitResult::busy;  // reconnecting: the transfer waits in the caller
        }
        const TransportErrc code = failure_ != TransportErrc::none ? failure_ : TransportErrc::closed;
        return refuse(SubmitResult::failed, code, failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN, t.op);
    }
    const std::uint32_t lba_shift = lba_shift_of(ns);
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    // The common case: a read or write of host memory in one command, with an
    // ID and a send queue entry free and nothing waiting before it. Its checks
    // are check_transfer()'s, cheaper for one command (at most
    // kMaxBlocksPerCommand blocks: no shift overflows; host_owner is set only
    // while host memory is registered, and owner_ is never null); anything
    // else, a refusal included, takes the general path, which checks in full.
    const std::uint64_t bytes = t.blocks << lba_shift;
    if (!has_data(t.op) || t.blocks - 1 >= wire::kMaxBlocksPerCommand ||
        bytes > max_transfer_bytes_ || t.slba >= ns.size_lbas ||
        t.blocks > ns.size_lbas - t.slba || memory == nullptr || memory->host_owner != owner_ ||
        t.offset > memory->length || bytes > memory->length - t.offset || waiting_count_ != 0 ||
        cids_.available() == 0 || send_room() == 0) [[unlikely]] {
        return submit_general(ns, t, internal, transfer_index, post);
    }
    const std::uint16_t tid = cids_.take();
    ++open_transfers_;
    // The record of a one-command transfer: its status is written when it
    // finishes, its GPU ordering is never set (host memory only).
    TransferRecord& record = transfers_[tid];
    NVMEOF_INVARIANT(record.pieces_left <= 1 && !record.held && slots_[tid].flags == 0,
                     "a free command ID whose slot or record is still in use");
    record.user_data = t.user_data;
    record.sequence = next_sequence_++;
    record.pieces_left = 1;  // from 0, or 1 left by the sink (see set_pieces_left)
    record.op = t.op;
    record.internal = internal;
    record.held = false;
    if (transfer_index != nullptr) {
        *transfer_index = tid;
    }
    Slot& slot = slots_[tid];
    fill_data_command(slot, commands_[tid], tid, t.op, ns.nsid, t.slba, t.blocks,
                      reinterpret_cast<std::uint64_t>(memory->address) + t.offset,
                      static_cast<std::uint32_t>(bytes), memory->rkey, memory->lkey);
    slot.flags = kInFlight;
    slot.transfer = tid;
    prepare_send(slot);
    if (post == Post::now && deferred_head_ == nullptr) {
        slot.wr.next = nullptr;
        return post_chain(&slot.wr);  // nothing deferred to go first
    }
    defer(slot.wr, slot.wr, 1);
    return post == Post::now ? commit_queued() : SubmitResult::queued;
}

SubmitResult RdmaQueue::commit_queued() noexcept {
    commit();
    return SubmitResult::queued;
}

SubmitResult RdmaQueue::submit_general(const NamespaceRef& ns, const Transfer& t, bool internal,
                                       std::uint32_t* transfer_index, Post post) noexcept {
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    if (const int error = check_transfer(ns, t, memory, lba_shift_of(ns)); error != 0) {
        return refuse(SubmitResult::invalid, TransportErrc::invalid_argument, error, t.op);
    }
    if (open_transfers_ >= capacity()) {
        return SubmitResult::busy;  // capacity() transfers in progress
    }
    const std::uint32_t lba_shift = lba_shift_of(ns);
    const std::uint64_t per_piece = blocks_per_piece(lba_shift, t.op);
    const std::size_t count =
        t.op == Op::flush || t.blocks <= per_piece ? 1 : plan_split(t.blocks, per_piece).pieces;
    GpuOrdering* gpu_read = nullptr;
    if (memory != nullptr && memory->kind == MemoryKind::gpu) {
        // The target may read the MR as soon as the command leaves: the GPU's
        // writes to it must be complete first.
        if (t.op == Op::write && memory->ordering && memory->ordering->before_write() != 0) {
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
    next.lba_shift = lba_shift;
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
            if (has_data(c.op)) {
                const auto bytes = static_cast<std::uint32_t>(blocks << c.lba_shift);
                fill_data_command(slot, sqe, cid, c.op, c.nsid, c.slba, blocks, c.address, bytes,
                                  c.rkey, c.lkey);
                c.address += bytes;
            } else {
                fill_dataless_command(slot, sqe, cid, c.op, c.nsid, c.slba, blocks);
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

void RdmaQueue::fail_waiting(const CompletionStatus& status) noexcept {
    for (; waiting_count_ > 0; --waiting_count_) {
        const std::uint32_t tid = waiting_[waiting_head_];
        waiting_head_ = (waiting_head_ + 1) & ring_mask_;
        TransferRecord& record = transfers_[tid];
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

SubmitResult RdmaQueue::post_chain(ibv_send_wr* head) noexcept {
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp_, head, &bad) != 0) [[unlikely]] {
        // Its pieces complete with the transport error (after the drain, which
        // does not count on completions of what was or was not posted).
        const int error = errno;
        fail(TransportErrc::queue_error, error != 0 ? error : EIO, "ibv_post_send failed");
    }
    return SubmitResult::queued;
}

std::uint16_t RdmaQueue::submit_command(const wire::Sqe& command, Deadline deadline) {
    if (state_ != QueueState::live && state_ != QueueState::connected) {
        throw TransportError(failure_ != TransportErrc::none ? failure_ : TransportErrc::closed,
                             failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN,
                             "qid " + std::to_string(config_.qid) + " is " + queue_state_name(state_));
    }
    if (send_room() == 0) {
        progress();  // the send queue is full of SENDs answered but not yet retired
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
        free_command_slot(slot);
    } else if ((s.flags & kInFlight) != 0) {
        s.flags |= kAbandoned;
    }
}

int RdmaQueue::progress() noexcept {
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
    while (progress() == kPollBatch) {
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

void RdmaQueue::complete_piece(std::uint16_t cid, Slot& slot) noexcept {
    NVMEOF_INVARIANT(slot.transfer != kNoTransfer && (slot.flags & kLowLevel) == 0,
                     "a transfer's piece completed in a low-level slot");
    const std::uint32_t tid = slot.transfer;
    slot.transfer = kNoTransfer;
    slot.flags = 0;
    if (cid != tid) {
        cids_.put(cid);  // a general path's piece
    } else {
        ++record_slots_idle_;  // the record keeps its ID until handed back
    }
    // set_pieces_left's bookkeeping, by hand: a piece is answered per command.
    NVMEOF_INVARIANT(transfers_[tid].pieces_left > 0,
                     "an answer for a transfer with no piece left");
    const std::uint32_t left = --transfers_[tid].pieces_left;
    if (left <= 1) [[unlikely]] {
        if (left == 1) {
            NVMEOF_INVARIANT(transfers_awaiting_several_ > 0,
                             "a record awaiting several pieces is counted");
            --transfers_awaiting_several_;
        } else {
            finish_transfer(tid);
        }
    }
}

void RdmaQueue::complete_slot(std::uint16_t cid, const CompletionStatus& status) noexcept {
    Slot& slot = slots_[cid];
    if (slot.transfer != kNoTransfer) {
        TransferRecord& record = transfers_[slot.transfer];
        if (slot.transfer == cid) {
            record.status = status;  // a one-command transfer's only answer
        } else if (!status.ok() && record.status.ok()) [[unlikely]] {
            record.status = status;  // the first error wins
        }
        complete_piece(cid, slot);
        return;
    }
    NVMEOF_INVARIANT((slot.flags & (kInFlight | kLowLevel)) == (kInFlight | kLowLevel),
                     "a low-level answer for a slot not in flight with a low-level command");
    slot.response.status = status;
    if ((slot.flags & kAbandoned) != 0) {
        slot.flags = 0;
        free_command_slot(cid);
        return;
    }
    slot.flags = kHeld | kLowLevel;
}

void RdmaQueue::finish_transfer(std::uint32_t index) noexcept {
    const TransferRecord& record = transfers_[index];
    if (record.internal) {
        return;  // the blocking caller takes it (take_transfer)
    }
    if (sink_ != sink_end_ && record.gpu_read == nullptr) {
        sink_->user_data = record.user_data;
        sink_->status = record.status;
        ++sink_;
        sunk_failed_ += record.status.ok() ? 0 : 1;
        release_record(index);
        return;
    }
    // Each open transfer has a record and the ring has room for them all.
    NVMEOF_INVARIANT(finished_count_ <= ring_mask_, "the finished ring overflows");
    finished_[(finished_head_ + finished_count_) & ring_mask_] = index;
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
        TransferRecord& record = transfers_[finished_[(finished_head_ + i) & ring_mask_]];
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
        NVMEOF_INVARIANT(gpu_reads_finished_ > 0, "a finished GPU read was counted");
        --gpu_reads_finished_;
    }
}

std::size_t RdmaQueue::reap(std::span<Completion> out, std::size_t& failed) noexcept {
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
    progress();
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

bool RdmaQueue::transfer_finished(std::uint32_t index) const noexcept {
    return index < transfers_.size() && transfers_[index].finished();
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
    release_record(index);
    return status;
}

void RdmaQueue::free_command_slot(std::uint16_t cid) noexcept {
    if (cid != setup_slot()) {
        const bool released = cids_.release(cid);
        NVMEOF_INVARIANT(released, "a low-level request's command ID was handed out by acquire()");
    }
}

void RdmaQueue::release_record(std::uint32_t tid) noexcept {
    NVMEOF_INVARIANT(open_transfers_ > 0, "a transfer handed back was counted open");
    --open_transfers_;
    if (in_record_slot(tid)) {
        cids_.put(static_cast<std::uint16_t>(tid));
        NVMEOF_INVARIANT(record_slots_idle_ > 0, "a finished record's slot counted idle");
        --record_slots_idle_;
    } else {
        general_records_.put(static_cast<std::uint16_t>(tid - slot_count_));
    }
}

void RdmaQueue::check_deadlines(Clock::time_point now) noexcept {
    // Nothing can be due yet; but every slot is seen at least every
    // kStampScanInterval clock reads, so its stamp is read before the ring wraps.
    if (now < earliest_deadline_ && stamps_taken_ - stamps_at_scan_ < kStampScanInterval) {
        return;
    }
    stamps_at_scan_ = stamps_taken_;
    auto earliest = Clock::time_point::max();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& slot = slots_[i];
        if ((slot.flags & (kInFlight | kNoDeadline)) != kInFlight) {
            continue;
        }
        if ((slot.flags & kDeadlineSet) == 0) {
            if (slot.stamp == stamps_taken_) {
                continue;  // built since the last clock read: no deadline yet
            }
            slot.deadline = stamp_deadlines_[slot.stamp & (kStampRing - 1)];
            slot.flags |= kDeadlineSet;
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
    check_counters();  // a scan anyway: now and then while busy, or when quiet
}

// After the QP went to error: every WR still in it completes with a flush
// (a QP in error flushes all outstanding WRs, signalled or not). SENDs that
// completed unsignalled cannot be told from those that will still flush, so,
// as the kernel's ib_drain_qp does, a marker SEND (signalled) is posted on the
// errored QP: the send queue completes in order, so once its flush is in,
// nothing posted before it can still complete or touch memory. Its entry is
// reserved (send_wr_count). Receives are counted instead (every RECV
// completes, successfully or flushed): a marker RECV would not do on Linux's
// rxe, whose userspace provider posts receives without waking the kernel, so
// one posted after the error is never flushed.
void RdmaQueue::drain() noexcept {
    if (!cq_ || qp_ == nullptr) {
        return;
    }
    batch_receives_taken_off();  // a failure while a polled batch is handled
    const auto deadline = Clock::now() + std::min(config_.timeout, kMaxDrainWait);
    ibv_send_wr send_marker{};
    send_marker.wr_id = kDrainMarker;
    send_marker.opcode = IBV_WR_SEND;
    send_marker.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_send = nullptr;
    bool send_pending = ibv_post_send(qp_, &send_marker, &bad_send) == 0;
    if (!send_pending) {
        log_error("qid %u: cannot post the drain marker (%s)", unsigned{config_.qid},
                  std::strerror(errno));
    }
    ibv_wc wc[kPollBatch];
    while (send_pending || receives_outstanding_ > 0) {
        const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
        for (int i = 0; i < n; ++i) {
            send_pending = send_pending && wc[i].wr_id != send_marker.wr_id;
            receives_outstanding_ -= static_cast<std::uint32_t>(wc[i].wr_id >> kRecvTagShift);
        }
        if (n < 0 || (n == 0 && Clock::now() >= deadline)) {
            log_error("qid %u: drain incomplete (%s outstanding)", unsigned{config_.qid},
                      send_pending ? "sends" : "receives");
            receives_outstanding_ = 0;
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
    deferred_head_ = deferred_tail_ = nullptr;  // never posted; failed below with the rest
    deferred_count_ = 0;
    // The target must not touch memory after we report anything: error, then drain.
    if (previous != QueueState::resolving && previous != QueueState::resolved) {
        id_.move_qp_to_error();
        drain();
    }
    const std::size_t held_before = held_count_;
    if (outage_ == OutagePolicy::hold) {
        hold_unfinished();  // a reconnect replays them; low-level requests fail below
    }
    CompletionStatus status;
    status.transport = code;
    status.sys_errno = sys_errno;
    status.queue = config_.kind;
    fail_waiting(status);  // first: a transfer then finishes with its last built piece
    std::size_t failed_commands = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if ((slots_[i].flags & kInFlight) != 0) {
            status.opcode = commands_[i].opcode;
            complete_slot(static_cast<std::uint16_t>(i), status);
            ++failed_commands;
        }
    }
    check_counters();
    // The figures a reader adds up to the controller's "I/Os held" and
    // compares with fio's totals: transfers kept for a replay, commands
    // failed back. A close in an outage (the teardown of the other queues)
    // says so only when it held something.
    const std::size_t newly_held = held_count_ - held_before;
    if (code == TransportErrc::closed) {
        if (newly_held != 0) {
            log_error("qid %u: closed for a reconnect: %zu transfers held for it, %zu commands "
                      "failed back",
                      unsigned{config_.qid}, newly_held, failed_commands);
        }
        return;
    }
    log_error("qid %u: queue failed (%s): %s; %zu transfers held for a reconnect, %zu commands "
              "failed back",
              unsigned{config_.qid}, std::string(transport_errc_name(code)).c_str(), why,
              newly_held, failed_commands);
    if (failure_listener_ != nullptr) {
        failure_listener_->queue_failed(*this);
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
        waiting_head_ = (waiting_head_ + 1) & ring_mask_;
        TransferRecord& record = transfers_[tid];
        const std::uint32_t unbuilt = std::exchange(waiting_next_[tid].unbuilt, 0);
        if (!record.status.ok()) {
            // Already failed by the target: it finishes with that error once its
            // built pieces are failed back (fail() does that next).
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
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& slot = slots_[i];
        if ((slot.flags & kInFlight) == 0 || slot.transfer == kNoTransfer) {
            continue;
        }
        TransferRecord& record = transfers_[slot.transfer];
        const bool record_slot = slot.transfer == i;
        // (A one-command transfer in flight has no answer yet: its record's
        // status is written when it finishes.)
        if (!record_slot && !record.status.ok()) {
            continue;  // already failed by the target: it completes with that error
        }
        if (!record.held) {
            record.held = true;
            ++held_count_;
        }
        slot.flags = 0;
        slot.transfer = kNoTransfer;
        if (record_slot) {
            ++record_slots_idle_;  // kept, with its SQE, for the replay
        } else {
            cids_.put(static_cast<std::uint16_t>(i));  // a general path's piece
        }
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
        record.status = CompletionStatus{};  // held: no piece had failed
        if (!in_record_slot(tid)) {  // the general path's: its start is in origin_
            waiting_next_[tid] = origin_[tid];
        } else {
            waiting_next_[tid] = PieceCursor{};
            waiting_next_[tid].unbuilt = 1;
            waiting_next_[tid].op = record.op;
            waiting_next_[tid].as_built = true;
        }
        set_pieces_left(record, waiting_next_[tid].unbuilt);
        NVMEOF_INVARIANT(waiting_count_ <= ring_mask_, "the waiting ring overflows");
        waiting_[(waiting_head_ + waiting_count_) & ring_mask_] = tid;
        ++waiting_count_;
    }
    held_count_ = 0;
    build_waiting();
    commit();
    check_counters();
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
        record.status.opcode = static_cast<std::uint8_t>(opcode_of(record.op));
        record.status.queue = config_.kind;
        set_pieces_left(record, 0);
        finish_transfer(tid);
        ++count;
    }
    check_counters();
    return count;
}

}  // namespace nvmeof::detail
