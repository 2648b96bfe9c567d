// The verbs resources one RDMA queue of `size` entries needs (size − 1 usable
// slots). The transport sizes its QP and CQ by these; the host's queue-size
// negotiation bounds `size` by the device limits through them.
#pragma once

#include <cstdint>

namespace nvmeof::detail {

// One signalled SEND per slot plus one for the drain; one RECV per entry plus
// one for the drain; one CQ (shared by sends and receives) holding all of
// them: 2 × size + 1.
constexpr std::uint32_t send_wr_count(std::uint32_t size) {
    return (size - 1) + 1;
}
constexpr std::uint32_t recv_wr_count(std::uint32_t size) {
    return size + 1;
}
constexpr std::uint32_t cq_entry_count(std::uint32_t size) {
    return send_wr_count(size) + recv_wr_count(size);
}
static_assert(cq_entry_count(32) == 2 * 32 + 1);

}  // namespace nvmeof::detail
