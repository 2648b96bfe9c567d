// The commands of the general path that move no data through a memory region:
// Flush, Write Zeroes and Deallocate (Dataset Management with one range in the
// cid's registered DSM buffer). Off the common path, so built with the wire
// layer's builders.
#include "nvmeof/wire/io.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

void RdmaQueue::build_dataless(std::uint16_t cid, Op op, std::uint32_t nsid, std::uint64_t slba,
                               std::uint64_t blocks) noexcept {
    // Off the common path: the wire builders (their checks hold: a piece is
    // 1..kMaxBlocksPerCommand blocks, one range).
    wire::Sqe& sqe = sqes_[cid];
    switch (op) {
        case Op::deallocate: {
            wire::DsmRange& range = dsm_ranges_[cid];
            range = wire::DsmRange{0, static_cast<std::uint32_t>(blocks), slba};
            sqe = wire::dataset_management_command(
                nsid, 1, wire::kDsmAttributeDeallocate,
                wire::RemoteBuffer{reinterpret_cast<std::uint64_t>(&range), sizeof range,
                                   dsm_mr_->rkey});
            break;
        }
        case Op::write_zeroes:
            sqe = wire::write_zeroes_command(nsid, slba, static_cast<std::uint32_t>(blocks));
            break;
        case Op::flush:
        case Op::read:  // not here: set_data
        case Op::write:
        case Op::compare:
        case Op::zone_append:
            sqe = wire::flush_command(nsid);
            break;
    }
    sqe.command_id = cid;
    sends_[cid].wr.num_sge = 1;
}

}  // namespace nvmeof::detail
