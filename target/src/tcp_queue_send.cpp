// TcpQueue's send side: responses (CapsuleResp, C2HData), the output buffer
// and its flushing, and the completions held back (delay-ms, Asynchronous
// Event Requests).
#include "tcp_queue.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nvmeof::target {
namespace {

// Output waiting beyond this stops the queue taking commands in until the
// host reads: memory stays bounded however slowly a host reads.
constexpr std::size_t kOutputHighWater = 4 * 1024 * 1024;

void append_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof value);
}

}  // namespace

bool TcpQueue::output_full() const {
    return out_.size() - out_sent_ > kOutputHighWater;
}

void TcpQueue::finish(std::unique_ptr<Command> cmd, const Completion& done) {
    if (withhold_answer(ctx_, nvme_, cmd->sqe.command_id)) [[unlikely]] {
        --in_flight_;  // never answered: the server drops every connection (drop-after-run)
        return;
    }
    cmd->done = done;
    cmd->cqe = ctx_.core.make_cqe(nvme_, cmd->sqe, done);
    if (const auto delay = ctx_.config.faults.delay_ms) {
        if (!ctx_.faults.delay_logged) {
            ctx_.faults.delay_logged = true;
            std::fprintf(stderr, "nvmeof-target: fault: delay-ms=%u: delaying every completion\n",
                         *delay);
        }
        ++ctx_.stats.faults_injected;
        cmd->due = Clock::now() + std::chrono::milliseconds(*delay);
        delayed_.push_back(std::move(cmd));
        return;
    }
    send_response(*cmd);
}

void TcpQueue::send_response(Command& cmd) {
    --in_flight_;
    if (state_ != State::live) {
        return;
    }
    const DataPlan& plan = cmd.plan;
    const wire::TcpDigests digests = receive_.digests;
    if (cmd.done.status.ok() && cmd.done.data_length > 0 &&
        plan.direction == wire::DataDirection::controller_to_host &&
        plan.source == DataSource::transport) {
        const std::uint32_t length = std::min(cmd.done.data_length, plan.length);
        // SUCCESS spares the CapsuleResp, but the host then never sees SQHD:
        // only where SQ flow control is off, as nvmet does, and only when the
        // response would carry nothing else.
        const bool success = ctx_.config.tcp.c2h_success && nvme_.sq_flow_control_disabled &&
                             cmd.cqe.dw0 == 0 && cmd.cqe.dw1 == 0;
        for (std::uint32_t offset = 0; offset < length && !muted_;) {  // muted: a fault cut it
            const std::uint32_t chunk = std::min(ctx_.config.tcp.c2h_pdu_bytes, length - offset);
            const bool last = offset + chunk == length;
            const wire::TcpDataHeader header = wire::tcp_c2h_data(cmd.sqe.command_id, offset, chunk,
                                                                  last, success, digests, hpda_);
            append_command_pdu(cmd, &header, sizeof header,
                               std::span(cmd.buffer.data() + offset, chunk));
            ++ctx_.stats.tcp_c2h_data_pdus;
            offset += chunk;
        }
        if (success) {
            return;
        }
    }
    const wire::TcpCapsuleResp resp = wire::tcp_capsule_resp(cmd.cqe, digests);
    append_command_pdu(cmd, &resp, sizeof resp, {});
}

void TcpQueue::send_r2t(std::unique_ptr<Command> cmd) {
    while (awaiting_data_.contains(next_ttag_)) {
        ++next_ttag_;
    }
    cmd->ttag = next_ttag_++;
    const wire::TcpR2t r2t =
        wire::tcp_r2t(cmd->sqe.command_id, cmd->ttag, 0, cmd->plan.length, receive_.digests);
    ++ctx_.stats.tcp_r2t_pdus;
    Command& waiting = *cmd;
    awaiting_data_[cmd->ttag] = std::move(cmd);
    append_command_pdu(waiting, &r2t, sizeof r2t, {});
}

void TcpQueue::append_command_pdu(Command& cmd, const void* header, std::size_t hlen,
                                  std::span<const std::uint8_t> data) {
    if (muted_) {
        return;
    }
    const std::size_t start = out_.size();
    append_pdu(header, hlen, data, true);
    if (cmd.fault != nullptr) {
        inject(cmd, start, hlen, !data.empty());
    }
}

void TcpQueue::append_pdu(const void* header, std::size_t hlen, std::span<const std::uint8_t> data,
                          bool digests) {
    if (muted_) {
        return;
    }
    const auto* bytes = static_cast<const std::uint8_t*>(header);
    const std::size_t start = out_.size();
    out_.insert(out_.end(), bytes, bytes + hlen);
    if (digests && receive_.digests.header) {
        append_u32(out_, wire::tcp_digest(bytes, hlen));
    }
    if (data.empty()) {
        return;
    }
    const std::size_t pdo = static_cast<const wire::TcpCommonHeader*>(header)->pdo;
    out_.resize(start + pdo, 0);  // the pad the receiver's alignment asked for
    out_.insert(out_.end(), data.begin(), data.end());
    if (digests && receive_.digests.data) {
        append_u32(out_, wire::tcp_digest(data.data(), data.size()));
    }
}

std::size_t TcpQueue::flush() {
    std::size_t total = 0;
    while (fd_ >= 0 && out_sent_ < out_.size()) {
        const ssize_t n = ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            out_sent_ += static_cast<std::size_t>(n);
            total += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        close();  // the host is gone: nothing more can reach it
        return total;
    }
    if (out_sent_ == out_.size()) {
        out_.clear();
        out_sent_ = 0;
    } else if (out_sent_ >= kOutputHighWater) {
        out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(out_sent_));
        out_sent_ = 0;
    }
    if (state_ == State::closing && !wants_write()) {
        close();
    }
    return total;
}

int TcpQueue::deliver_async_events() {
    int delivered = 0;
    while (state_ == State::live && !held_async_events_.empty() && nvme_.connected) {
        const std::optional<std::uint32_t> event = ctx_.core.take_async_event(nvme_.cntlid);
        if (!event) {
            break;
        }
        std::unique_ptr<Command> cmd = std::move(held_async_events_.front());
        held_async_events_.pop_front();
        Completion done;
        done.dw0 = *event;
        finish(std::move(cmd), done);
        ++delivered;
    }
    return delivered;
}

Clock::time_point TcpQueue::flush_delayed(Clock::time_point now) {
    while (!delayed_.empty() && delayed_.front()->due <= now) {
        std::unique_ptr<Command> cmd = std::move(delayed_.front());
        delayed_.pop_front();
        send_response(*cmd);
    }
    while (!delayed_r2ts_.empty() && delayed_r2ts_.front()->due <= now) {
        std::unique_ptr<Command> cmd = std::move(delayed_r2ts_.front());
        delayed_r2ts_.pop_front();
        if (state_ == State::live) {
            send_r2t(std::move(cmd));
        }
    }
    auto earliest = Clock::time_point::max();
    if (!delayed_.empty()) {
        earliest = delayed_.front()->due;
    }
    if (!delayed_r2ts_.empty()) {
        earliest = std::min(earliest, delayed_r2ts_.front()->due);
    }
    return earliest;
}

}  // namespace nvmeof::target
