// End-to-end protection on the transport's general path: the PRINFO and the
// tags a transfer's commands carry, each piece's reference tag counted on from
// the last (rdma_queue_datapath.cpp builds the pieces).
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
    const PiTags tags = pi_tags(ns.format, t.protection, t.slba);
    c.prinfo = t.protection.prinfo;
    c.reftag = tags.reftag;
    c.reftag_mask = ns.format.reftag_mask();
    c.reftag_step = ns.format.pi_type == PiType::type3 ? 0 : 1;
    c.apptag = tags.apptag;
    c.apptag_mask = tags.apptag_mask;
}

}  // namespace nvmeof::detail
