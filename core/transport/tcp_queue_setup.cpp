// TcpQueue setup and teardown: the TCP connection and the NVMe/TCP
// initialization (ICReq/ICResp), sizing, the orderly close, reconnects, and
// the wait for the output before a deregistration.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "base/log.hpp"
#include "transport/tcp_queue.hpp"

namespace nvmeof::detail {
namespace {

// The host's alignment for data it receives (ICReq HPDA, 0's based dwords):
// none, so C2HData's data follows its header directly.
constexpr std::uint8_t kHpda = 0;
// ICReq MAXR2T, 0's based: one R2T outstanding per command (what the Linux
// host asks; a command's data never needs more at once).
constexpr std::uint32_t kMaxR2t = 0;
constexpr std::chrono::milliseconds kDisconnectWait{1000};
constexpr const char* kConnectStep = "TCP connect";
constexpr const char* kInitStep = "NVMe/TCP initialization (ICReq/ICResp)";

ConnectError::Details with_errno(int error) {
    ConnectError::Details d;
    d.sys_errno = error;
    return d;
}

// The socket layer's failure (its what() names the step) as a ConnectError.
ConnectError connect_error(const std::system_error& e, const PeerAddress& peer,
                           const ConnectDeadline& deadline, const std::string& queue) {
    const int error = e.code().value();
    const std::string_view what = e.what();
    const std::string text = queue + ": " + peer.target_text + ": " + std::string(what);
    if (what.starts_with("binding")) {
        return ConnectError(ConnectFailure::bad_source_address, kConnectStep, text,
                            with_errno(error));
    }
    if (what.starts_with("creating") || what.starts_with("making") || what.starts_with("setting")) {
        return ConnectError(ConnectFailure::device_error, kConnectStep, text, with_errno(error));
    }
    switch (error) {
        case ECONNREFUSED:
            return ConnectError(
                ConnectFailure::no_listener, kConnectStep,
                queue + ": nothing listens on " + peer.target_text + " (connection refused)",
                with_errno(error));
        case ETIMEDOUT:
            return ConnectError(ConnectFailure::timeout, kConnectStep,
                                text + "; " + deadline.ran_out(), with_errno(error));
        default:
            return ConnectError(ConnectFailure::address_unreachable, kConnectStep, text,
                                with_errno(error));
    }
}

}  // namespace

TcpQueue::TcpQueue(const QueueConfig& config, const PeerAddress& peer, const TcpSettings& settings)
    : HostQueue(config, Transport::tcp), peer_(peer), settings_(settings) {
    state_ = QueueState::resolved;  // the host resolved the address: nothing more to find
}

TcpQueue::~TcpQueue() {
    disconnect();
    release();
}

int TcpQueue::socket_fd() const noexcept {
    return socket_.fd();
}

wire::TcpDigests TcpQueue::digests() const noexcept {
    return digests_;
}

std::uint32_t TcpQueue::max_h2c_data() const noexcept {
    return max_h2c_data_;
}

void TcpQueue::allocate() {
    // The core's command IDs: size − 1 in the pool, then the set-up
    // command's (QueueCore::size_for), each with its capsule buffer.
    command_slots_ = config_.size;
    commands_ = std::make_unique<Command[]>(command_slots_);
    dsm_ranges_ = std::make_unique<wire::DsmRange[]>(command_slots_);
    deferred_cids_ = std::make_unique<std::uint16_t[]>(command_slots_);
    // Every cid's capsule at once, and the H2CData made ahead.
    const std::uint32_t ring = std::bit_ceil(command_slots_ + kMaxH2cInRing);
    out_ = std::make_unique<OutPdu[]>(ring);
    out_mask_ = ring - 1;
    const std::uint32_t r2ts = std::bit_ceil(command_slots_);
    h2c_queue_ = std::make_unique<std::uint16_t[]>(r2ts);
    h2c_mask_ = r2ts - 1;
    rx_ = std::make_unique<std::uint8_t[]>(kReceiveBytes);
}

void TcpQueue::reset_connection() noexcept {
    drop_output();
    commands_built_ = 0;
    rx_begin_ = 0;
    rx_end_ = 0;
    rx_ready_ = false;
    rx_large_data_ = false;
    rx_state_ = ReceiveState::header;
}

void TcpQueue::connect(std::uint64_t max_transfer_bytes, std::uint32_t in_capsule_bytes) {
    if (config_.size < 2) {
        throw ConnectError(ConnectFailure::invalid_options, kConnectStep,
                           "qid " + std::to_string(config_.qid) + ": a queue of " +
                               std::to_string(config_.size) + " entries has no command ID");
    }
    max_transfer_bytes_ = max_transfer_bytes;
    in_capsule_limit_ = in_capsule_bytes;
    if (!sized()) {
        allocate();
        size_for(static_cast<std::uint16_t>(config_.size - 1));
    }
    // Reopened: held transfers, held requests and finished ones stay.
    reset_connection();
    open_socket();
    initialize_connection();
    state_ = QueueState::connected;
    log_debug("qid %u: connected to %s (digests: header %s, data %s; CPDA %u, MAXH2CDATA %u)",
              unsigned{config_.qid}, peer_.target_text.c_str(), digests_.header ? "on" : "off",
              digests_.data ? "on" : "off", unsigned{cpda_}, max_h2c_data_);
}

void TcpQueue::open_socket() {
    const std::string queue = "qid " + std::to_string(config_.qid);
    const ConnectDeadline& deadline = config_.connect_deadline;
    deadline.check(std::string(kConnectStep) + " (" + queue + ")");
    const auto* target = reinterpret_cast<const sockaddr*>(&peer_.target);
    const auto* source =
        peer_.has_source ? reinterpret_cast<const sockaddr*>(&peer_.source) : nullptr;
    try {
        socket_ = sockets::StreamSocket::connect(target, source, deadline.at());
    } catch (const std::system_error& e) {
        throw connect_error(e, peer_, deadline, queue);
    }
}

void TcpQueue::send_all(const void* data, std::size_t bytes, const std::string& step) {
    const ConnectDeadline& deadline = config_.connect_deadline;
    const auto* next = static_cast<const std::uint8_t*>(data);
    while (bytes != 0) {
        const iovec part{const_cast<std::uint8_t*>(next), bytes};
        const std::int64_t sent = socket_.send(std::span<const iovec>(&part, 1));
        ++counters_.sends;
        if (sent < 0) {
            const int error = static_cast<int>(-sent);
            throw ConnectError(ConnectFailure::rejected, step,
                               "qid " + std::to_string(config_.qid) + ": " + peer_.target_text +
                                   " closed the connection: " + std::strerror(error),
                               with_errno(error));
        }
        next += sent;
        bytes -= static_cast<std::size_t>(sent);
        if (bytes != 0) {
            deadline.check(step);
            socket_.wait(POLLOUT, Clock::now() + deadline.next_wait());
        }
    }
}

void TcpQueue::receive_exact(void* data, std::size_t bytes, const std::string& step) {
    const ConnectDeadline& deadline = config_.connect_deadline;
    auto* next = static_cast<std::uint8_t*>(data);
    while (bytes != 0) {
        const iovec part{next, bytes};
        const std::int64_t got = socket_.receive(std::span<const iovec>(&part, 1));
        ++counters_.receives;
        if (got < 0) {
            const int error = static_cast<int>(-got);
            throw ConnectError(ConnectFailure::rejected, step,
                               "qid " + std::to_string(config_.qid) + ": " + peer_.target_text +
                                   " closed the connection before its ICResp" +
                                   (error == ECONNRESET ? std::string()
                                                        : std::string(": ") + std::strerror(error)),
                               with_errno(error));
        }
        next += got;
        bytes -= static_cast<std::size_t>(got);
        if (bytes != 0) {
            deadline.check(step);
            socket_.wait(POLLIN, Clock::now() + deadline.next_wait());
        }
    }
}

void TcpQueue::initialize_connection() {
    const std::string queue = "qid " + std::to_string(config_.qid);
    try {
        const wire::TcpIcReq request = wire::tcp_ic_req(kHpda, settings_.digests, kMaxR2t);
        send_all(&request, sizeof request, kInitStep);
        ++counters_.pdus_sent;

        // The common header first: a controller refusing the ICReq answers a
        // C2HTermReq, not an ICResp.
        std::uint8_t pdu[wire::kTcpTermReqMaxLength] = {};
        receive_exact(pdu, sizeof(wire::TcpCommonHeader), kInitStep);
        wire::TcpCommonHeader ch{};
        std::memcpy(&ch, pdu, sizeof ch);
        if (ch.type == static_cast<std::uint8_t>(wire::TcpPduType::c2h_term_req) &&
            ch.plen >= sizeof(wire::TcpTermReq) && ch.plen <= sizeof pdu) {
            receive_exact(pdu + sizeof ch, ch.plen - sizeof ch, kInitStep);
            wire::TcpTermReq term{};
            std::memcpy(&term, pdu, sizeof term);
            throw ConnectError(ConnectFailure::rejected, kInitStep,
                               queue + ": " + peer_.target_text +
                                   " refused the ICReq: C2HTermReq FES 0x" +
                                   std::to_string(term.fes) + " (" +
                                   std::string(wire::tcp_fatal_error_name(term.fes)) + "), FEI " +
                                   std::to_string(term.fei()));
        }
        wire::TcpReceiveState initial;
        initial.role = wire::TcpRole::host;
        wire::TcpPduExpect expect;
        wire::TcpPduFault fault = wire::check_tcp_common_header(ch, initial, expect);
        wire::TcpIcResp resp{};
        if (!fault) {
            receive_exact(pdu + sizeof ch, sizeof resp - sizeof ch, kInitStep);
            ++counters_.pdus_received;
            std::memcpy(&resp, pdu, sizeof resp);
            fault = wire::check_tcp_ic_resp(resp, settings_.digests);
        }
        if (fault) {
            send_term_req(fault, pdu, sizeof resp);
            throw ConnectError(ConnectFailure::negotiation, kInitStep,
                               queue + ": " + peer_.target_text + ": " + fault.why);
        }
        digests_.header = (resp.dgst & wire::kTcpDigestHeaderEnable) != 0;
        digests_.data = (resp.dgst & wire::kTcpDigestDataEnable) != 0;
        cpda_ = resp.cpda;
        max_h2c_data_ = resp.maxh2cdata;
    } catch (const std::system_error& e) {  // a wait on the socket failed
        throw ConnectError(ConnectFailure::device_error, kInitStep,
                           queue + ": " + peer_.target_text + ": " + e.what(),
                           with_errno(e.code().value()));
    }

    // What every PDU is checked against from now on.
    receive_state_ = wire::TcpReceiveState{};
    receive_state_.role = wire::TcpRole::host;
    receive_state_.initialized = true;
    receive_state_.digests = digests_;
    receive_state_.pda = kHpda;
    // C2HData: per command, its data (checked against the command); at most
    // the largest a low-level command's keyed SGL can name, or a transfer.
    receive_state_.max_data_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        std::max<std::uint64_t>(max_transfer_bytes_, 0xFFFFFF), UINT32_MAX));
    // A capsule's common header, without data and with (PLEN then adds the data).
    const wire::TcpCapsuleCmd plain = wire::tcp_capsule_cmd(wire::Sqe{}, 0, digests_, cpda_);
    capsule_ch_ = plain.ch;
    const wire::TcpCapsuleCmd with_data = wire::tcp_capsule_cmd(wire::Sqe{}, 1, digests_, cpda_);
    capsule_data_ch_ = with_data.ch;
    capsule_data_ch_.plen -= 1;
}

