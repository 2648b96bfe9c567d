// TcpQueue's receive side (tcp_queue.hpp describes it): one recvmsg per
// poll, then every whole PDU received handled in one pass, each header
// checked (nvmeof/wire/tcp.hpp's checks, then against the command it names)
// before anything it says is acted on.
//
// Where C2HData lands: while at least kDirectReceiveMin bytes of a C2HData's
// data are due, the recvmsg scatters into the caller's memory first (the rest
// of that data) and into at most kReceiveTail bytes of the receive buffer
// after it (the next headers), so a large read arrives in place with no copy.
// After a large C2HData, receives between PDUs take kReceiveTail bytes too: a
// receive of the whole buffer would fill it with the next PDU's data (a PDU
// as large as the buffer then arrives all but copied). Data that came into
// the receive buffer together with headers (the start of a C2HData, small
// reads whole, and a short rest) is copied out of it into the caller's
// memory: the one copy the stream forces without a recvmsg per header,
// counted in Counters::data_copied (Counters::data_received_direct the rest).
//
// One malformed PDU ends the queue: an H2CTermReq naming the field (FES,
// FEI) if the stream allows one, then fail(protocol_error, EPROTO) with one
// line naming the PDU and the field, logged once (by the core's failure).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "base/log.hpp"
#include "nvmeof/wire/status.hpp"
#include "transport/queue_core_datapath.hpp"
#include "transport/tcp_queue.hpp"
#include "transport/tcp_queue_command.hpp"

