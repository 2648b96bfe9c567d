// A connected TCP stream for NVMe/TCP queues: non-blocking, Nagle off, owned
// by one object. The data path calls send() and receive(), one system call
// each, gathering and scattering over iovecs so that a commit's PDUs leave in
// one sendmsg and one recvmsg drains what has arrived. Waiting (connect, idle
// polls) is off the data path, bounded by a deadline.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <span>

namespace nvmeof::sockets {

using Clock = std::chrono::steady_clock;

class StreamSocket {
  public:
    StreamSocket() = default;
    // Adopts a connected stream socket and makes it non-blocking, without Nagle.
    explicit StreamSocket(int fd);
    StreamSocket(const StreamSocket&) = delete;
    StreamSocket& operator=(const StreamSocket&) = delete;
    StreamSocket(StreamSocket&& other) noexcept;
    StreamSocket& operator=(StreamSocket&& other) noexcept;
    ~StreamSocket();

    // Connects to `target` (from `source` when it is not null) before
    // `deadline`. Throws std::system_error naming the step that failed
    // (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH... as the kernel says).
    static StreamSocket connect(const sockaddr* target, const sockaddr* source,
                                Clock::time_point deadline);

    // One sendmsg gathering `parts`: the bytes the kernel took (possibly
    // fewer than offered), 0 when its send buffer is full, -errno on failure.
    std::int64_t send(std::span<const iovec> parts) noexcept;
    // One recvmsg scattering into `parts`: the bytes received, 0 with nothing
    // to read, -ECONNRESET when the peer closed, -errno on failure.
    std::int64_t receive(std::span<const iovec> parts) noexcept;
    // Off the data path: waits until `events` (POLLIN, POLLOUT) or the
    // deadline. True when ready (or the socket has an error to report).
    bool wait(short events, Clock::time_point deadline) const;

    int fd() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    // Both directions down: a peer sees the connection end, the fd stays owned.
    void shutdown() noexcept;
    void close() noexcept;

  private:
    int fd_ = -1;
};

// The address family's length of a sockaddr (IPv4 or IPv6; 0 otherwise).
socklen_t address_length(const sockaddr* address) noexcept;

}  // namespace nvmeof::sockets
