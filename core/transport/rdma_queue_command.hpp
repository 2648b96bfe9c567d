// RdmaQueue's transport operations on the per-I/O path (QueueBackend,
// queue_core.hpp): a command's data pointer and gather list, its SEND
// signalled once per interval, posted at once or chained behind the deferred
// ones. Defined here so that the core's steps (queue_core_datapath.hpp)
// inline them where the RDMA data path instantiates them.
#pragma once

#include <cerrno>

#include "nvmeof/wire/io.hpp"
#include "transport/invariant.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

void RdmaQueue::prepare_send(CommandSend& send) noexcept {
    // Built in post order (commit() posts the deferred chain first), so this
    // position is the SEND's place in the send queue.
    const bool ends_interval = (++send_position_ & (kSendsPerSignal - 1)) == 0;
    NVMEOF_INVARIANT(sends_in_queue() <= send_queue_capacity_,
                     "a SEND built with no send queue entry free");
    send.wr.send_flags = ends_interval ? IBV_SEND_SIGNALED : 0;
}

void RdmaQueue::set_data(std::uint16_t cid, wire::Sqe& sqe, std::uint64_t address,
                         std::uint32_t bytes, std::uint32_t rkey, std::uint32_t lkey) noexcept {
    CommandSend& send = sends_[cid];
    // A write's or compare's data (sends_data: the opcode's direction says it).
    if (wire::direction_of(sqe.opcode) == wire::DataDirection::host_to_controller &&
        bytes <= in_capsule_limit_) {
        // The data rides in the SEND, straight from the caller's buffer.
        sqe.dptr = wire::in_capsule_data(0, bytes);
        send.sge[1] = ibv_sge{address, bytes, lkey};
        send.wr.num_sge = CommandSend::kMaxSges;
        send.in_capsule_rkey = rkey;
    } else {
        sqe.dptr = wire::keyed_data_block(address, bytes, rkey);
        send.wr.num_sge = 1;
    }
}

void RdmaQueue::chain_deferred(ibv_send_wr& wr) noexcept {
    // Anything deferred before goes out first, in order.
    wr.next = nullptr;
    *deferred_next_ = &wr;
    deferred_next_ = &wr.next;
    ++deferred_count_;
}

void RdmaQueue::defer(std::uint16_t cid) noexcept {
    CommandSend& send = sends_[cid];
    prepare_send(send);
    chain_deferred(send.wr);
}

SubmitResult RdmaQueue::send(std::uint16_t cid, Post post) noexcept {
    CommandSend& send = sends_[cid];
    prepare_send(send);
    if (post == Post::now && deferred_head_ == nullptr) {
        send.wr.next = nullptr;
        return post_chain(&send.wr);  // nothing deferred to go first
    }
    chain_deferred(send.wr);
    return post == Post::now ? commit_queued() : SubmitResult::queued;
}

SubmitResult RdmaQueue::post_chain(ibv_send_wr* head) noexcept {
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp_, head, &bad) != 0) [[unlikely]] {
        // Its pieces complete with the transport error (after the drain, which
        // does not count on completions of what was or was not posted).
        const int error = errno;
        fail(TransportErrc::queue_error, error != 0 ? error : EIO, "ibv_post_send failed");
    }
    return SubmitResult::queued;
}

}  // namespace nvmeof::detail
