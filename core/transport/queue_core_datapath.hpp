// QueueCore's per-I/O path (queue_core.hpp describes the core and its
// transport operations): submit, the split of a transfer into pieces and the
// FIFO of transfers waiting for command IDs, the completion of a response,
// and the hand-back into the polling caller's array. Function templates over
// the backend, included by the backend's data path so that every step and
// every transport operation inlines into one path: no allocation, no
// syscall, no exception and no clock read per request on the steady-state
// path.
//
//   submit          checks the transfer. A read or write of host memory in one
//                   command with a cid free and nothing waiting (the common
//                   case) takes one ID, the command's and the transfer's at
//                   once: its SQE is filled in place in the transport's
//                   command buffer and sent (Post::now) or deferred. On a
//                   namespace with metadata the same one command is built by
//                   submit_with_metadata, where the backend's submit sends it
//                   with one test (sized by what the format settles once,
//                   PRINFO and tags set in place), so the plain path tests
//                   nothing more for it. Anything else (split, waiting, other
//                   opcodes, GPU memory) goes through submit_general, whose
//                   transfer takes a record of its own and a cid per piece
//                   (build_pieces), so it can wait for cids;
//   take_completions  hands back finished transfers: those waiting, then what
//                   one backend poll finishes, written straight into the
//                   caller's array;
//   complete_response  a response completes its piece (and, with the last,
//                   the transfer). A finished transfer goes straight into
//                   take_completions()' array, its ID free at once; without
//                   room, polled by anyone else, or a read into GPU memory
//                   (flushed first), it waits in the finished ring for
//                   hand_back.
#pragma once

#include <algorithm>
#include <cerrno>
#include <string>

#include "base/log.hpp"
#include "memory/memory_record.hpp"
#include "transport/queue_core.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof::detail {

namespace queue_core {
// Copied whole (two stores) rather than built field by field.
inline constexpr CompletionStatus kSucceeded{};

// The operations the common path takes: one command of read, write or
// compare. A Zone Append goes the general path, where its LBA is kept.
constexpr bool one_command_op(Op op) noexcept {
    return op == Op::read || op == Op::write || op == Op::compare;
}

// Bytes per block in the transfer's buffer: the data (a power of two), and
// on a namespace with metadata whatever of the metadata travels.
inline std::uint32_t block_bytes_of(const NamespaceRef& ns, const Transfer& t) noexcept {
    return ns.format.metadata_bytes == 0 ? std::uint32_t{1} << ns.lba_shift
                                         : ns.buffer_block_bytes(t.protection);
}
}  // namespace queue_core

inline std::uint64_t QueueCore::blocks_per_piece(std::uint32_t block_bytes, Op op) const noexcept {
    return carries_data(op) ? std::min<std::uint64_t>(max_transfer_bytes_ / block_bytes,
                                                      wire::kMaxBlocksPerCommand)
                            : std::uint64_t{wire::kMaxBlocksPerCommand};
}

