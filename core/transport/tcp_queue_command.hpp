// TcpQueue's transport operations on the per-I/O path (QueueBackend,
// queue_core.hpp): a command's data pointer and what its data does, and its
// capsule PDU queued for sending at once or behind the deferred ones.
// Defined here so that the core's steps (queue_core_datapath.hpp) inline them
// where the TCP data path instantiates them.
#pragma once

#include <cerrno>

#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/sgl.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "transport/invariant.hpp"
#include "transport/tcp_queue.hpp"

namespace nvmeof::detail {

void TcpQueue::route_to_controller(Command& c, wire::Sqe& sqe) noexcept {
    if (c.bytes <= in_capsule_limit_) {
        // Gathered straight from its memory after the capsule's header.
        sqe.dptr = wire::in_capsule_data(0, c.bytes);
        c.flow = Flow::in_capsule;
    } else {
        sqe.dptr = wire::transport_data_block(c.bytes);
        c.flow = Flow::r2t;
    }
}

void TcpQueue::set_data(std::uint16_t cid, wire::Sqe& sqe, std::uint64_t address,
                        std::uint32_t bytes, std::uint32_t /*rkey*/,
                        std::uint32_t /*lkey*/) noexcept {
    // No keys over TCP: the queue moves the bytes of its own process.
    Command& c = commands_[cid];
    c.address = address;
    c.bytes = bytes;
    // A write's or compare's data (sends_data: the opcode's direction says it).
    if (wire::direction_of(sqe.opcode) == wire::DataDirection::host_to_controller) {
        route_to_controller(c, sqe);
    } else {
        sqe.dptr = wire::transport_data_block(bytes);
        c.flow = Flow::c2h;
    }
}

void TcpQueue::queue_capsule(std::uint16_t cid) noexcept {
    Command& c = commands_[cid];
    NVMEOF_INVARIANT(!c.armed && c.out_pdus == 0, "a capsule queued twice");
    // The header now, not when built: a replay after a reconnect sends it
    // with that connection's digests and CPDA.
    const bool in_capsule = c.flow == Flow::in_capsule;
    const std::uint32_t data_bytes = in_capsule ? c.bytes : 0;
    wire::TcpCommonHeader& ch = c.capsule.pdu.ch;
    ch = in_capsule ? capsule_data_ch_ : capsule_ch_;
    ch.plen += data_bytes;
    const std::uint32_t header_bytes = sizeof(wire::TcpCapsuleCmd) + digests_.header_bytes();
    if (digests_.header) {
        c.capsule.digest = wire::tcp_digest(&c.capsule.pdu, sizeof(wire::TcpCapsuleCmd));
    }
    OutPdu& e = ring_push();
    e.header = &c.capsule;
    e.header_bytes = header_bytes;
    e.h2c = false;
    e.cid = cid;
    if (in_capsule) [[unlikely]] {
        const auto* data = reinterpret_cast<const void*>(c.address);
        e.pad_bytes = ch.pdo - header_bytes;
        e.data = data;
        e.data_bytes = data_bytes;
        e.digest_bytes = static_cast<std::uint8_t>(digests_.data_bytes());
        e.digest = digests_.data ? wire::tcp_digest(data, data_bytes) : 0;
    } else {
        e.pad_bytes = 0;
        e.data = nullptr;
        e.data_bytes = 0;
        e.digest_bytes = 0;
    }
    c.out_pdus = 1;
    c.armed = true;
    c.done = 0;
    c.serving_r2t = false;
    c.digest_error = false;
    ++counters_.pdus_sent;
}

void TcpQueue::defer(std::uint16_t cid) noexcept {
    ++commands_built_;
    ++capsules_queued_;
    NVMEOF_INVARIANT(deferred_count_ < command_slots_, "more deferred commands than command IDs");
    deferred_cids_[deferred_count_++] = cid;
}

SubmitResult TcpQueue::send(std::uint16_t cid, Post post) noexcept {
    if (post == Post::now && deferred_count_ == 0) {
        ++commands_built_;
        ++capsules_queued_;
        queue_capsule(cid);  // nothing deferred to go first
        push_output();       // a failed send fails the queue, and the command with it
        return SubmitResult::queued;
    }
    defer(cid);
    if (post == Post::now) {
        commit();
    }
    return SubmitResult::queued;
}

}  // namespace nvmeof::detail
