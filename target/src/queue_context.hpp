// What every queue of either transport shares with its server: the command
// core, the counters, the configuration, and the fault counts that span all
// queues (docs/target-cli.md).
#pragma once

#include <cstdint>
#include <optional>

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
    // drop-after-run: the Nth I/O command (its queue and CID) from its arrival
    // until every connection is dropped; capsules after it are swallowed
    // meanwhile. `ran`: it ran and its answer was withheld, the drop is due.
    struct RunThenDrop {
        const QueueState* queue = nullptr;  // the queue it came on
        std::uint16_t cid = 0;
        bool ran = false;
        bool done = false;
    };
    std::optional<RunThenDrop> run_then_drop;
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
// ignore-io, drop-after, drop-after-run) and says whether it is to be
// swallowed: received, never run, never answered. Logs and counts the faults
// it injects.
bool swallow_capsule(QueueContext& ctx, const QueueState& queue, std::uint8_t opcode,
                     std::uint16_t cid);

// drop-after-run: true for the answer of the Nth I/O command, which has run
// and is never answered; the server then drops every connection. Logs the
// fault. (Called for every answer: the test in line, the rest out of line.)
bool withhold_run_answer(QueueContext& ctx, const QueueState& queue, std::uint16_t cid);
inline bool withhold_answer(QueueContext& ctx, const QueueState& queue, std::uint16_t cid) {
    return ctx.faults.run_then_drop && withhold_run_answer(ctx, queue, cid);
}

}  // namespace nvmeof::target
