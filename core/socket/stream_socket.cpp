#include "socket/stream_socket.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace nvmeof::sockets {
namespace {

[[noreturn]] void fail(int error, const char* step) {
    throw std::system_error(error, std::generic_category(), step);
}

void configure(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        fail(errno, "making the TCP socket non-blocking");
    }
    // A capsule is a whole message: sent at once, never held back for more.
    const int on = 1;
    if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) < 0) {
        fail(errno, "setting TCP_NODELAY");
    }
}

int poll_timeout_ms(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : static_cast<int>(left);
}

}  // namespace

socklen_t address_length(const sockaddr* address) noexcept {
    switch (address->sa_family) {
        case AF_INET:
            return sizeof(sockaddr_in);
        case AF_INET6:
            return sizeof(sockaddr_in6);
        default:
            return 0;
    }
}

StreamSocket::StreamSocket(int fd) : fd_(fd) {
    try {
        configure(fd_);
    } catch (...) {
        close();
        throw;
    }
}

StreamSocket::StreamSocket(StreamSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

StreamSocket& StreamSocket::operator=(StreamSocket&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

StreamSocket::~StreamSocket() {
    close();
}

StreamSocket StreamSocket::connect(const sockaddr* target, const sockaddr* source,
                                   Clock::time_point deadline) {
    const socklen_t target_length = address_length(target);
    if (target_length == 0) {
        fail(EAFNOSUPPORT, "connecting: the address is neither IPv4 nor IPv6");
    }
    const int fd = ::socket(target->sa_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        fail(errno, "creating a TCP socket");
    }
    StreamSocket socket(fd);
    if (source != nullptr && ::bind(fd, source, address_length(source)) < 0) {
        fail(errno, "binding the TCP socket to the source address");
    }
    if (::connect(fd, target, target_length) < 0) {
        if (errno != EINPROGRESS) {
            fail(errno, "connecting");
        }
        if (!socket.wait(POLLOUT, deadline)) {
            fail(ETIMEDOUT, "connecting");
        }
        int error = 0;
        socklen_t length = sizeof error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) {
            fail(errno, "connecting (reading SO_ERROR)");
        }
        if (error != 0) {
            fail(error, "connecting");
        }
    }
    return socket;
}

std::int64_t StreamSocket::send(std::span<const iovec> parts) noexcept {
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(parts.data());
    message.msg_iovlen = parts.size();
    for (;;) {
        const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent >= 0) {
            return sent;
        }
        if (errno == EINTR) {
            continue;
        }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    }
}

std::int64_t StreamSocket::receive(std::span<const iovec> parts) noexcept {
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(parts.data());
    message.msg_iovlen = parts.size();
    for (;;) {
        const ssize_t received = ::recvmsg(fd_, &message, MSG_DONTWAIT);
        if (received > 0) {
            return received;
        }
        if (received == 0) {
            return -ECONNRESET;  // the peer closed: nothing more will come
        }
        if (errno == EINTR) {
            continue;
        }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    }
}

bool StreamSocket::wait(short events, Clock::time_point deadline) const {
    pollfd p{fd_, events, 0};
    for (;;) {
        const int n = ::poll(&p, 1, poll_timeout_ms(deadline));
        if (n > 0) {
            return true;
        }
        if (n == 0) {
            return false;
        }
        if (errno != EINTR) {
            fail(errno, "waiting on the TCP socket");
        }
    }
}

void StreamSocket::shutdown() noexcept {
    if (fd_ >= 0) {
        ::shutdown(fd_, SHUT_RDWR);
    }
}

void StreamSocket::close() noexcept {
    if (fd_ >= 0) {
        ::close(std::exchange(fd_, -1));
    }
}

}  // namespace nvmeof::sockets
