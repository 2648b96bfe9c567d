// The verbs resources one RDMA queue of `size` entries needs (size − 1 usable
// command IDs). The transport sizes its QP and CQ by these; the host's queue-size
// negotiation bounds `size` by the device limits through them.
#pragma once

#include <cstdint>

namespace nvmeof::detail {

// SENDs are signalled once per kSendsPerSignal (the response completes a
// request): an SQ entry stays taken until a later signalled SEND completes, so
// the SQ holds every command ID's SEND plus one signalling interval, plus one for the
// drain's marker. One RECV per entry (plus one spare). One CQ (shared by
// sends and receives) holding all of them, since a QP in error flushes every
// outstanding WR, signalled or not, with a completion.
inline constexpr std::uint32_t kSendsPerSignal = 16;  // a power of two
constexpr std::uint32_t send_wr_count(std::uint32_t size) {
    return (size - 1) + kSendsPerSignal + 1;
}
constexpr std::uint32_t recv_wr_count(std::uint32_t size) {
    return size + 1;
}
constexpr std::uint32_t cq_entry_count(std::uint32_t size) {
    return send_wr_count(size) + recv_wr_count(size);
}
static_assert(cq_entry_count(32) == 2 * 32 + kSendsPerSignal + 1);

}  // namespace nvmeof::detail
