#include "listener_faults.hpp"

#include <cstdio>
#include <string>

#include "nvmeof/wire/ana.hpp"

namespace nvmeof::target {

void ListenerFaults::run(const TransportFaults& counted, Stats& stats, CommandCore& core,
                         ListenerControl& server, Clock::time_point now) {
    down_for_good_.resize(server.listener_count(), false);
    if (next_outage_ < faults_.outages.size() && !relisten_at_ &&
        counted.commands >= faults_.outages[next_outage_].after) {
        const auto& outage = faults_.outages[next_outage_++];
        ++stats.faults_injected;
        std::fprintf(stderr,
                     "nvmeof-target: fault: outage-after=%llu:%u: dropping every connection, not "
                     "listening for %u ms\n",
                     static_cast<unsigned long long>(outage.after), outage.ms, outage.ms);
        server.drop_connections(0, "outage-after fault");
        for (std::size_t i = 0; i < server.listener_count(); ++i) {
            server.stop_listening(i);
        }
        relisten_at_ = now + std::chrono::milliseconds(outage.ms);
    }
    if (relisten_at_ && now >= *relisten_at_) {
        relisten_at_.reset();
        for (std::size_t i = 0; i < server.listener_count(); ++i) {
            if (!down_for_good_[i]) {
                server.listen_again(i);
            }
        }
        std::fprintf(stderr, "nvmeof-target: fault: outage over, listening again\n");
    }
    while (next_ana_change_ < faults_.ana_changes.size() &&
           counted.commands >= faults_.ana_changes[next_ana_change_].after) {
        const auto& change = faults_.ana_changes[next_ana_change_++];
        ++stats.faults_injected;
        std::fprintf(stderr, "nvmeof-target: fault: ana-change-after=%llu:%zu:%s\n",
                     static_cast<unsigned long long>(change.after), change.port_index,
                     std::string(wire::ana_state_name(change.state)).c_str());
        core.set_ana_state(change.port_index, change.state);
    }
    for (std::size_t i = 0; i < faults_.ports_down.size(); ++i) {
        const auto& down = faults_.ports_down[i];
        if (port_down_done_[i] || counted.commands < down.after) {
            continue;
        }
        port_down_done_[i] = true;
        ++stats.faults_injected;
        const std::uint16_t port = server.listener_port(down.port_index);
        std::fprintf(stderr,
                     "nvmeof-target: fault: port-down-after=%llu:%zu: port %u stops listening for "
                     "good, its connections dropped\n",
                     static_cast<unsigned long long>(down.after), down.port_index,
                     static_cast<unsigned>(port));
        down_for_good_[down.port_index] = true;
        server.stop_listening(down.port_index);
        server.drop_connections(port, "port-down-after fault");
    }
}

}  // namespace nvmeof::target
