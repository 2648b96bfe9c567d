// RdmaQueue off the per-I/O path: deadlines found passed, failure (QP to
// error, drain, every request failed back) and outages (transfers held while
// a controller reconnects, then replayed or failed). rdma_queue.hpp describes
// the design.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "base/log.hpp"
#include "nvmeof/wire/command.hpp"
#include "transport/invariant.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_completion.hpp"

namespace nvmeof::detail {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

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
            log_error("qid %u: command ID %zu (%s) got no answer within %lld ms",
                      unsigned{config_.qid}, i,
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
            log_error(
                "qid %u: closed for a reconnect: %zu transfers held for it, %zu commands "
                "failed back",
                unsigned{config_.qid}, newly_held, failed_commands);
        }
        return;
    }
    log_error(
        "qid %u: queue failed (%s): %s; %zu transfers held for a reconnect, %zu commands "
        "failed back",
        unsigned{config_.qid}, std::string(transport_errc_name(code)).c_str(), why, newly_held,
        failed_commands);
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
        if (!in_record_slot(tid)) {          // the general path's: its start is in origin_
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
