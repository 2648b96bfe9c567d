// End-to-end protection in the transport: the PRINFO and the tags a transfer's
// commands carry, in a one-command transfer's command or, on the general path,
// each piece's reference tag counted on from the last (rdma_queue_datapath.cpp
// builds the commands).
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

void RdmaQueue::set_protection_fields(PieceCursor& c, const NamespaceRef& ns,
                                      const Transfer& t) noexcept {
    // PRINFO means nothing on a namespace without PI: the controller ignores
    // it, and so does the host.
    c.protected_blocks =
        ns.format.pi_type != PiType::none && (carries_data(t.op) || t.op == Op::write_zeroes);
    if (!c.protected_blocks) {
        return;
    }
    // pi_tags' rule, with the namespace's reference tag mask kept ready.
    const Protection& p = t.protection;
    c.reftag_mask = ns.reftag_mask;
    c.reftag = initial_reftag(p, t.slba) & ns.reftag_mask;
    // Without a storage tag the space is the reference tag alone.
    c.storage_words = ns.format.storage_tag_bits == 0
                          ? wire::CommandTagWords{}
                          : wire::command_tag_words(ns.format, p.storage_tag, 0);
    c.prinfo = p.prinfo;
    c.reftag_step = ns.format.pi_type == PiType::type3 ? 0 : 1;
    c.apptag = p.apptag;
    c.apptag_mask = p.apptag_mask;
}

void RdmaQueue::set_command_protection(wire::Sqe& sqe, const NamespaceRef& ns,
                                       const Transfer& t) noexcept {
    PieceCursor c;
    set_protection_fields(c, ns, t);
    if (c.protected_blocks) {
        wire::set_protection(sqe, c.prinfo, wire::with_reftag(c.storage_words, c.reftag), c.apptag,
                             c.apptag_mask);
    }
}

}  // namespace nvmeof::detail
