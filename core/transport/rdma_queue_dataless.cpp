// The commands of the general path that move no data through a memory region:
// Flush, Write Zeroes and Deallocate (Dataset Management with one range in the
// cid's registered DSM buffer). Off the common path, so built with the wire
// layer's builders.
#include "nvmeof/wire/io.hpp"
#include "transport/command_fields.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

void RdmaQueue::build_dataless(std::uint16_t cid, Op op, std::uint32_t nsid, std::uint64_t slba,
                               std::uint64_t blocks) noexcept {
    wire::DsmRange& range = dsm_ranges_[cid];
    wire::Sqe& sqe = sqes_[cid];
    sqe = dataless_command(op, nsid, slba, blocks, range,
                           {reinterpret_cast<std::uint64_t>(&range), sizeof range, dsm_mr_->rkey});
    sqe.command_id = cid;
    sends_[cid].wr.num_sge = 1;
}

}  // namespace nvmeof::detail
