// TcpQueue's send side (tcp_queue.hpp describes it): the output ring sent
// with one sendmsg per commit or poll, partial sends continued later, and the
// H2CData PDUs that serve the controller's R2Ts.
//
// Nothing here blocks or allocates: a ring entry points at its header (the
// cid's capsule buffer, or the entry's own H2CData header) and at the
// caller's data, which stays the caller's until its command completes; the
// controller cannot answer a command before all of its bytes have left this
// ring (complete() refuses an answer that comes earlier).
#include <algorithm>
#include <cerrno>

#include "base/log.hpp"
#include "transport/tcp_queue.hpp"
#include "transport/tcp_queue_command.hpp"

namespace nvmeof::detail {
namespace {

// Padding to a PDO (at most 127 bytes: CPDA 31 aligns to 128).
constexpr std::uint8_t kZeroPad[128] = {};

}  // namespace

void TcpQueue::make_h2c_data() noexcept {
    while (h2c_waiting_ != 0 && h2c_in_ring_ < kMaxH2cInRing) {
        const std::uint16_t cid = h2c_queue_[h2c_head_];
        Command& c = commands_[cid];
        NVMEOF_INVARIANT(c.serving_r2t && c.h2c_next < c.h2c_end,
                         "a command queued for H2CData serves an R2T");
        const std::uint32_t chunk = std::min(max_h2c_data_, c.h2c_end - c.h2c_next);
        const bool last = c.h2c_next + chunk == c.h2c_end;  // LAST_PDU ends each R2T's data
        OutPdu& e = ring_push();
        e.h2c = true;
        e.cid = cid;
        e.h2c_header.pdu =
            wire::tcp_h2c_data(cid, c.ttag, c.h2c_next, chunk, last, digests_, cpda_);
        e.header = &e.h2c_header;
        e.header_bytes = sizeof(wire::TcpDataHeader) + digests_.header_bytes();
        if (digests_.header) {
            e.h2c_header.digest = wire::tcp_digest(&e.h2c_header.pdu, sizeof(wire::TcpDataHeader));
        }
        e.pad_bytes = e.h2c_header.pdu.ch.pdo - e.header_bytes;
        const auto* data = reinterpret_cast<const std::uint8_t*>(c.address) + c.h2c_next;
        e.data = data;
        e.data_bytes = chunk;
        e.digest_bytes = static_cast<std::uint8_t>(digests_.data_bytes());
        e.digest = digests_.data ? wire::tcp_digest(data, chunk) : 0;
        ++c.out_pdus;
        ++h2c_in_ring_;
        ++counters_.pdus_sent;
        c.h2c_next += chunk;
        if (last) {
            c.serving_r2t = false;
            h2c_head_ = (h2c_head_ + 1) & h2c_mask_;
            --h2c_waiting_;
        }
    }
}

std::uint64_t TcpQueue::gather(iovec* iov, std::size_t& count) const noexcept {
    std::uint64_t total = 0;
    std::uint64_t skip = out_head_sent_;
    count = 0;
    for (std::uint32_t i = 0; i < out_count_; ++i) {
        const OutPdu& e = out_[(out_head_ + i) & out_mask_];
        if (count + 4 > kMaxIovecs) {
            break;  // the rest goes with the next send
        }
        const std::pair<const void*, std::uint64_t> parts[] = {
            {e.header, e.header_bytes},
            {kZeroPad, e.pad_bytes},
            {e.data, e.data_bytes},
            {&e.digest, e.digest_bytes},
        };
        for (const auto& [base, length] : parts) {
            if (skip >= length) {
                skip -= length;  // the head entry's bytes the kernel already took
                continue;
            }
            iov[count].iov_base =
                const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(base) + skip);
            iov[count].iov_len = length - skip;
            total += length - skip;
            skip = 0;
            ++count;
        }
    }
    return total;
}

