// The RDMA-CM side of the target: listen, validate and accept (or reject)
// connection requests, route CM events to queues, and run the single polling
// loop over every queue.
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core.hpp"
#include "listener_faults.hpp"
#include "rdma_queue.hpp"
#include "verbs/resources.hpp"

namespace nvmeof::target {

class RdmaServer final : private ListenerControl {
  public:
    RdmaServer(CommandCore& core, const TargetConfig& config, Stats& stats);
    ~RdmaServer();
    RdmaServer(const RdmaServer&) = delete;
    RdmaServer& operator=(const RdmaServer&) = delete;

    // Binds and listens on every --port; returns the real ports (also where 0
    // was asked), in the order given. Throws std::system_error.
    std::vector<std::uint16_t> listen();
    // Serves until `stop` becomes non-zero.
    void run(const volatile std::sig_atomic_t& stop);
    // Disconnects every queue and waits briefly for the peers to notice.
    void shutdown();

  private:
    // What to do once the CM event has been acknowledged (an id cannot be
    // destroyed while one of its events is held).
    struct AfterAck {
        RdmaQueue* remove = nullptr;
        rdma_cm_id* destroy = nullptr;
    };

    int drain_cm_events();
    AfterAck on_event(const rdma_cm_event& event);
    AfterAck on_connect_request(const rdma_cm_event& event);
    AfterAck reject(rdma_cm_id* id, std::uint16_t status, const std::string& why);
    Device& device_for(ibv_context* context);
    void remove_queue(RdmaQueue* queue);
    void disconnect_controller(std::uint16_t cntlid, const char* why);
    void reap_stuck_queues(Clock::time_point now);
    void sleep_until_work(Clock::time_point deadline);
    void drain_completion_channels();
    // One listener on `port` (0: any); returns the real port.
    verbs::CmId bind_listener(std::uint16_t port, std::uint16_t& real_port);
    // ListenerControl, for the outage-after, port-down-after and ana-change-after faults.
    void stop_listening(std::size_t port_index) override;
    void listen_again(std::size_t port_index) override;
    void drop_connections(std::uint16_t only_port, const char* why) override;
    std::uint16_t listener_port(std::size_t port_index) const override {
        return listeners_[port_index].port;
    }
    std::size_t listener_count() const override { return listeners_.size(); }

    struct Listener {
        verbs::CmId id;          // empty while down
        std::uint16_t port = 0;  // the real port, kept across an outage
    };

    CommandCore& core_;
    const TargetConfig& config_;
    Stats& stats_;
    TransportFaults faults_;
    verbs::EventChannel channel_;
    std::vector<Listener> listeners_;
    ListenerFaults listener_faults_{config_.faults};
    std::map<ibv_context*, std::unique_ptr<Device>> devices_;
    std::vector<std::unique_ptr<RdmaQueue>> queues_;  // destroyed before devices and channel
    std::map<RdmaQueue*, Clock::time_point> disconnecting_since_;
};

}  // namespace nvmeof::target
