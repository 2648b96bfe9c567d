// RdmaQueue's data path: the core's per-I/O steps (queue_core_datapath.hpp)
// instantiated with the transport operations in line
// (rdma_queue_command.hpp), commit, and the poll that feeds responses to the
// core (rdma_queue.hpp describes it). No allocation, no syscall, no exception
// and no clock read per request on the steady-state path.
#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/log.hpp"
#include "transport/queue_core_datapath.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_command.hpp"

namespace nvmeof::detail {
SubmitResult RdmaQueue::submit_plain(const NamespaceRef& ns, const Transfer& t,
                                     Post post) noexcept {
    NVMEOF_INVARIANT(ns.format.metadata_bytes == 0, "a namespace with metadata on the plain path");
    return submit_one(*this, ns, t, nullptr, post);
}

SubmitResult RdmaQueue::submit_transfer(const NamespaceRef& ns, const Transfer& t, bool internal,
                                        std::uint32_t* tid, Post post) noexcept {
    // The core marks a transfer internal by the tid it writes back.
    std::uint32_t* const internal_tid = internal ? tid : nullptr;
    if (ns.format.metadata_bytes != 0) {
        return submit_with_metadata(ns, t, post, internal_tid);
    }
    return submit_one(*this, ns, t, internal_tid, post);
}

SubmitResult RdmaQueue::commit_queued() noexcept {
    commit();
    return SubmitResult::queued;
}

void RdmaQueue::commit() noexcept {
    NVMEOF_INVARIANT((deferred_head_ == nullptr) == (deferred_count_ == 0),
                     "the deferred count matches the deferred chain");
    if (deferred_head_ == nullptr || state_ != QueueState::live) {
        return;
    }
    ibv_send_wr* head = std::exchange(deferred_head_, nullptr);
    deferred_next_ = &deferred_head_;
    deferred_count_ = 0;
    post_chain(head);
}

std::uint16_t RdmaQueue::submit_command(const wire::Sqe& command, Deadline deadline) {
    return QueueCore::submit_command(*this, command, deadline);
}

std::size_t RdmaQueue::take_completions(std::span<Completion> out, std::size_t& failed) noexcept {
    return QueueCore::take_completions(*this, out, failed);
}

int RdmaQueue::poll_cq() noexcept {
    if (!cq_ || failed()) {
        return 0;
    }
    // One clock read per poll at most: for the deadlines of what was built
    // since the last one, and for checking deadlines.
    const Clock::time_point now = stamp_if_due(*this);
    ibv_wc wc[kPollBatch];
    const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    if (n > 0) {
        handle_completion(wc, n);
    } else if (n < 0) {
        fail(TransportErrc::queue_error, EIO, "ibv_poll_cq failed");
        return 0;
    }
    after_poll(*this, n, now);
    return n;
}

bool RdmaQueue::arm_if_quiet() noexcept {
    if (!cq_ || failed() || has_finished()) {
        return false;
    }
    if (ibv_req_notify_cq(cq_.get(), 0) != 0) {
        return false;  // cannot sleep on this CQ: the caller keeps polling
    }
    // Arming reports only completions that come after it: empty the CQ of
    // those already there, or the wait could sleep with work waiting.
    while (poll_cq() == kPollBatch) {
    }
    return !has_finished() && !failed();
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
        fail(lost ? TransportErrc::disconnected : TransportErrc::queue_error,
             lost ? ECONNRESET : EIO, ibv_wc_status_str(wc.status));
        return false;
    }
    if ((wc.wr_id >= sends_.size() && wc.wr_id != kRetireMarker) ||
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
    return complete_response(*this, receive_buffers_[index]);
}

}  // namespace nvmeof::detail
