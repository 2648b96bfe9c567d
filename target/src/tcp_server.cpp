#include "tcp_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include "nvmeof/wire/ana.hpp"

namespace nvmeof::target {
namespace {

constexpr int kListenBacklog = 128;  // as nvmet
constexpr auto kMaxSleep = std::chrono::milliseconds(100);
constexpr auto kTimerPeriod = std::chrono::milliseconds(50);
constexpr auto kShutdownWait = std::chrono::milliseconds(1000);

[[noreturn]] void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// The numeric host and the port of a socket's own address.
std::pair<std::string, std::uint16_t> local_endpoint(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return {};
    }
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof host, port,
                    sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return {};
    }
    return {host, static_cast<std::uint16_t>(std::stoul(port))};
}

}  // namespace

TcpServer::TcpServer(CommandCore& core, const TargetConfig& config, Stats& stats)
    : core_(core), config_(config), stats_(stats) {}

TcpServer::~TcpServer() {
    queues_.clear();
    for (auto& listener : listeners_) {
        close_listener(listener);
    }
}

void TcpServer::close_listener(Listener& listener) {
    if (listener.fd >= 0) {
        ::close(listener.fd);
        listener.fd = -1;
    }
}

std::vector<std::uint16_t> TcpServer::listen() {
    std::vector<std::uint16_t> asked{config_.port};
    asked.insert(asked.end(), config_.more_ports.begin(), config_.more_ports.end());
    std::vector<std::uint16_t> ports;
    for (const std::uint16_t port : asked) {
        Listener listener;
        listener.fd = bind_listener(port, listener.port);
        ports.push_back(listener.port);
        listeners_.push_back(listener);
    }
    // The discovery log names the first port.
    core_.set_listen_address(config_.listen_address, ports.front());
    return ports;
}

int TcpServer::bind_listener(std::uint16_t wanted_port, std::uint16_t& real_port) {
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_NUMERICHOST;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(wanted_port);
    if (const int rc = getaddrinfo(config_.listen_address.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
        throw std::system_error(EINVAL, std::generic_category(),
                                "--listen " + config_.listen_address + ": " + gai_strerror(rc));
    }
    const int fd =
        ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        freeaddrinfo(found);
        throw_errno("socket");
    }
    // A restarted target (or an outage-after fault) binds the same port
    // again while old connections sit in TIME_WAIT.
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const int bound = ::bind(fd, found->ai_addr, found->ai_addrlen);
    const int error = errno;
    freeaddrinfo(found);
    if (bound != 0) {
        ::close(fd);
        throw std::system_error(error, std::generic_category(),
                                "bind " + config_.listen_address + ":" + port);
    }
    if (::listen(fd, kListenBacklog) != 0) {
        const int listen_error = errno;
        ::close(fd);
        throw std::system_error(listen_error, std::generic_category(), "listen");
    }
    real_port = local_endpoint(fd).second;
    return fd;
}

void TcpServer::accept_all(std::size_t index) {
    Listener& listener = listeners_[index];
    while (listener.fd >= 0) {
        const int fd = ::accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                std::fprintf(stderr, "nvmeof-target: accept: %s\n", std::strerror(errno));
            }
            return;
        }
        // Capsules and responses are small and latency-bound: no Nagle delay.
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto [host, port] = local_endpoint(fd);
        queues_.push_back(std::make_unique<TcpQueue>(
            fd, index, port, std::move(host), QueueContext{core_, stats_, config_, faults_}));
    }
}

void TcpServer::remove_closed() {
    for (std::size_t i = 0; i < queues_.size();) {
        if (queues_[i]->state() != TcpQueue::State::closed) {
            ++i;
            continue;
        }
        QueueState& nvme = queues_[i]->nvme();
        const bool admin_connected = nvme.connected && nvme.qid == 0;
        const std::uint16_t cntlid = nvme.cntlid;
        core_.queue_disconnected(nvme);
        queues_.erase(queues_.begin() + static_cast<std::ptrdiff_t>(i));
        if (admin_connected) {
            disconnect_controller(cntlid, "its admin queue is gone");
        }
    }
}

void TcpServer::disconnect_controller(std::uint16_t cntlid, const char* why) {
    for (auto& queue : queues_) {
        if (queue->nvme().connected && queue->nvme().cntlid == cntlid) {
            queue->begin_close(why);
        }
    }
}

