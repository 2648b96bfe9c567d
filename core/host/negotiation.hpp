// Pure sizing logic: queue-size negotiation, I/O queue count, transfer limits and
// the split of one transfer into commands. No RDMA here; unit-tested alone.
#pragma once

#include <cstdint>
#include <string_view>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/common.hpp"

namespace nvmeof::detail {

// Per-queue verbs resources for a queue of `size` entries (size − 1 usable slots).
// SENDs are signalled once per kSendsPerSignal (the response completes a
// request): an SQ entry stays taken until a later signalled SEND completes, so
// the SQ holds every slot's SEND plus one signalling interval, plus one for the
// drain's marker. One RECV per entry plus one for the drain. One CQ (shared by
// sends and receives) holding all of them, since a QP in error flushes every
// outstanding WR, signalled or not, with a completion.
inline constexpr std::uint32_t kSendsPerSignal = 16;  // a power of two
constexpr std::uint32_t send_wr_count(std::uint32_t size) {
    return (size - 1) + kSendsPerSignal + 1;
}
constexpr std::uint32_t recv_wr_count(std::uint32_t size) { return size + 1; }
constexpr std::uint32_t cq_entry_count(std::uint32_t size) {
    return send_wr_count(size) + recv_wr_count(size);
}
static_assert(cq_entry_count(32) == 2 * 32 + kSendsPerSignal + 1);

inline constexpr std::uint32_t kMinQueueSize = 2;       // one usable slot
inline constexpr std::uint32_t kMaxQueueSize = 0xFFFF;  // HRQSIZE/SQSIZE are 16 bits

struct QueueSizeInputs {
    std::uint32_t requested = 0;
    std::uint32_t mqes_entries = 0;   // CAP.MQES + 1
    std::uint32_t maxcmd = 0;         // Identify MAXCMD; 0 = not reported
    std::uint32_t device_max_qp_wr = 0;
    std::uint32_t device_max_cqe = 0;
};

struct QueueSizeDecision {
    std::uint16_t size = 0;
    std::string_view limit;  // "requested", "CAP.MQES", "MAXCMD", "device max_qp_wr", "device max_cqe"
};

// min(requested, MQES+1, MAXCMD, device limits). Throws ConnectError
// (negotiation) when the result is below 2 entries.
QueueSizeDecision negotiate_queue_size(const QueueSizeInputs& in);

// min(requested, granted pairs); throws ConnectError when the target grants none.
std::uint32_t negotiate_io_queue_count(std::uint32_t requested, wire::QueueCounts granted);

// 2^MDTS × minimum page size; 0 when MDTS is 0 (no limit).
std::uint64_t mdts_bytes(std::uint8_t mdts, std::uint64_t min_page_size);
// Bytes one command may carry: MDTS, capped by the 24-bit keyed SGL length.
std::uint64_t max_transfer_bytes(std::uint64_t mdts_bytes);
// Blocks one data command may carry: max_transfer / lba, capped at 65,536.
std::uint64_t max_blocks_per_command(std::uint64_t max_transfer_bytes, std::uint32_t lba_size);

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
