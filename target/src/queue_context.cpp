#include "queue_context.hpp"

#include <cstdio>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::target {

bool swallow_capsule(QueueContext& ctx, std::uint16_t qid, std::uint8_t opcode) {
    TransportFaults& faults = ctx.faults;
    ++faults.commands;
    const auto& config = ctx.config.faults;
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
    if (qid != 0 && opcode != wire::kFabricsOpcode && ++faults.io_commands == config.ignore_io) {
        std::fprintf(stderr, "nvmeof-target: fault: ignore-io=%llu: I/O command never answered\n",
                     static_cast<unsigned long long>(faults.io_commands));
        ++ctx.stats.faults_injected;
        return true;
    }
    if (config.drop_after && faults.commands == *config.drop_after) {
        faults.drop_requested = true;
    }
    return false;
}

}  // namespace nvmeof::target
