#include "host/negotiation.hpp"

#include <algorithm>
#include <string>

#include "nvmeof/errors.hpp"
#include "transport/queue_resources.hpp"

namespace nvmeof::detail {

QueueSizeDecision negotiate_queue_size(const QueueSizeInputs& in) {
    std::uint32_t size = std::min(in.requested, kMaxQueueSize);
    std::string_view limit = "requested";
    auto clamp = [&](std::uint32_t bound, std::string_view name) {
        if (bound < size) {
            size = bound;
            limit = name;
        }
    };
    clamp(in.mqes_entries, "CAP.MQES");
    if (in.maxcmd != 0) {
        clamp(in.maxcmd, "MAXCMD");
    }
    // The QP needs send_wr_count(size) = size + kSendsPerSignal send WRs and
    // recv_wr_count(size) = size + 1 receive WRs, and the shared CQ
    // cq_entry_count(size) = 2 * size + kSendsPerSignal + 1 entries.
    static_assert(send_wr_count(2) - 2 == kSendsPerSignal);
    if (in.device_max_qp_wr != 0) {
        clamp(in.device_max_qp_wr > kSendsPerSignal ? in.device_max_qp_wr - kSendsPerSignal : 0,
              "device max_qp_wr");
    }
    if (in.device_max_cqe != 0) {
        const std::uint32_t extra = kSendsPerSignal + 1;
        clamp(in.device_max_cqe > extra ? (in.device_max_cqe - extra) / 2 : 0, "device max_cqe");
    }
    if (size < kMinQueueSize) {
        throw ConnectError(ConnectFailure::negotiation, "queue-size negotiation",
                           "queue size " + std::to_string(size) + " (bound by " +
                               std::string(limit) + ") is below the minimum of " +
                               std::to_string(kMinQueueSize) + " entries");
    }
    return {static_cast<std::uint16_t>(size), limit};
}

std::uint32_t negotiate_io_queue_count(std::uint32_t requested, wire::QueueCounts granted) {
    const std::uint32_t count = std::min(requested, granted.pairs());
    if (count == 0) {
        throw ConnectError(ConnectFailure::negotiation, "Set Features Number of Queues",
                           "the target grants no I/O queues");
    }
    return count;
}

std::uint64_t mdts_bytes(std::uint8_t mdts, std::uint64_t min_page_size) {
    if (mdts == 0) {
        return 0;
    }
    if (mdts >= 40) {  // beyond anything a keyed SGL can carry anyway
        return std::uint64_t{1} << 52;
    }
    return (std::uint64_t{1} << mdts) * min_page_size;
}

std::uint64_t max_transfer_bytes(std::uint64_t mdts) {
    const std::uint64_t keyed = wire::kMaxKeyedSglLength;
    return mdts == 0 ? keyed : std::min(mdts, keyed);
}

std::optional<std::uint16_t> command_set_combination(const wire::IoCommandSetCombinations& list,
                                                     std::uint64_t wanted) {
    for (std::size_t index = 0; index < wire::kIoCommandSetCombinations; ++index) {
        const std::uint64_t vector = list.vector[index];
        if (vector == 0) {
            break;  // the end of the list
        }
        if ((vector & wanted) == wanted) {
            return static_cast<std::uint16_t>(index);
        }
    }
    return std::nullopt;
}

}  // namespace nvmeof::detail
