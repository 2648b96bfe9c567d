// RdmaQueue::check_counters: what a scan of the slots and records finds,
// against the counters the data path keeps by hand (queue_counts.hpp), and
// the states a slot may be in. Called only in builds with invariants.
#include "transport/queue_counts.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

void RdmaQueue::check_counters_now() const noexcept {
    QueueCounts c;
    c.capacity = capacity();
    c.records = transfers_.size();
    c.ids_outstanding = cids_.outstanding();
    c.general_records_taken = general_records_.outstanding();
    c.record_slots_idle = record_slots_idle_;
    c.open_transfers = open_transfers_;
    c.transfers_awaiting_several = transfers_awaiting_several_;
    c.held = held_count_;
    c.finished = finished_count_;
    c.gpu_reads_finished = gpu_reads_finished_;
    c.waiting = waiting_count_;
    // The pool's slots; the set-up slot after them holds no ID.
    for (std::size_t i = 0; i < capacity(); ++i) {
        const Slot& slot = slots_[i];
        const std::uint8_t flags = slot.flags;
        if ((flags & kInFlight) != 0) {
            NVMEOF_INVARIANT((flags & kHeld) == 0, "a slot both in flight and answered");
            NVMEOF_INVARIANT((flags & kLowLevel) != 0 || slot.transfer != kNoTransfer,
                             "a transfer's piece in flight names its transfer");
            NVMEOF_INVARIANT((flags & kAbandoned) == 0 || (flags & kLowLevel) != 0,
                             "only a low-level request is abandoned");
            ++c.slots_in_flight;
            c.record_slots_in_flight += slot.transfer == i ? 1 : 0;
        } else if ((flags & kHeld) != 0) {
            NVMEOF_INVARIANT(flags == (kHeld | kLowLevel),
                             "an answered slot holds a low-level request's answer only");
            ++c.low_level_answered;
        } else {
            NVMEOF_INVARIANT(flags == 0, "a slot neither in flight nor answered has no flags");
        }
    }
    for (const TransferRecord& record : transfers_) {
        c.records_awaiting_several += record.pieces_left >= 2 ? 1 : 0;
        c.records_held += record.held ? 1 : 0;
    }
    check_queue_counts(c);
    NVMEOF_INVARIANT(sends_in_queue() <= send_queue_capacity_,
                     "more SENDs in the send queue than it has entries");
    NVMEOF_INVARIANT((deferred_head_ == nullptr) == (deferred_count_ == 0),
                     "the deferred count matches the deferred chain");
}

}  // namespace nvmeof::detail