inline int QueueCore::check_transfer(const NamespaceRef& ns, const Transfer& t,
                                     const MemoryRecord* memory,
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

inline void QueueCore::start_record(std::uint32_t tid, const Transfer& t, std::uint32_t pieces,
                                    bool internal) noexcept {
    ++open_transfers_;
    TransferRecord& record = transfer_at(tid);  // every field set: no zeroing first
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

inline void QueueCore::release_transfer(std::uint32_t tid) noexcept {
    NVMEOF_INVARIANT(open_transfers_ > 0, "a transfer handed back was counted open");
    --open_transfers_;
    if (tid_is_cid(tid)) {
        cids_.put(static_cast<std::uint16_t>(tid));
        NVMEOF_INVARIANT(kept_cids_ > 0, "a finished transfer's cid counted kept");
        --kept_cids_;
    } else {
        general_tids_.put(static_cast<std::uint16_t>(tid - command_count_));
    }
}

inline void QueueCore::finish_transfer(std::uint32_t tid) noexcept {
    const TransferRecord& record = transfer_at(tid);
    if (record.internal) {
        return;  // the blocking caller takes it (take_transfer)
    }
    if (sink_ != sink_end_ && record.gpu_read == nullptr) {
        sink_->user_data = record.user_data;
        sink_->status = record.status;
        ++sink_;
        sunk_failed_ += record.status.ok() ? 0 : 1;
        release_transfer(tid);
        return;
    }
    // Each open transfer has a record and the ring has room for them all.
    NVMEOF_INVARIANT(finished_count_ <= ring_mask_, "the finished ring overflows");
    finished_[(finished_head_ + finished_count_) & ring_mask_] = tid;
    ++finished_count_;
    if (record.gpu_read != nullptr) [[unlikely]] {
        ++gpu_reads_finished_;
    }
}

inline void QueueCore::complete_piece(std::uint16_t cid, CommandState& command) noexcept {
    NVMEOF_INVARIANT(command.tid != kNoTransfer && (command.flags & kLowLevel) == 0,
                     "a transfer's piece completed in a low-level command");
    const std::uint32_t tid = command.tid;
    command.tid = kNoTransfer;
    command.flags = 0;
    if (cid != tid) {
        cids_.put(cid);  // a general path's piece
    } else {
        ++kept_cids_;  // the transfer keeps its cid until handed back
    }
    // set_pieces_left's bookkeeping, by hand: a piece is answered per command.
    NVMEOF_INVARIANT(transfer_at(tid).pieces_left > 0,
                     "an answer for a transfer with no piece left");
    const std::uint32_t left = --transfer_at(tid).pieces_left;
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

inline void QueueCore::complete_one_command(std::uint16_t cid, CommandState& command) noexcept {
    command.flags = 0;
    TransferRecord& record = transfer_at(cid);
    if (!record.internal && sink_ != sink_end_) [[likely]] {
        // Straight to the caller polling: the ID is free again at once.
        sink_->user_data = record.user_data;
        sink_->status = queue_core::kSucceeded;
        ++sink_;
        cids_.put(cid);
        NVMEOF_INVARIANT(open_transfers_ > 0, "a transfer handed back was counted open");
        --open_transfers_;
        return;
    }
    record.status = CompletionStatus{};
    set_pieces_left(record, 0);
    ++kept_cids_;  // the transfer keeps its cid until handed back
    finish_transfer(cid);
}

inline void QueueCore::complete_command(std::uint16_t cid,
                                        const CompletionStatus& status) noexcept {
    CommandState& command = command_at(cid);
    if (command.tid != kNoTransfer) {
        TransferRecord& record = transfer_at(command.tid);
        if (command.tid == cid) {
            record.status = status;  // a one-command transfer's only answer
        } else if (!status.ok() && record.status.ok()) [[unlikely]] {
            record.status = status;  // the first error wins
        }
        complete_piece(cid, command);
        return;
    }
    if ((command.flags & kMarkedPiece) != 0) [[unlikely]] {
        complete_marked_piece(cid, status, 0);  // failed back (fail_outstanding)
        return;
    }
    NVMEOF_INVARIANT((command.flags & (kInFlight | kLowLevel)) == (kInFlight | kLowLevel),
                     "a low-level answer for a command not in flight as a low-level one");
    responses_[cid].status = status;
    if ((command.flags & kAbandoned) != 0) {
        command.flags = 0;
        free_request_cid(cid);
        return;
    }
    command.flags = kAnswered | kLowLevel;
}

template <QueueBackend B>
bool QueueCore::fits_one_command(B& backend, const NamespaceRef& ns, const Transfer& t,
                                 const MemoryRecord* memory, std::uint64_t bytes) const noexcept {
    return queue_core::one_command_op(t.op) && t.blocks - 1 < wire::kMaxBlocksPerCommand &&
           bytes <= max_transfer_bytes_ && t.slba < ns.size_lbas &&
           t.blocks <= ns.size_lbas - t.slba && memory != nullptr && memory->host_owner == owner_ &&
           t.offset <= memory->length && bytes <= memory->length - t.offset &&
           waiting_count_ == 0 && cids_.available() != 0 && backend.send_room() != 0;
}

template <QueueBackend B>
SubmitResult QueueCore::submit_one(B& backend, const NamespaceRef& ns, const Transfer& t,
                                   std::uint32_t* tid, Post post) noexcept {
    if (state_ != QueueState::live) [[unlikely]] {
        return refuse_not_live(t.op);
    }
    const std::uint32_t lba_shift = ns.lba_shift;
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    // The common case (fits_one_command); anything else, a refusal included,
    // takes the general path, which checks in full.
    const std::uint64_t bytes = t.blocks << lba_shift;
    if (!fits_one_command(backend, ns, t, memory, bytes)) [[unlikely]] {
        return submit_general(backend, ns, t, tid, post);
    }
    return submit_one_command<false>(backend, ns, t, memory, bytes, tid, post);
}

template <QueueBackend B>
SubmitResult QueueCore::submit_with_metadata(B& backend, const NamespaceRef& ns, const Transfer& t,
                                             Post post, std::uint32_t* tid) noexcept {
    // The common case's checks (submit_one), with the blocks' size in bytes
    // as the transfer's PRACT makes it; anything else goes on to the general
    // path, which checks in full and refuses.
    if (state_ != QueueState::live) [[unlikely]] {
        return refuse_not_live(t.op);
    }
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    const std::uint64_t bytes = t.blocks * ns.buffer_block_bytes(t.protection);
    if (fits_one_command(backend, ns, t, memory, bytes)) [[likely]] {
        return submit_one_command<true>(backend, ns, t, memory, bytes, tid, post);
    }
    return submit_general(backend, ns, t, tid, post);
}

template <bool kWithMetadata, QueueBackend B>
SubmitResult QueueCore::submit_one_command(B& backend, const NamespaceRef& ns, const Transfer& t,
                                           const MemoryRecord* memory, std::uint64_t bytes,
                                           std::uint32_t* tid, Post post) noexcept {
    const CommandProtection protection =
        kWithMetadata ? command_protection(ns, t) : CommandProtection{};
    const std::uint16_t cid = cids_.take();
    ++open_transfers_;
    // The record of a one-command transfer: its status is written when it
    // finishes, its GPU ordering is never set (host memory only).
    TransferRecord& record = transfer_at(cid);
    NVMEOF_INVARIANT(record.pieces_left <= 1 && !record.held && command_at(cid).flags == 0,
                     "a free command ID whose command or record is still in use");
    record.user_data = t.user_data;
    record.sequence = next_sequence_++;
    record.pieces_left = 1;  // from 0, or 1 left by the sink (see set_pieces_left)
    record.op = t.op;
    record.internal = tid != nullptr;
    record.held = false;
    if (tid != nullptr) {
        *tid = cid;
    }
    // In this order, so that what is read is read before the SQE's byte-wide
    // stores (which may alias anything) and nothing is loaded twice.
    const std::uint64_t address = reinterpret_cast<std::uint64_t>(memory->address) + t.offset;
    start_command(cid, cid, kInFlight);
    wire::Sqe& sqe = backend.sqe(cid);
    fill_data_command(sqe, cid, t.op, ns.nsid, t.slba, t.blocks, protection);
    backend.set_data(cid, sqe, address, static_cast<std::uint32_t>(bytes), memory->rkey,
                     memory->lkey);
    return backend.send(cid, post);
}

template <QueueBackend B>
SubmitResult QueueCore::submit_general(B& backend, const NamespaceRef& ns, const Transfer& t,
                                       std::uint32_t* tid_out, Post post) noexcept {
    if (t.op == Op::zone_append || ns.ordered_writes) [[unlikely]] {
        // One test: the transfers of every other namespace go on as before.
        return submit_zoned(backend, ns, t, tid_out, post);
    }
    return submit_checked<false>(backend, ns, t, tid_out, post);
}

template <QueueBackend B>
SubmitResult QueueCore::submit_zoned(B& backend, const NamespaceRef& ns, const Transfer& t,
                                     std::uint32_t* tid_out, Post post) noexcept {
    return submit_checked<true>(backend, ns, t, tid_out, post);
}

template <bool kZoned, QueueBackend B>
SubmitResult QueueCore::submit_checked(B& backend, const NamespaceRef& ns, const Transfer& t,
                                       std::uint32_t* tid_out, Post post) noexcept {
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    const std::uint32_t block_bytes = queue_core::block_bytes_of(ns, t);
    if (const int error = check_transfer(ns, t, memory, block_bytes); error != 0) {
        return refuse(SubmitResult::invalid, TransportErrc::invalid_argument, error, t.op);
    }
    if (open_transfers_ >= capacity()) {
        return SubmitResult::busy;  // capacity() transfers in progress
    }
    const std::uint64_t per_piece = blocks_per_piece(block_bytes, t.op);
    const std::size_t count =
        t.op == Op::flush || t.blocks <= per_piece ? 1 : plan_split(t.blocks, per_piece).pieces;
    PieceKind kind = PieceKind::plain;
    if constexpr (kZoned) {
        if (t.op == Op::zone_append) {
            // Never split (the controller picks where the blocks go): one
            // command, within the namespace's Zone Append limit (0 where it
            // is not zoned).
            if (count != 1 || t.blocks * block_bytes > ns.zone_append_max_bytes) {
                return refuse(SubmitResult::invalid, TransportErrc::invalid_argument, EINVAL, t.op);
            }
            kind = PieceKind::append;
        } else if (count > 1 && (t.op == Op::write || t.op == Op::write_zeroes)) {
            // A zone takes them at its write pointer: the first alone, each
            // next once the one before it is answered (ordered_piece_answered).
            kind = PieceKind::ordered;
        }
    }
    return submit_pieces(backend, ns, t, tid_out, post, {block_bytes, per_piece, count}, kind);
}

template <QueueBackend B>
SubmitResult QueueCore::submit_pieces(B& backend, const NamespaceRef& ns, const Transfer& t,
                                      std::uint32_t* tid_out, Post post, const PieceCount& split,
                                      PieceKind kind) noexcept {
    const std::size_t count = split.count;
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    std::uint64_t address =
        memory != nullptr ? reinterpret_cast<std::uint64_t>(memory->address) + t.offset : 0;
    GpuOrdering* gpu_read = nullptr;
    StagedRead staged_read;
    if (memory != nullptr && memory->kind == MemoryKind::gpu) [[unlikely]] {
        if (!prepare_gpu_transfer(*memory, t, t.blocks * split.block_bytes, address, gpu_read,
                                  staged_read)) {
            return refuse(SubmitResult::invalid, TransportErrc::queue_error, EIO, t.op);
        }
    }

    const auto tid = static_cast<std::uint32_t>(command_count_ + general_tids_.take());
    start_record(tid, t, static_cast<std::uint32_t>(count), tid_out != nullptr);
    transfer_at(tid).gpu_read = gpu_read;
    if (gpu_read != nullptr) [[unlikely]] {
        staged_reads_[tid] = staged_read;
    }
    PieceCursor& next = origin_[tid];  // kept as is for a replay; pieces advance a copy
    next.slba = t.slba;
    next.blocks_left = t.op == Op::flush ? 0 : t.blocks;
    next.per_piece = split.per_piece;
    next.address = address;
    next.rkey = memory != nullptr ? memory->rkey : 0;
    next.lkey = memory != nullptr ? memory->lkey : 0;
    next.nsid = ns.nsid;
    next.block_bytes = split.block_bytes;
    set_protection_fields(next, ns, t);
    next.unbuilt = static_cast<std::uint32_t>(count);
    next.op = t.op;
    next.kind = kind;
    if (tid_out != nullptr) {
        *tid_out = tid;
    }

    // A marked transfer (an ordered one, a Zone Append) goes one piece at a time.
    const std::size_t now = kind == PieceKind::plain ? count : 1;
    if (waiting_count_ == 0 && now <= cids_.available() && now <= backend.send_room()) {
        PieceCursor cursor = next;
        if (kind == PieceKind::plain) {
            build_pieces(backend, tid, cursor, count);
        } else {
            build_marked_piece(backend, tid, cursor);
            waiting_next_[tid] = cursor;  // an ordered transfer's rest, unbuilt
        }
    } else {
        // The rest waits behind any transfer already waiting, so pieces leave in order.
        waiting_next_[tid] = next;
        enqueue_waiting(tid);
        build_waiting(backend);
    }
    if (post == Post::now) {
        backend.commit();
    }
    return SubmitResult::queued;
}

// Every piece that does not take the common path is built here.
template <QueueBackend B>
void QueueCore::build_pieces(B& backend, std::uint32_t tid, PieceCursor& c,
                             std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t cid = 0;
        if (c.kind == PieceKind::as_built) {
            cid = static_cast<std::uint16_t>(tid);
            NVMEOF_INVARIANT(kept_cids_ > 0, "a held transfer's cid counted kept");
            --kept_cids_;  // its command in flight again
        } else {
            cid = cids_.take();
        }
        NVMEOF_INVARIANT(command_at(cid).flags == 0, "a piece built at a cid still in use");
        start_command(cid, tid, kInFlight);
        const std::uint64_t blocks = std::min(c.per_piece, c.blocks_left);
        // Apart from slba's update below: two plain updates, not one vector's.
        c.blocks_left -= blocks;
        if (c.kind == PieceKind::as_built) {
            // A replay of a one-command transfer: its command is still built.
            backend.rebuild_as_built(cid);
        } else {
            // Built in place (every field written: the buffer held the cid's
            // previous command).
            wire::Sqe& sqe = backend.sqe(cid);
            if (carries_data(c.op)) {
                const auto bytes = static_cast<std::uint32_t>(blocks * c.block_bytes);
                fill_data_command(sqe, cid, c.op, c.nsid, c.slba, blocks, CommandProtection{});
                backend.set_data(cid, sqe, c.address, bytes, c.rkey, c.lkey);
                c.address += bytes;
            } else {
                backend.build_dataless(cid, c.op, c.nsid, c.slba, blocks);
            }
            if (c.protected_blocks) {
                wire::set_protection(sqe, c.prinfo,
                                     wire::with_reftag(c.storage_words, c.reftag & c.reftag_mask),
                                     c.apptag, c.apptag_mask);
                c.reftag += c.reftag_step * blocks;
            }
        }
        c.slba += blocks;
        --c.unbuilt;
        // A transfer's pieces are deferred together: they go out in one post.
        backend.defer(cid);
    }
}

template <QueueBackend B>
void QueueCore::build_marked_piece(B& backend, std::uint32_t tid, PieceCursor& c) noexcept {
    // Marked after build_pieces, which knows nothing of it: the loop over
    // every other transfer's pieces stays as it was.
    const std::uint16_t cid = cids_.next();
    build_pieces(backend, tid, c, 1);
    CommandState& command = command_at(cid);
    command.flags |= c.kind == PieceKind::ordered ? kOrderedPiece : kKeepsResult;
    command.tid = kNoTransfer;
    marked_tids_[cid] = tid;
}

template <QueueBackend B>
void QueueCore::build_waiting(B& backend) noexcept {
    while (waiting_count_ > 0 && backend.send_room() > 0) {
        const std::uint32_t tid = waiting_[waiting_head_];
        PieceCursor& c = waiting_next_[tid];
        const std::size_t ids =
            c.kind == PieceKind::as_built ? 1 : cids_.available();  // as built: its own cid
        if (ids == 0) {
            return;
        }
        // An ordered transfer sends one piece and leaves the FIFO: its answer
        // puts the transfer back (ordered_piece_answered).
        const bool ordered = c.kind == PieceKind::ordered;
        if (c.kind <= PieceKind::as_built) [[likely]] {
            build_pieces(backend, tid, c,
                         std::min<std::size_t>({c.unbuilt, ids, backend.send_room()}));
        } else {
            build_marked_piece(backend, tid, c);
        }
        if (c.unbuilt == 0 || ordered) {
            waiting_head_ = (waiting_head_ + 1) & ring_mask_;
            --waiting_count_;
        }
    }
}

template <QueueBackend B>
std::uint16_t QueueCore::submit_command(B& backend, const wire::Sqe& command, Deadline deadline) {
    if (state_ != QueueState::live && state_ != QueueState::connected) {
        throw TransportError(
            failure_ != TransportErrc::none ? failure_ : TransportErrc::closed,
            failure_errno_ != 0 ? failure_errno_ : ESHUTDOWN,
            "qid " + std::to_string(config_.qid) + " is " + queue_state_name(state_));
    }
    if (backend.send_room() == 0) {
        backend.poll_cq();  // the transport is full of commands answered but not yet retired
    }
    std::uint16_t cid = 0;
    const bool setting_up = state_ != QueueState::live && command_at(setup_cid()).flags == 0;
    if (setting_up) {
        cid = setup_cid();  // Fabrics Connect, authentication: see size_for
    }
    if (backend.send_room() == 0 || (!setting_up && !cids_.acquire(cid))) {
        throw TransportError(TransportErrc::busy, EBUSY,
                             "qid " + std::to_string(config_.qid) + ": no free command ID");
    }
    wire::Sqe& sqe = backend.sqe(cid);
    sqe = command;
    sqe.command_id = cid;
    NVMEOF_INVARIANT(command_at(cid).flags == 0, "a low-level command built at a cid still in use");
    Response& response = responses_[cid];
    response = Response{};
    response.command = sqe;
    backend.set_no_data(cid);
    start_command(cid, kNoTransfer, kInFlight | kLowLevel, deadline == Deadline::request_timeout);
    backend.send(cid, Post::now);
    return cid;
}

template <QueueBackend B>
std::size_t QueueCore::take_completions(B& backend, std::span<Completion> out,
                                        std::size_t& failed) noexcept {
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
    backend.poll_cq();
    const auto n = static_cast<std::size_t>(sink_ - out.data());
    sink_ = sink_end_ = nullptr;
    failed += sunk_failed_;
    if (finished_count_ != 0 && n < out.size()) [[unlikely]] {
        return n +
               hand_back(out.subspan(n), failed);  // finished into the ring (reads into GPU memory)
    }
    return n;
}

template <QueueBackend B>
bool QueueCore::complete_response(B& backend, const wire::Cqe& cqe) noexcept {
    const std::uint16_t cid = cqe.command_id;
    // In flight implies the ID is handed out (flags clear before an ID frees).
    if (cid >= command_count_ || (command_at(cid).flags & kInFlight) == 0) [[unlikely]] {
        log_error("qid %u: response for unknown or duplicate command ID %u", unsigned{config_.qid},
                  unsigned{cid});
        backend.fail(TransportErrc::protocol_error, EPROTO, "unknown or duplicate command ID");
        return false;
    }
    CommandState& command = command_at(cid);
    const wire::Status nvme = wire::Status::from_cqe_field(cqe.status);
    if (command.tid == cid && nvme.ok()) [[likely]] {
        complete_one_command(cid, command);
        return true;
    }
    if (command.tid != kNoTransfer && nvme.ok()) {
        complete_piece(cid, command);
        return true;
    }
    return complete_with_status(backend, cqe);
}

template <QueueBackend B>
bool QueueCore::complete_with_status(B& backend, const wire::Cqe& cqe) noexcept {
    const std::uint16_t cid = cqe.command_id;
    CommandState& command = command_at(cid);
    CompletionStatus status;
    status.nvme = wire::Status::from_cqe_field(cqe.status);
    status.opcode = backend.sqe(cid).opcode;
    status.queue = config_.kind;
    const bool marked = (command.flags & kMarkedPiece) != 0;
    if (command.tid == kNoTransfer && !marked) {
        responses_[cid].cqe = cqe;  // low-level requests hand the whole CQE back
    } else if (status.nvme.type() == wire::StatusCodeType::path && outage_ == OutagePolicy::hold)
        [[unlikely]] {
        // This path cannot serve the namespace now (ANA inaccessible, a path
        // error): the controller moves to another path and the transfer is
        // held for the replay there, as the kernel's multipath retries it.
        backend.fail(TransportErrc::path_error, ENOLINK,
                     "a path-related status (SCT 3) from the target");
        return false;
    }
    if (marked) [[unlikely]] {
        complete_marked_piece(cid, status, cqe.result64());
        return true;
    }
    complete_command(cid, status);
    return true;
}

template <QueueBackend B>
void QueueCore::after_poll(B& backend, int n, Clock::time_point now) noexcept {
    if (waiting_count_ != 0 && state_ == QueueState::live) [[unlikely]] {
        // IDs freed: the next waiting pieces go out now, unless the caller
        // holds a deferred batch (they join it and leave with its commit()).
        const bool caller_deferred = backend.deferred() != 0;
        build_waiting(backend);
        if (!caller_deferred) {
            backend.commit();
        }
    }
    // Reading the clock on every poll costs more than the poll itself on a busy
    // queue; deadlines only need checking when the transport is quiet, or now
    // and then while completions keep coming (a lost command among many
    // answered ones).
    if (commands_outstanding() && state_ != QueueState::failed &&
        (n == 0 || ++busy_polls_since_deadline_check_ >= kDeadlineCheckInterval)) {
        busy_polls_since_deadline_check_ = 0;
        check_deadlines(backend, now != Clock::time_point{} ? now : Clock::now());
    }
}

}  // namespace nvmeof::detail
