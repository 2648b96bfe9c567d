// The faults that act on a server's listeners rather than on one queue:
// outage-after (drop every connection, stop listening for a while),
// ana-change-after and port-down-after (docs/target-cli.md). Each fires once
// the commands counted over all queues reach its count, whatever the
// transport: the server says how it stops and resumes listening and drops
// connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core.hpp"
#include "queue_context.hpp"

namespace nvmeof::target {

// What a server does when a listener fault fires; called off the data path.
class ListenerControl {
  public:
    virtual void stop_listening(std::size_t port_index) = 0;
    virtual void listen_again(std::size_t port_index) = 0;
    // only_port 0: every connection.
    virtual void drop_connections(std::uint16_t only_port, const char* why) = 0;
    virtual std::uint16_t listener_port(std::size_t port_index) const = 0;
    virtual std::size_t listener_count() const = 0;

  protected:
    ~ListenerControl() = default;
};

class ListenerFaults {
  public:
    explicit ListenerFaults(const FaultConfig& faults)
        : faults_(faults), port_down_done_(faults.ports_down.size(), false) {}

    // Fires what is due by `counted` commands and `now`.
    void run(const TransportFaults& counted, Stats& stats, CommandCore& core,
             ListenerControl& server, Clock::time_point now);

  private:
    const FaultConfig& faults_;
    std::size_t next_outage_ = 0;
    std::vector<bool> port_down_done_;
    std::vector<bool> down_for_good_;  // by port index, once a port-down-after fired
    std::size_t next_ana_change_ = 0;
    std::optional<Clock::time_point> relisten_at_;  // during an outage-after fault
};

}  // namespace nvmeof::target