void TcpQueue::push_output() noexcept {
    make_h2c_data();
    if (out_count_ == 0 || failed()) {
        return;
    }
    std::size_t count = 0;
    const std::uint64_t offered = gather(iov_.data(), count);
    const std::int64_t sent = socket_.send(std::span<const iovec>(iov_.data(), count));
    ++counters_.sends;
    if (sent < 0) [[unlikely]] {
        fail(TransportErrc::disconnected, static_cast<int>(-sent),
             "sendmsg failed: the connection to the controller is gone");
        return;
    }
    if (static_cast<std::uint64_t>(sent) < offered) {
        ++counters_.partial_sends;  // the rest waits in the ring for the next commit or poll
    }
    retire_output(static_cast<std::uint64_t>(sent));
    make_h2c_data();  // ready for the next send
}

void TcpQueue::retire_output(std::uint64_t bytes) noexcept {
    while (bytes != 0) {
        NVMEOF_INVARIANT(out_count_ != 0, "the kernel took more bytes than the ring offered");
        const OutPdu& e = out_[out_head_];
        const std::uint64_t left = e.bytes() - out_head_sent_;
        if (bytes < left) {
            out_head_sent_ += bytes;
            return;
        }
        bytes -= left;
        out_head_sent_ = 0;
        Command& c = commands_[e.cid];
        NVMEOF_INVARIANT(c.out_pdus != 0, "a ring entry counted by its command");
        --c.out_pdus;
        if (e.h2c) {
            --h2c_in_ring_;
        } else {
            NVMEOF_INVARIANT(capsules_queued_ != 0, "a capsule sent was counted queued");
            --capsules_queued_;
        }
        out_head_ = (out_head_ + 1) & out_mask_;
        --out_count_;
    }
}

std::size_t TcpQueue::deferred() const noexcept {
    return deferred_count_;
}

void TcpQueue::commit() noexcept {
    if (deferred_count_ == 0 || !socket_ || failed()) {
        return;
    }
    for (std::uint32_t i = 0; i < deferred_count_; ++i) {
        queue_capsule(deferred_cids_[i]);
    }
    deferred_count_ = 0;
    push_output();  // one sendmsg for the batch
}

void TcpQueue::drop_output() noexcept {
    // Nothing of it will be sent: no caller's memory is referenced any more.
    for (std::uint32_t i = 0; i < command_slots_; ++i) {
        Command& c = commands_[i];
        c.out_pdus = 0;
        c.armed = false;
        c.serving_r2t = false;
    }
    out_head_ = 0;
    out_count_ = 0;
    out_head_sent_ = 0;
    h2c_in_ring_ = 0;
    h2c_head_ = 0;
    h2c_waiting_ = 0;
    deferred_count_ = 0;
    capsules_queued_ = 0;
}

void TcpQueue::send_term_req(const wire::TcpPduFault& fault, const std::uint8_t* pdu,
                             std::size_t header_bytes) noexcept {
    // Best effort, one sendmsg: the rest of a PDU the kernel took in part
    // (so the TermReq starts on a PDU boundary), then the TermReq with up to
    // 128 bytes of the header in error.
    constexpr std::size_t kMaxCopy = wire::kTcpTermReqMaxLength - sizeof(wire::TcpTermReq);
    const std::size_t copy = std::min(header_bytes, kMaxCopy);
    const wire::TcpTermReq term = wire::tcp_term_req(wire::TcpPduType::h2c_term_req, fault.fes,
                                                     fault.fei, static_cast<std::uint32_t>(copy));
    std::array<iovec, 6> iov{};
    std::size_t count = 0;
    if (out_head_sent_ != 0) {
        const std::uint32_t keep = out_count_;
        out_count_ = 1;  // gather only the head entry's rest
        gather(iov.data(), count);
        out_count_ = keep;
    }
    iov[count++] = iovec{const_cast<wire::TcpTermReq*>(&term), sizeof term};
    if (copy != 0) {
        iov[count++] = iovec{const_cast<std::uint8_t*>(pdu), copy};
    }
    socket_.send(std::span<const iovec>(iov.data(), count));
    ++counters_.sends;
    ++counters_.pdus_sent;
}

}  // namespace nvmeof::detail
