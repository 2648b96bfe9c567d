// The sums a queue core's counters must agree with. The core keeps its
// counters by hand in several hot places rather than counting commands and
// records when asked (that would be a scan per I/O); a scan off the data path
// (QueueCore::check_counters, builds with invariants only) fills in what it
// finds, and check_queue_counts() says which kept counter drifted from it.
// Pure, so a test can show a drifted counter is caught.
#pragma once

#include <cstddef>

#include "transport/invariant.hpp"

namespace nvmeof::detail {

struct QueueCounts {
    // Kept by the queue.
    std::size_t capacity = 0;            // command IDs in the pool
    std::size_t records = 0;             // transfer records (common path's and general)
    std::size_t ids_outstanding = 0;     // command IDs handed out
    std::size_t general_tids_taken = 0;  // general-path transfer IDs handed out
    std::size_t kept_cids = 0;           // cids kept by common-path transfers not in flight
    std::size_t open_transfers = 0;      // submitted, not yet handed back
    std::size_t transfers_awaiting_several = 0;
    std::size_t held = 0;                // held for a replay
    std::size_t finished = 0;            // in the finished ring
    std::size_t gpu_reads_finished = 0;  // of those, reads into GPU memory not yet flushed
    std::size_t waiting = 0;             // transfers with pieces not yet built
    // Found by the scan.
    std::size_t commands_in_flight = 0;          // pool cids sent (or to be), no answer yet
    std::size_t own_cid_commands_in_flight = 0;  // of those, common-path transfers (tid = cid)
    std::size_t low_level_answered = 0;          // pool cids answered, their handle alive
    std::size_t records_awaiting_several = 0;
    std::size_t records_held = 0;
};

inline void check_queue_counts(const QueueCounts& c) noexcept {
    NVMEOF_INVARIANT(c.ids_outstanding <= c.capacity, "more command IDs out than the pool has");
    NVMEOF_INVARIANT(c.ids_outstanding == c.commands_in_flight + c.low_level_answered + c.kept_cids,
                     "every command ID out is a command in flight, a low-level answer not yet "
                     "taken, or kept by a common-path transfer not in flight (kept_cids_)");
    NVMEOF_INVARIANT(
        c.open_transfers == c.general_tids_taken + c.kept_cids + c.own_cid_commands_in_flight,
        "every open transfer holds one transfer ID (open_transfers_)");
    NVMEOF_INVARIANT(c.open_transfers <= c.records, "more open transfers than records");
    NVMEOF_INVARIANT(c.transfers_awaiting_several == c.records_awaiting_several,
                     "transfers_awaiting_several_ counts the records with two pieces or more left");
    NVMEOF_INVARIANT(c.held == c.records_held, "held_count_ counts the held records");
    NVMEOF_INVARIANT(c.finished <= c.open_transfers && c.waiting <= c.open_transfers,
                     "finished and waiting transfers are open ones");
    NVMEOF_INVARIANT(c.gpu_reads_finished <= c.finished,
                     "GPU reads to flush are among the finished transfers");
}

}  // namespace nvmeof::detail
