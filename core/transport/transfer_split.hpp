// One transfer cut into data commands: how many blocks one command may carry
// and how many commands a transfer of `blocks` blocks takes. Pure arithmetic,
// shared by the transport (which posts the pieces) and the host (which sizes
// queues and blocking transfers by them).
#pragma once

#include <cstdint>

#include "nvmeof/wire/common.hpp"

namespace nvmeof::detail {

// Blocks one data command may carry: max_transfer / lba, capped at 65,536
// (NLB is 16 bits, 0's based); 0 for an LBA size of 0.
constexpr std::uint64_t max_blocks_per_command(std::uint64_t max_transfer_bytes,
                                               std::uint32_t lba_size) {
    if (lba_size == 0) {
        return 0;
    }
    const std::uint64_t blocks = max_transfer_bytes / lba_size;
    return blocks < wire::kMaxBlocksPerCommand ? blocks : std::uint64_t{wire::kMaxBlocksPerCommand};
}

// A transfer of `blocks` blocks cut into `pieces` commands of `per_piece` blocks
// (the last one shorter).
struct SplitPlan {
    std::uint64_t per_piece = 0;
    std::uint64_t pieces = 0;
    std::uint64_t piece_blocks(std::uint64_t index, std::uint64_t total) const {
        const std::uint64_t start = index * per_piece;
        return total - start < per_piece ? total - start : per_piece;
    }
};
constexpr SplitPlan plan_split(std::uint64_t blocks, std::uint64_t per_piece) {
    if (blocks == 0 || per_piece == 0) {
        return {per_piece, 0};
    }
    return {per_piece, (blocks + per_piece - 1) / per_piece};
}
static_assert(plan_split(65537, 65536).pieces == 2);
static_assert(plan_split(256, 256).pieces == 1);

}  // namespace nvmeof::detail
