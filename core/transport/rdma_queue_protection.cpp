// End-to-end protection in the transport: a transfer on a namespace with
// metadata that fits one command, built as the common path builds its own
// with PRINFO and the tags set in place, and on the general path each piece's
// PRINFO and reference tag counted on from the last (rdma_queue_datapath.cpp
// builds the pieces). What a namespace's format settles (the bytes per block
// with and without PRACT, whether it has PI) is worked out once, in its
// NamespaceRef; a transfer tests only what it asks.
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_command.hpp"

namespace nvmeof::detail {
SubmitResult RdmaQueue::submit_with_metadata(const NamespaceRef& ns, const Transfer& t, Post post,
                                             bool internal,
                                             std::uint32_t* transfer_index) noexcept {
    // The common case's checks (submit_one), with the blocks' size in bytes
    // as the transfer's PRACT makes it; anything else goes on to the general
    // path, which checks in full and refuses.
    if (state_ != QueueState::live) [[unlikely]] {
        return refuse_not_live(t.op);
    }
    const MemoryRecord* memory = t.memory != nullptr ? t.memory->record() : nullptr;
    const std::uint64_t bytes = t.blocks * ns.buffer_block_bytes(t.protection);
    if (carries_data(t.op) && t.blocks - 1 < wire::kMaxBlocksPerCommand &&
        bytes <= max_transfer_bytes_ && t.slba < ns.size_lbas &&
        t.blocks <= ns.size_lbas - t.slba && memory != nullptr && memory->host_owner == owner_ &&
        t.offset <= memory->length && bytes <= memory->length - t.offset && waiting_count_ == 0 &&
        cids_.available() != 0 && send_room() != 0) [[likely]] {
        return submit_one_command<true>(ns, t, memory, bytes, internal, transfer_index, post);
    }
    return submit_general(ns, t, internal, transfer_index, post);
}

void RdmaQueue::set_protection_fields(PieceCursor& c, const NamespaceRef& ns,
                                      const Transfer& t) noexcept {
    c.protected_blocks = ns.pi && (carries_data(t.op) || t.op == Op::write_zeroes);
    if (!c.protected_blocks) {
        return;
    }
    // pi_tags' rule, with the namespace's reference tag mask kept ready.
    const Protection& p = t.protection;
    c.reftag_mask = ns.reftag_mask;
    c.reftag = initial_reftag(p, t.slba) & ns.reftag_mask;
    c.storage_words = storage_words(ns, p);
    c.prinfo = p.prinfo;
    c.reftag_step = ns.format.pi_type == PiType::type3 ? 0 : 1;
    c.apptag = p.apptag;
    c.apptag_mask = p.apptag_mask;
}

}  // namespace nvmeof::detail
