// Pure sizing logic: queue-size negotiation, I/O queue count and transfer
// limits. No RDMA here; unit-tested alone. What the transport sizes by them is
// below it: transport/queue_resources.hpp, transport/transfer_split.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/common.hpp"
#include "nvmeof/wire/identify.hpp"

namespace nvmeof::detail {

inline constexpr std::uint32_t kMinQueueSize = 2;       // one usable slot
inline constexpr std::uint32_t kMaxQueueSize = 0xFFFF;  // HRQSIZE/SQSIZE are 16 bits

struct QueueSizeInputs {
    std::uint32_t requested = 0;
    std::uint32_t mqes_entries = 0;  // CAP.MQES + 1
    std::uint32_t maxcmd = 0;        // Identify MAXCMD; 0 = not reported
    std::uint32_t device_max_qp_wr = 0;
    std::uint32_t device_max_cqe = 0;
};

struct QueueSizeDecision {
    std::uint16_t size = 0;
    std::string_view
        limit;  // "requested", "CAP.MQES", "MAXCMD", "device max_qp_wr", "device max_cqe"
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

// The I/O command set combination (Identify CNS 0x1C) to run with, where
// CC.CSS is 110b: index 0 (the one a controller starts with) when it holds
// every command set of `wanted` (a vector: bit n for CSI n), else the first
// that does; none when no combination holds them all.
std::optional<std::uint16_t> command_set_combination(const wire::IoCommandSetCombinations& list,
                                                     std::uint64_t wanted);

}  // namespace nvmeof::detail
