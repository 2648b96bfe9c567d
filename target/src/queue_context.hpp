// What every queue of either transport shares with its server: the command
// core, the counters, the configuration, and the fault counts that span all
// queues (docs/target-cli.md).
#pragma once

#include <cstdint>

#include "config.hpp"
#include "core.hpp"
#include "stats.hpp"

namespace nvmeof::target {

// Faults counted over all queues, shared by the server.
struct TransportFaults {
    std::uint64_t commands = 0;     // every capsule received
    std::uint64_t io_commands = 0;  // of those, on I/O queues and not Fabrics commands
    bool drop_requested = false;    // drop-after reached: disconnect everything
    bool drop_done = false;
    bool stop_logged = false;
    bool delay_logged = false;
    bool reorder_logged = false;
    bool r2t_delay_logged = false;
};

struct QueueContext {
    CommandCore& core;
    Stats& stats;
    const TargetConfig& config;
    TransportFaults& faults;
};

// Counts a received capsule against the command faults (stop-answering-after,
// ignore-io, drop-after) and says whether it is to be swallowed: received,
// never run, never answered. Logs and counts the faults it injects.
bool swallow_capsule(QueueContext& ctx, std::uint16_t qid, std::uint8_t opcode);

}  // namespace nvmeof::target
