// QueueCore off the per-I/O path, where it drives its backend: deadlines
// found passed, the failure of every outstanding request once the transport
// has stopped, and the replay of held transfers after a reconnect
// (queue_core.hpp describes the core). Function templates over the backend,
// instantiated once per transport (for RDMA in rdma_queue_recovery.cpp).
#pragma once

#include <algorithm>
#include <cerrno>
#include <string>

#include "base/log.hpp"
#include "transport/queue_core.hpp"
#include "transport/queue_core_datapath.hpp"

namespace nvmeof::detail {

template <QueueBackend B>
void QueueCore::check_deadlines(B& backend, Clock::time_point now) noexcept {
    // Nothing can be due yet; but every command is seen at least every
    // kStampScanInterval clock reads, so its stamp is read before the ring wraps.
    if (now < earliest_deadline_ && stamps_taken_ - stamps_at_scan_ < kStampScanInterval) {
        return;
    }
    stamps_at_scan_ = stamps_taken_;
    auto earliest = Clock::time_point::max();
    for (std::size_t cid = 0; cid < command_count_; ++cid) {
        CommandState& command = command_at(cid);
        if ((command.flags & (kInFlight | kNoDeadline)) != kInFlight) {
            continue;
        }
        if ((command.flags & kDeadlineSet) == 0) {
            if (command.stamp == stamps_taken_) {
                continue;  // built since the last clock read: no deadline yet
            }
            command.deadline = stamp_deadlines_[command.stamp & (kStampRing - 1)];
            command.flags |= kDeadlineSet;
        }
        if (command.deadline <= now) {
            const auto id = static_cast<std::uint16_t>(cid);
            // The queue fails either way; a transfer re-sent after timing out
            // once fails with it rather than being held again (queue_core.hpp,
            // OutagePolicy).
            // (A marked piece's transfer is kept by cid, its tid kNoTransfer.)
            const std::uint32_t tid =
                (command.flags & kMarkedPiece) != 0 ? marked_tids_[cid] : command.tid;
            const bool again = timed_out_again(tid);
            log_error("qid %u: command ID %zu (%s) got no answer within %lld ms%s",
                      unsigned{config_.qid}, cid,
                      std::string(wire::command_name(backend.sqe(id), config_.kind)).c_str(),
                      static_cast<long long>(config_.request_timeout.count()),
                      again ? ", again after it was re-sent: its I/O fails, not held again" : "");
            failing_tid_ = again ? tid : kNoTransfer;
            backend.fail(TransportErrc::timeout, ETIMEDOUT, "request timed out");
            failing_tid_ = kNoTransfer;
            return;
        }
        earliest = std::min(earliest, command.deadline);
    }
    earliest_deadline_ = earliest;
    check_counters();  // a scan anyway: now and then while busy, or when quiet
}

template <QueueBackend B>
bool QueueCore::fail_outstanding(B& backend, TransportErrc code, int sys_errno,
                                 const char* why) noexcept {
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
    for (std::size_t cid = 0; cid < command_count_; ++cid) {
        if ((command_at(cid).flags & kInFlight) != 0) {
            const auto id = static_cast<std::uint16_t>(cid);
            status.opcode = backend.sqe(id).opcode;
            complete_command(id, status);
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
        return false;
    }
    log_error(
        "qid %u: queue failed (%s): %s; %zu transfers held for a reconnect, %zu commands "
        "failed back",
        unsigned{config_.qid}, std::string(transport_errc_name(code)).c_str(), why, newly_held,
        failed_commands);
    return true;
}

template <QueueBackend B>
std::size_t QueueCore::replay_held(B& backend) noexcept {
    if (held_count_ == 0 || state_ != QueueState::live) {
        return 0;
    }
    std::size_t count = 0;
    for (std::uint32_t tid = 0; tid < id_states_.size(); ++tid) {
        if (transfer_at(tid).held) {
            replay_order_[count++] = tid;
        }
    }
    std::sort(replay_order_.begin(), replay_order_.begin() + static_cast<std::ptrdiff_t>(count),
              [&](std::uint32_t a, std::uint32_t b) {
                  return transfer_at(a).sequence < transfer_at(b).sequence;
              });
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t tid = replay_order_[i];
        TransferRecord& record = transfer_at(tid);
        record.held = false;
        record.status = CompletionStatus{};  // held: no piece had failed
        if (!tid_is_cid(tid)) {              // the general path's: its start is in origin_
            waiting_next_[tid] = origin_[tid];
        } else {
            waiting_next_[tid] = PieceCursor{};
            waiting_next_[tid].unbuilt = 1;
            waiting_next_[tid].op = record.op;
            waiting_next_[tid].kind = PieceKind::as_built;
        }
        set_pieces_left(record, waiting_next_[tid].unbuilt);
        enqueue_waiting(tid);
    }
    held_count_ = 0;
    build_waiting(backend);
    backend.commit();
    check_counters();
    return count;
}

}  // namespace nvmeof::detail
