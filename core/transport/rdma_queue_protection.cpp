// End-to-end protection over RDMA: submit() and submit_transfer() on a
// namespace with metadata, the core's submit_with_metadata
// (queue_core_datapath.hpp) instantiated with the transport operations in
// line: a transfer that fits one command is built as the common path builds
// its own, with PRINFO and the tags set in place; anything else goes on to
// the general path, which counts each piece's reference tag on from the
// last. What a namespace's format settles (the bytes per block with and
// without PRACT, whether it has PI) is worked out once, in its NamespaceRef;
// a transfer tests only what it asks.
#include "transport/queue_core_datapath.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_command.hpp"

namespace nvmeof::detail {

SubmitResult RdmaQueue::submit_with_metadata(const NamespaceRef& ns, const Transfer& t, Post post,
                                             std::uint32_t* tid) noexcept {
    return QueueCore::submit_with_metadata(*this, ns, t, post, tid);
}

}  // namespace nvmeof::detail
