#include "queue_context.hpp"

#include <cstdio>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::target {

bool swallow_capsule(QueueContext& ctx, const QueueState& queue, std::uint8_t opcode,
                     std::uint16_t cid) {
    TransportFaults& faults = ctx.faults;
    ++faults.commands;
    const auto& config = ctx.config.faults;
    if (faults.run_then_drop && !faults.run_then_drop->done) {
        return true;  // drop-after-run: nothing that comes after its command runs
    }
    if (config.stop_answering_after && faults.commands > *config.stop_answering_after) {
        if (!faults.stop_logged) {
            faults.stop_logged = true;
            std::fprintf(stderr,
                         "nvmeof-target: fault: stop-answering-after=%llu: commands from now on "
                         "are received but never answered\n",
                         static_cast<unsigned long long>(*config.stop_answering_after));
        }
        ++ctx.stats.faults_injected;
        return true;
    }
    const bool io = queue.qid != 0 && opcode != wire::kFabricsOpcode;
    if (io && ++faults.io_commands == config.ignore_io) {
        std::fprintf(stderr, "nvmeof-target: fault: ignore-io=%llu: I/O command never answered\n",
                     static_cast<unsigned long long>(faults.io_commands));
        ++ctx.stats.faults_injected;
        return true;
    }
    if (io && faults.io_commands == config.drop_after_run) {
        faults.run_then_drop = TransportFaults::RunThenDrop{&queue, cid};
    }
    if (config.drop_after && faults.commands == *config.drop_after) {
        faults.drop_requested = true;
    }
    return false;
}

bool withhold_run_answer(QueueContext& ctx, const QueueState& queue, std::uint16_t cid) {
    TransportFaults::RunThenDrop& fault = *ctx.faults.run_then_drop;
    if (fault.ran || fault.queue != &queue || fault.cid != cid) {
        return false;
    }
    fault.ran = true;
    ++ctx.stats.faults_injected;
    std::fprintf(stderr,
                 "nvmeof-target: fault: drop-after-run=%llu: QID %u CID %u ran; its answer is "
                 "not sent and every connection is dropped\n",
                 static_cast<unsigned long long>(*ctx.config.faults.drop_after_run),
                 unsigned{queue.qid}, unsigned{cid});
    return true;
}

}  // namespace nvmeof::target
