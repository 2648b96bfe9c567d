// The NVMe/TCP side of the target: listening sockets (one per --port), one
// TcpQueue per accepted connection, and the single poll() loop over all of
// them, with the timers (keep-alive, delayed completions) and the listener
// faults of docs/target-cli.md.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core.hpp"
#include "listener_faults.hpp"
#include "queue_context.hpp"
#include "tcp_queue.hpp"

namespace nvmeof::target {

class TcpServer final : private ListenerControl {
  public:
    TcpServer(CommandCore& core, const TargetConfig& config, Stats& stats);
    ~TcpServer();
    TcpServer(const TcpServer&) = delete;
    TcpServer& operator=(const TcpServer&) = delete;

    // Binds and listens on every --port; returns the real ports (also where 0
    // was asked), in the order given. Throws std::system_error.
    std::vector<std::uint16_t> listen();
    // Serves until `stop` becomes non-zero.
    void run(const volatile std::sig_atomic_t& stop);
    // Closes every connection, sending what can still be sent.
    void shutdown();

  private:
    struct Listener {
        int fd = -1;  // -1 while down
        std::uint16_t port = 0;
    };

    // One listening socket on `port` (0: any); returns it and the real port.
    int bind_listener(std::uint16_t port, std::uint16_t& real_port);
    void close_listener(Listener& listener);
    void accept_all(std::size_t index);
    void remove_closed();
    void disconnect_controller(std::uint16_t cntlid, const char* why);
    // ListenerControl, for the outage-after, port-down-after and ana-change-after faults.
    void stop_listening(std::size_t port_index) override;
    void listen_again(std::size_t port_index) override;
    void drop_connections(std::uint16_t only_port, const char* why) override;
    std::uint16_t listener_port(std::size_t port_index) const override {
        return listeners_[port_index].port;
    }
    std::size_t listener_count() const override { return listeners_.size(); }
    void wait_for_work(Clock::time_point deadline);

    CommandCore& core_;
    const TargetConfig& config_;
    Stats& stats_;
    TransportFaults faults_;
    std::vector<Listener> listeners_;
    std::vector<std::unique_ptr<TcpQueue>> queues_;
    ListenerFaults listener_faults_{config_.faults};
};

}  // namespace nvmeof::target