void TcpServer::drop_connections(std::uint16_t only_port, const char* why) {
    for (auto& queue : queues_) {
        if (only_port == 0 || queue->local_port() == only_port) {
            queue->begin_close(why);
        }
    }
}

void TcpServer::stop_listening(std::size_t port_index) {
    close_listener(listeners_[port_index]);
}

void TcpServer::listen_again(std::size_t port_index) {
    std::uint16_t port = 0;
    listeners_[port_index].fd = bind_listener(listeners_[port_index].port, port);
}

void TcpServer::wait_for_work(Clock::time_point deadline) {
    std::vector<pollfd> fds;
    fds.reserve(listeners_.size() + queues_.size());
    for (const auto& listener : listeners_) {
        fds.push_back(pollfd{listener.fd, POLLIN, 0});  // fd -1 is skipped by poll
    }
    for (const auto& queue : queues_) {
        short events = 0;
        if (queue->wants_read()) {
            events |= POLLIN;
        }
        if (queue->wants_write()) {
            events |= POLLOUT;
        }
        fds.push_back(pollfd{queue->fd(), events, 0});
    }
    const auto now = Clock::now();
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min(deadline, now + kMaxSleep) - now);
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<std::int64_t>(wait.count(), 0))) <=
        0) {
        return;
    }
    // Queues accepted below are polled from the next pass on.
    const std::size_t queue_count = queues_.size();
    for (std::size_t i = 0; i < queue_count; ++i) {
        const short revents = fds[listeners_.size() + i].revents;
        TcpQueue& queue = *queues_[i];
        if (revents == 0) {
            continue;
        }
        if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && queue.wants_read()) {
            queue.on_readable();
        }
        if ((revents & (POLLOUT | POLLHUP | POLLERR)) != 0) {
            queue.flush();
        }
    }
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
        if ((fds[i].revents & POLLIN) != 0) {
            accept_all(i);
        }
    }
}

void TcpServer::run(const volatile std::sig_atomic_t& stop) {
    auto next_timers = Clock::now();
    auto next_due = Clock::time_point::max();
    while (stop == 0) {
        wait_for_work(std::min(next_due, next_timers));
        const auto now = Clock::now();
        next_due = Clock::time_point::max();
        for (auto& queue : queues_) {
            // Commands held back while output piled up, now that some left.
            queue->pump();
            queue->deliver_async_events();
            next_due = std::min(next_due, queue->flush_delayed(now));
            queue->flush();
        }
        if (faults_.drop_requested && !faults_.drop_done) {
            faults_.drop_done = true;
            ++stats_.faults_injected;
            std::fprintf(stderr,
                         "nvmeof-target: fault: drop-after=%llu: disconnecting all queues\n",
                         static_cast<unsigned long long>(*config_.faults.drop_after));
            drop_connections(0, "drop-after fault");
        }
        if (faults_.run_then_drop && faults_.run_then_drop->ran && !faults_.run_then_drop->done) {
            faults_.run_then_drop->done = true;
            drop_connections(0, "drop-after-run fault");
        }
        listener_faults_.run(faults_, stats_, core_, *this, now);
        if (now >= next_timers) {
            next_timers = now + kTimerPeriod;
            for (const std::uint16_t cntlid : core_.expired_controllers(now)) {
                disconnect_controller(cntlid, "keep-alive timeout");
            }
            for (auto& queue : queues_) {
                if (queue->close_overdue(now)) {
                    queue->close();
                }
            }
        }
        remove_closed();
    }
}

void TcpServer::shutdown() {
    drop_connections(0, "target stopping");
    const auto deadline = Clock::now() + kShutdownWait;
    remove_closed();
    while (!queues_.empty() && Clock::now() < deadline) {
        std::vector<pollfd> fds;
        for (const auto& queue : queues_) {
            fds.push_back(pollfd{queue->fd(), POLLOUT, 0});
        }
        ::poll(fds.data(), fds.size(), 10);
        for (auto& queue : queues_) {
            queue->flush();
        }
        remove_closed();
    }
    for (auto& queue : queues_) {
        queue->close();
    }
    remove_closed();
}

}  // namespace nvmeof::target
