// What the owners of requests take back outside polling: a blocking caller's
// transfer status (take_transfer), a low-level request's response, and the
// slot once its handle lets go.
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_completion.hpp"

namespace nvmeof::detail {

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

}  // namespace nvmeof::detail
