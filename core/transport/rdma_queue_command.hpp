// Building one command in its slot and sending it: what the common path does
// for a read or write in one command (rdma_queue_datapath.cpp), and what a
// namespace with metadata's one-command path does with PRINFO and tags added
// (rdma_queue_protection.cpp). Defined here so that both inline them.
#pragma once

#include <cerrno>

#include "memory/memory_record.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/invariant.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_completion.hpp"

namespace nvmeof::detail {

inline void set_slba(wire::Sqe& sqe, std::uint64_t slba) {
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> wire::kSlbaHighShift);
}

// The storage tag's part of a command's storage and reference space; none
// without a storage tag (the space is the reference tag alone).
inline wire::CommandTagWords storage_words(const NamespaceRef& ns, const Protection& p) noexcept {
    return ns.format.storage_tag_bits == 0 ? wire::CommandTagWords{}
                                           : wire::command_tag_words(ns.format, p.storage_tag, 0);
}

// A one-command transfer's PRINFO and tag words (all zero where the namespace
// has no PI: the controller ignores PRINFO there, and so does the host).
inline CommandProtection command_protection(const NamespaceRef& ns, const Transfer& t) noexcept {
    if (!ns.pi) [[unlikely]] {
        return {};
    }
    const Protection& p = t.protection;
    return {wire::prinfo_cdw12_bits(p.prinfo),
            wire::with_reftag(storage_words(ns, p), initial_reftag(p, t.slba) & ns.reftag_mask),
            wire::apptag_cdw15(p.apptag, p.apptag_mask)};
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

void RdmaQueue::fill_data_command(Slot& slot, wire::Sqe& sqe, std::uint16_t cid, Op op,
                                  std::uint32_t nsid, std::uint64_t slba, std::uint64_t blocks,
                                  std::uint64_t address, std::uint32_t bytes, std::uint32_t rkey,
                                  std::uint32_t lkey,
                                  const CommandProtection& protection) const noexcept {
    const auto opcode = static_cast<std::uint8_t>(opcode_of(op));
    sqe.opcode = opcode;
    sqe.flags = wire::kCommandFlagsSgl;
    sqe.command_id = cid;
    sqe.nsid = nsid;
    sqe.cdw2 = protection.words.cdw2;
    sqe.cdw3 = protection.words.cdw3;
    sqe.metadata_pointer = 0;
    // A write's or compare's data (sends_data: the opcode's direction says it).
    if (wire::direction_of(opcode) == wire::DataDirection::host_to_controller &&
        bytes <= in_capsule_limit_) {
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
    sqe.cdw12 = static_cast<std::uint32_t>(blocks - 1) | protection.cdw12_bits;
    sqe.cdw13 = 0;
    sqe.cdw14 = protection.words.cdw14;
    sqe.cdw15 = protection.cdw15;
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

template <bool kWithMetadata>
SubmitResult RdmaQueue::submit_one_command(const NamespaceRef& ns, const Transfer& t,
                                           const MemoryRecord* memory, std::uint64_t bytes,
                                           bool internal, std::uint32_t* transfer_index,
                                           Post post) noexcept {
    const CommandProtection protection =
        kWithMetadata ? command_protection(ns, t) : CommandProtection{};
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
                      static_cast<std::uint32_t>(bytes), memory->rkey, memory->lkey, protection);
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

}  // namespace nvmeof::detail