std::string TcpQueue::local_address() const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (!socket_ ||
        ::getsockname(socket_.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return {};
    }
    return address_text(reinterpret_cast<const sockaddr*>(&address));
}

TransportCounters TcpQueue::transport_counters() const noexcept {
    return TransportCounters{
        .pdus_sent = counters_.pdus_sent,
        .pdus_received = counters_.pdus_received,
        .send_calls = counters_.sends,
        .receive_calls = counters_.receives,
        .bytes_copied = counters_.data_copied,
        .bytes_direct = counters_.data_received_direct,
    };
}

bool TcpQueue::drain_output(Clock::time_point deadline) noexcept {
    commit();  // anything deferred goes first
    while (output_pending() && !failed()) {
        // Polled, not only sent: a controller may stop reading until its
        // answers are taken.
        poll_cq();
        if (!output_pending() || failed()) {
            break;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return false;
        }
        try {
            socket_.wait(POLLOUT | POLLIN, std::min(deadline, now + std::chrono::milliseconds(10)));
        } catch (const std::system_error&) {
            return false;
        }
    }
    return !output_pending();
}

void TcpQueue::retire_sends() noexcept {
    // A queue down dropped its output; otherwise nothing may still be queued
    // to send from the caller's memory when it is deregistered.
    if (state_ != QueueState::live && state_ != QueueState::connected) {
        return;
    }
    if (!drain_output(Clock::now() + std::min(config_.timeout, kMaxDrainWait)) && !failed()) {
        fail(TransportErrc::timeout, ETIMEDOUT,
             "output did not leave before a deregistration of its memory");
    }
}

void TcpQueue::disconnect(bool wait_for_peer) noexcept {
    if (state_ == QueueState::closed) {
        return;
    }
    const bool was_connected = state_ == QueueState::connected || state_ == QueueState::live;
    if (state_ == QueueState::live) {
        take_answers_in();
    }
    if (was_connected && wait_for_peer && socket_) {
        // Best effort: what is queued leaves before the connection ends.
        drain_output(Clock::now() + std::min(config_.timeout, kDisconnectWait));
    }
    fail(TransportErrc::closed, ESHUTDOWN, "queue closed");  // shuts the socket down
    state_ = QueueState::closed;
    log_debug("qid %u: %s", unsigned{config_.qid}, queue_state_name(state_));
}

void TcpQueue::release() noexcept {
    socket_.close();
}

void TcpQueue::reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                      std::uint16_t cntlid) {
    disconnect(false);
    release();
    peer_ = peer;
    config_.connect_deadline = deadline;
    config_.cntlid = cntlid;
    reset_for_reopen();
    state_ = QueueState::resolved;  // connect() connects again
}

}  // namespace nvmeof::detail
