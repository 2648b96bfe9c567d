// TcpQueue off the per-I/O path: failure (the socket shut down and the
// output dropped, then the core fails or holds every request), the replay of
// held transfers after a reconnect, the transport's own invariants, and the
// core's recovery steps (queue_core_recovery.hpp) instantiated for TCP.
// tcp_queue.hpp describes the design.
#include "transport/invariant.hpp"
#include "transport/queue_core_recovery.hpp"
#include "transport/tcp_queue.hpp"
#include "transport/tcp_queue_command.hpp"

namespace nvmeof::detail {
// The core's steps that drive this transport off the per-I/O path.
template void QueueCore::check_deadlines<TcpQueue>(TcpQueue&, Clock::time_point) noexcept;
template bool QueueCore::fail_outstanding<TcpQueue>(TcpQueue&, TransportErrc, int,
                                                    const char*) noexcept;
template std::size_t QueueCore::replay_held<TcpQueue>(TcpQueue&) noexcept;

void TcpQueue::fail(TransportErrc code, int sys_errno, const char* why) noexcept {
    if (failed()) {
        return;
    }
    const QueueState previous = enter_failed(code, sys_errno);
    // Nothing more is sent from or received into anyone's memory: the
    // connection ends (the peer sees it), the output and any C2HData being
    // received are dropped. The descriptor stays until release().
    if (previous == QueueState::connected || previous == QueueState::live) {
        socket_.shutdown();
    }
    drop_output();
    rx_begin_ = 0;
    rx_end_ = 0;
    rx_ready_ = false;
    rx_large_data_ = false;
    rx_state_ = ReceiveState::header;
    const bool report = fail_outstanding(*this, code, sys_errno, why);
    check_counters();
    if (report) {
        report_failure();
    }
}

std::size_t TcpQueue::replay_held() noexcept {
    return QueueCore::replay_held(*this);
}

void TcpQueue::check_counters() const noexcept {
    QueueCore::check_counters();
    if constexpr (NVMEOF_INVARIANTS) {
        check_transport_counters();
    }
}

void TcpQueue::check_transport_counters() const noexcept {
    std::uint32_t capsules = 0;
    std::uint32_t h2c = 0;
    for (std::uint32_t i = 0; i < out_count_; ++i) {
        const OutPdu& e = out_[(out_head_ + i) & out_mask_];
        NVMEOF_INVARIANT(e.cid < command_slots_ && commands_[e.cid].armed,
                         "an output ring entry belongs to a command in flight");
        (e.h2c ? h2c : capsules) += 1;
    }
    std::uint32_t referenced = 0;
    std::uint32_t serving = 0;
    for (std::uint32_t i = 0; i < command_slots_; ++i) {
        referenced += commands_[i].out_pdus;
        serving += commands_[i].serving_r2t ? 1 : 0;
    }
    NVMEOF_INVARIANT(referenced == out_count_, "every ring entry is counted by its command");
    NVMEOF_INVARIANT(h2c == h2c_in_ring_ && h2c_in_ring_ <= kMaxH2cInRing,
                     "h2c_in_ring_ counts the H2CData PDUs in the ring");
    NVMEOF_INVARIANT(capsules + deferred_count_ == capsules_queued_,
                     "capsules_queued_ counts the deferred capsules and those in the ring");
    NVMEOF_INVARIANT(capsules_queued_ <= command_slots_, "more capsules queued than command IDs");
    NVMEOF_INVARIANT(serving == h2c_waiting_, "the H2CData queue holds every R2T being served");
    NVMEOF_INVARIANT(out_count_ <= out_mask_ + 1, "the output ring holds what it has room for");
}

}  // namespace nvmeof::detail
