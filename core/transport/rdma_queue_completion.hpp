// How an answered or failed command finishes its slot, and with its last
// piece its transfer: the per-I/O path (rdma_queue_datapath.cpp) does it for
// every response, recovery (rdma_queue_recovery.cpp) for what a failure finds
// in flight. Defined here so that both inline them.
#pragma once

#include <iterator>

#include "nvmeof/wire/io.hpp"
#include "transport/invariant.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

// Each Op's NVMe opcode, by its value: the data path builds every data
// command's SQE with it, and a failed transfer's status names it.
inline constexpr wire::IoOpcode kOpcodeOf[] = {
    wire::IoOpcode::read,
    wire::IoOpcode::write,
    wire::IoOpcode::flush,
    wire::IoOpcode::write_zeroes,
    wire::IoOpcode::dataset_management,
    wire::IoOpcode::compare,
};
static_assert(std::size(kOpcodeOf) == static_cast<std::size_t>(Op::compare) + 1,
              "an opcode for every Op (compare is the last)");

inline wire::IoOpcode opcode_of(Op op) noexcept {
    return kOpcodeOf[static_cast<std::size_t>(op)];
}

inline void RdmaQueue::release_record(std::uint32_t tid) noexcept {
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

inline void RdmaQueue::complete_piece(std::uint16_t cid, Slot& slot) noexcept {
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

inline void RdmaQueue::complete_slot(std::uint16_t cid, const CompletionStatus& status) noexcept {
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

inline void RdmaQueue::finish_transfer(std::uint32_t index) noexcept {
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

}  // namespace nvmeof::detail
