// RdmaQueue off the per-I/O path: failure (QP to error, drain, then the
// core fails or holds every request), the replay of held transfers after a
// reconnect, and the core's recovery steps (queue_core_recovery.hpp)
// instantiated for RDMA. rdma_queue.hpp describes the design.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "base/log.hpp"
#include "nvmeof/wire/command.hpp"
#include "transport/invariant.hpp"
#include "transport/queue_core_recovery.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_command.hpp"

namespace nvmeof::detail {
// The core's steps that drive this transport off the per-I/O path.
template void QueueCore::check_deadlines<RdmaQueue>(RdmaQueue&, Clock::time_point) noexcept;
template bool QueueCore::fail_outstanding<RdmaQueue>(RdmaQueue&, TransportErrc, int,
                                                     const char*) noexcept;
template std::size_t QueueCore::replay_held<RdmaQueue>(RdmaQueue&) noexcept;

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

void RdmaQueue::take_answers_in() noexcept {
    ibv_wc wc[kPollBatch];
    while (cq_ && !failed()) {
        const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
        if (n <= 0) {
            return;
        }
        handle_completion(wc, n);
    }
}

void RdmaQueue::fail(TransportErrc code, int sys_errno, const char* why) noexcept {
    if (failed()) {
        return;
    }
    const QueueState previous = enter_failed(code, sys_errno);
    deferred_head_ = nullptr;  // never posted; failed below with the rest
    deferred_next_ = &deferred_head_;
    deferred_count_ = 0;
    // The target must not touch memory after we report anything: error, then drain.
    if (previous != QueueState::resolving && previous != QueueState::resolved) {
        id_.move_qp_to_error();
        drain();
    }
    const bool report = fail_outstanding(*this, code, sys_errno, why);
    check_counters();
    if (report) {
        report_failure();
    }
}

std::size_t RdmaQueue::replay_held() noexcept {
    return QueueCore::replay_held(*this);
}

void RdmaQueue::rebuild_as_built(std::uint16_t cid) noexcept {
    // Its command is still in the cid's buffer, unless the reconnected
    // controller takes less in the capsule.
    CommandSend& send = sends_[cid];
    if (send.wr.num_sge == CommandSend::kMaxSges && send.sge[1].length > in_capsule_limit_) {
        sqes_[cid].dptr =
            wire::keyed_data_block(send.sge[1].addr, send.sge[1].length, send.in_capsule_rkey);
        send.wr.num_sge = 1;
    }
}

void RdmaQueue::check_send_counters() const noexcept {
    NVMEOF_INVARIANT(sends_in_queue() <= send_queue_capacity_,
                     "more SENDs in the send queue than it has entries");
    NVMEOF_INVARIANT((deferred_head_ == nullptr) == (deferred_count_ == 0),
                     "the deferred count matches the deferred chain");
}

}  // namespace nvmeof::detail