namespace nvmeof::detail {
namespace {

using wire::TcpFatalError;
using wire::TcpPduFault;
using wire::TcpPduType;

std::uint32_t load_u32(const std::uint8_t* p) noexcept {
    std::uint32_t value = 0;
    std::memcpy(&value, p, sizeof value);
    return value;
}

template <typename T>
T load_pdu(const std::uint8_t* p) noexcept {
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

constexpr TcpPduFault fault(TcpFatalError fes, std::uint32_t fei, const char* why) noexcept {
    return TcpPduFault{fes, fei, why};
}

}  // namespace

bool TcpQueue::receive() noexcept {
    // What is left in the buffer is at most one PDU's start (or a poll's
    // unhandled rest, when no receive happens): moved to the front.
    if (rx_begin_ != 0) {
        std::memmove(rx_.get(), rx_.get() + rx_begin_, rx_end_ - rx_begin_);
        rx_end_ -= rx_begin_;
        rx_begin_ = 0;
    }
    iovec iov[2];
    std::size_t count = 0;
    // Only a long rest goes in place: a short one (a small read's data that
    // the last receive cut) is cheaper copied along with what follows it than
    // received with a recvmsg of its own, which would also cap the receive
    // at the rest plus kReceiveTail.
    const bool direct =
        rx_state_ == ReceiveState::data && rx_end_ == 0 && rx_left_ >= kDirectReceiveMin;
    if (direct) {
        iov[count++] = iovec{rx_dest_, rx_left_};  // the C2HData's rest, in place
    }
    if (rx_end_ < kReceiveBytes) {
        // Behind a large C2HData (its rest in place, or its end), only room
        // for the next headers (and small PDUs): a large read's next PDU then
        // starts its data in place too, instead of filling the receive buffer
        // with data to copy out.
        NVMEOF_INVARIANT(!direct || rx_large_data_, "a rest in place of a small C2HData");
        const std::size_t room = kReceiveBytes - rx_end_;
        iov[count++] =
            iovec{rx_.get() + rx_end_, rx_large_data_ ? std::min(room, kReceiveTail) : room};
    }
    if (count == 0) {
        return false;
    }
    const std::int64_t got = socket_.receive(std::span<const iovec>(iov, count));
    ++counters_.receives;
    if (got <= 0) [[unlikely]] {
        if (got == -ECONNRESET) {
            fail(TransportErrc::disconnected, ECONNRESET, "the controller closed the connection");
        } else if (got < 0) {
            fail(TransportErrc::disconnected, static_cast<int>(-got),
                 "recvmsg failed: the connection to the controller is gone");
        }
        return false;
    }
    auto rest = static_cast<std::uint64_t>(got);
    if (direct) {
        const auto in_place = static_cast<std::uint32_t>(std::min<std::uint64_t>(rest, rx_left_));
        counters_.data_received_direct += in_place;
        placed(in_place);
        rest -= in_place;
    }
    rx_end_ += rest;
    return true;
}

void TcpQueue::take_answers_in() noexcept {
    while (socket_ && !failed()) {
        take_pdus(kPollBatch);
        if (!failed() && !rx_ready_ && !receive()) {
            return;  // nothing more has come in
        }
    }
}

void TcpQueue::placed(std::uint32_t bytes) noexcept {
    if (rx_data_digest_) {
        rx_crc_ = wire::tcp_digest(rx_dest_, bytes, rx_crc_);
    }
    rx_dest_ += bytes;
    rx_left_ -= bytes;
}

int TcpQueue::take_pdus(int budget) noexcept {
    int completions = 0;
    rx_ready_ = false;
    while (!failed()) {
        const std::size_t available = rx_end_ - rx_begin_;
        const std::uint8_t* p = rx_.get() + rx_begin_;
        switch (rx_state_) {
            case ReceiveState::header: {
                if (completions >= budget) {
                    rx_ready_ = available != 0;  // handled by the next poll first
                    return completions;
                }
                if (available < sizeof(wire::TcpCommonHeader)) {
                    return completions;
                }
                const auto ch = load_pdu<wire::TcpCommonHeader>(p);
                wire::TcpPduExpect expect;
                if (const TcpPduFault f =
                        wire::check_tcp_common_header(ch, receive_state_, expect)) {
                    protocol_fault(f, p, available);
                    return completions;
                }
                // A TermReq whole (its copy of the header in error), else the header.
                const bool term = expect.type == TcpPduType::c2h_term_req;
                const std::size_t need = term ? expect.plen : expect.header_bytes;
                if (available < need) {
                    return completions;
                }
                if (!term && expect.header_bytes > ch.hlen) {
                    if (const TcpPduFault f =
                            wire::tcp_header_digest_fault(p, ch.hlen, load_u32(p + ch.hlen))) {
                        protocol_fault(f, p, ch.hlen);
                        return completions;
                    }
                }
                ++counters_.pdus_received;
                rx_begin_ += need;
                switch (expect.type) {
                    case TcpPduType::capsule_resp:
                        completions += on_capsule_resp(p);
                        break;
                    case TcpPduType::c2h_data:
                        on_c2h_data(p, expect);
                        break;
                    case TcpPduType::r2t:
                        on_r2t(p);
                        break;
                    case TcpPduType::c2h_term_req:
                        on_c2h_term_req(p, expect);
                        return completions;
                    default:  // check_tcp_common_header admits no other type here
                        protocol_fault(fault(TcpFatalError::invalid_header_field, 0,
                                             "PDU-Type is not one a host takes now"),
                                       p, ch.hlen);
                        return completions;
                }
                break;
            }
            case ReceiveState::pad: {
                const auto skip =
                    static_cast<std::uint32_t>(std::min<std::size_t>(available, rx_pad_left_));
                rx_begin_ += skip;
                rx_pad_left_ -= skip;
                if (rx_pad_left_ != 0) {
                    return completions;
                }
                rx_state_ = ReceiveState::data;
                break;
            }
            case ReceiveState::data: {
                if (rx_left_ != 0) {
                    // Data that came with headers into the receive buffer: copied out.
                    const auto n =
                        static_cast<std::uint32_t>(std::min<std::size_t>(available, rx_left_));
                    std::memcpy(rx_dest_, p, n);
                    counters_.data_copied += n;
                    placed(n);
                    rx_begin_ += n;
                    if (rx_left_ != 0) {
                        return completions;
                    }
                }
                if (rx_data_digest_) {
                    rx_state_ = ReceiveState::digest;
                    rx_digest_got_ = 0;
                    break;
                }
                completions += end_c2h_data();
                break;
            }
            case ReceiveState::digest: {
                const auto n = static_cast<std::uint32_t>(
                    std::min<std::size_t>(available, rx_digest_.size() - rx_digest_got_));
                std::memcpy(rx_digest_.data() + rx_digest_got_, p, n);
                rx_digest_got_ += n;
                rx_begin_ += n;
                if (rx_digest_got_ != rx_digest_.size()) {
                    return completions;
                }
                completions += end_c2h_data();
                break;
            }
        }
    }
    return completions;
}

bool TcpQueue::complete(std::uint16_t cid, wire::Cqe cqe) noexcept {
    Command& c = commands_[cid];
    if (c.out_pdus != 0 || c.serving_r2t) [[unlikely]] {
        // Its capsule or data is still going out from the caller's memory:
        // no controller can have answered it, and its memory must stay
        // referenced until it left.
        fail(TransportErrc::protocol_error, EPROTO,
             "an answer for a command whose capsule or data has not all been sent");
        return false;
    }
    c.armed = false;
    if (c.digest_error && wire::Status::from_cqe_field(cqe.status).ok()) [[unlikely]] {
        // As the Linux host: the data arrived damaged, the command fails.
        cqe.status = wire::Status::generic(wire::GenericStatus::data_transfer_error).cqe_field();
    }
    return complete_response(*this, cqe);
}

int TcpQueue::on_capsule_resp(const std::uint8_t* pdu) noexcept {
    const auto resp = load_pdu<wire::TcpCapsuleResp>(pdu);
    const std::uint16_t cid = resp.cqe.command_id;
    if (cid >= command_slots_ || !commands_[cid].armed) [[unlikely]] {
        protocol_fault(fault(TcpFatalError::invalid_header_field,
                             offsetof(wire::TcpCapsuleResp, cqe) + offsetof(wire::Cqe, command_id),
                             "CapsuleResp CID names no command in flight"),
                       pdu, sizeof resp);
        return 0;
    }
    return complete(cid, resp.cqe) ? 1 : 0;
}

void TcpQueue::on_c2h_data(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) noexcept {
    const auto header = load_pdu<wire::TcpDataHeader>(pdu);
    if (const TcpPduFault f = wire::check_tcp_data_header(header, expect)) {
        protocol_fault(f, pdu, sizeof header);
        return;
    }
    const std::uint16_t cid = header.cccid;
    if (cid >= command_slots_ || !commands_[cid].armed || commands_[cid].flow != Flow::c2h) {
        protocol_fault(
            fault(TcpFatalError::invalid_header_field, offsetof(wire::TcpDataHeader, cccid),
                  "C2HData CCCID names no command in flight that reads data"),
            pdu, sizeof header);
        return;
    }
    Command& c = commands_[cid];
    if (header.datao != c.done) {
        protocol_fault(fault(TcpFatalError::data_out_of_range, offsetof(wire::TcpDataHeader, datao),
                             "C2HData DATAO is not where the command's data continues"),
                       pdu, sizeof header);
        return;
    }
    if (header.datal > c.bytes - c.done) {
        protocol_fault(fault(TcpFatalError::data_out_of_range, offsetof(wire::TcpDataHeader, datal),
                             "C2HData DATAO + DATAL runs past the command's data"),
                       pdu, sizeof header);
        return;
    }
    const bool success = (header.ch.flags & wire::kTcpFlagSuccess) != 0;
    if (success && c.done + header.datal != c.bytes) {
        protocol_fault(
            fault(TcpFatalError::invalid_header_field, offsetof(wire::TcpCommonHeader, flags),
                  "C2HData SUCCESS before all of the command's data"),
            pdu, sizeof header);
        return;
    }
    c.done += header.datal;
    rx_cid_ = cid;
    rx_success_ = success;
    rx_data_digest_ = expect.data_digest;
    rx_crc_ = 0;
    rx_dest_ = reinterpret_cast<std::uint8_t*>(c.address) + header.datao;
    rx_left_ = header.datal;
    rx_large_data_ = header.datal >= kDirectReceiveMin;
    rx_pad_left_ = expect.pdo - expect.header_bytes;
    rx_state_ = rx_pad_left_ != 0 ? ReceiveState::pad : ReceiveState::data;
}

int TcpQueue::end_c2h_data() noexcept {
    rx_state_ = ReceiveState::header;
    if (rx_data_digest_ && load_u32(rx_digest_.data()) != rx_crc_) [[unlikely]] {
        // Not fatal (the Linux host's answer): the command fails with Data
        // Transfer Error when it completes.
        if (!commands_[rx_cid_].digest_error) {
            log_error("qid %u: cid %u: C2HData DDGST does not match its data",
                      unsigned{config_.qid}, unsigned{rx_cid_});
        }
        commands_[rx_cid_].digest_error = true;
    }
    if (!rx_success_) {
        return 0;
    }
    // SUCCESS: no CapsuleResp follows; the command's answer is made here.
    wire::Cqe cqe{};
    cqe.sq_id = config_.qid;
    cqe.command_id = rx_cid_;
    return complete(rx_cid_, cqe) ? 1 : 0;
}

void TcpQueue::on_r2t(const std::uint8_t* pdu) noexcept {
    const auto r2t = load_pdu<wire::TcpR2t>(pdu);
    if (const TcpPduFault f = wire::check_tcp_r2t(r2t)) {
        protocol_fault(f, pdu, sizeof r2t);
        return;
    }
    const std::uint16_t cid = r2t.cccid;
    if (cid >= command_slots_ || !commands_[cid].armed || commands_[cid].flow != Flow::r2t) {
        protocol_fault(fault(TcpFatalError::invalid_header_field, offsetof(wire::TcpR2t, cccid),
                             "R2T CCCID names no command in flight that sends data by R2T"),
                       pdu, sizeof r2t);
        return;
    }
    Command& c = commands_[cid];
    if (c.serving_r2t) {
        // MAXR2T 0 (0's based): one R2T per command at a time.
        protocol_fault(fault(TcpFatalError::data_limit_exceeded, offsetof(wire::TcpR2t, cccid),
                             "R2T while the command's last R2T is still served (MAXR2T is 1)"),
                       pdu, sizeof r2t);
        return;
    }
    if (r2t.r2to < c.done) {
        protocol_fault(fault(TcpFatalError::data_out_of_range, offsetof(wire::TcpR2t, r2to),
                             "R2T R2TO asks again for data already sent"),
                       pdu, sizeof r2t);
        return;
    }
    if (r2t.r2to > c.bytes || r2t.r2tl > c.bytes - r2t.r2to) {
        protocol_fault(fault(TcpFatalError::data_out_of_range, offsetof(wire::TcpR2t, r2tl),
                             "R2T R2TO + R2TL runs past the command's data"),
                       pdu, sizeof r2t);
        return;
    }
    c.serving_r2t = true;
    c.ttag = r2t.ttag;
    c.h2c_next = r2t.r2to;
    c.h2c_end = r2t.r2to + r2t.r2tl;
    c.done = c.h2c_end;
    NVMEOF_INVARIANT(h2c_waiting_ <= h2c_mask_, "the H2CData queue overflows");
    h2c_queue_[(h2c_head_ + h2c_waiting_) & h2c_mask_] = cid;
    ++h2c_waiting_;
}

void TcpQueue::on_c2h_term_req(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) noexcept {
    const auto term = load_pdu<wire::TcpTermReq>(pdu);
    // No TermReq answers a TermReq: the controller has ended the connection.
    const bool copied = expect.plen > sizeof term;
    const std::string_view in_error =
        copied ? wire::tcp_pdu_type_name(pdu[sizeof term]) : std::string_view("PDU");
    const std::string_view fes = wire::tcp_fatal_error_name(term.fes);
    std::snprintf(fail_text_.data(), fail_text_.size(),
                  "the controller ended the connection: C2HTermReq FES 0x%x (%.*s), FEI %u "
                  "(the field at byte %u of the host's %.*s)",
                  unsigned{term.fes}, static_cast<int>(fes.size()), fes.data(), term.fei(),
                  term.fei(), static_cast<int>(in_error.size()), in_error.data());
    fail(TransportErrc::protocol_error, EPROTO, fail_text_.data());
}

void TcpQueue::protocol_fault(const TcpPduFault& f, const std::uint8_t* pdu,
                              std::size_t available) noexcept {
    const std::string_view type = wire::tcp_pdu_type_name(pdu[0]);
    const std::string_view fes = wire::tcp_fatal_error_name(static_cast<std::uint16_t>(f.fes));
    std::snprintf(fail_text_.data(), fail_text_.size(),
                  "%.*s from the controller: %s (H2CTermReq FES 0x%x %.*s, FEI %u)",
                  static_cast<int>(type.size()), type.data(), f.why, static_cast<unsigned>(f.fes),
                  static_cast<int>(fes.size()), fes.data(), f.fei);
    // The header in error, as much of it as arrived (the TermReq copies at most 128 bytes).
    const std::size_t hlen = wire::tcp_header_length(pdu[0]);
    send_term_req(f, pdu, hlen != 0 ? std::min(available, hlen) : available);
    fail(TransportErrc::protocol_error, EPROTO, fail_text_.data());
}

}  // namespace nvmeof::detail
