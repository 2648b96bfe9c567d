// The socket layer over loopback: a non-blocking connect within its deadline,
// one sendmsg gathering several parts, one recvmsg scattering them, a full
// send buffer answered with 0 instead of blocking, and the errors a host
// reports (refused, reset by a closed peer).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "socket/stream_socket.hpp"

namespace s = nvmeof::sockets;
using namespace std::chrono_literals;

namespace {

// A listening loopback socket on a port the kernel picks.
struct Listener {
    int fd = -1;
    sockaddr_in address{};
    Listener() {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        socklen_t length = sizeof address;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
        EXPECT_EQ(::listen(fd, 4), 0);
    }
    ~Listener() { ::close(fd); }
    const sockaddr* addr() const { return reinterpret_cast<const sockaddr*>(&address); }
    s::StreamSocket accept() const {
        return s::StreamSocket(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    }
};

}  // namespace

TEST(StreamSocket, GathersAndScatters) {
    Listener listener;
    s::StreamSocket host = s::StreamSocket::connect(listener.addr(), nullptr, s::Clock::now() + 5s);
    s::StreamSocket target = listener.accept();
    char header[8] = "header!";
    char data[5] = "data";
    const iovec out[] = {{header, 8}, {data, 4}};
    EXPECT_EQ(host.send(out), 12);

    char got_header[8]{};
    char got_data[4]{};
    const iovec in[] = {{got_header, 8}, {got_data, 4}};
    ASSERT_TRUE(target.wait(POLLIN, s::Clock::now() + 5s));
    std::int64_t received = 0;
    while (received < 12) {
        const std::int64_t n = target.receive(in);  // loopback delivers all at once
        ASSERT_GE(n, 0);
        received += n;
    }
    EXPECT_EQ(received, 12);
    EXPECT_EQ(std::string(got_header), "header!");
    EXPECT_EQ(std::string(got_data, 4), "data");
    // Nothing more: 0, not a block.
    EXPECT_EQ(target.receive(in), 0);
}

TEST(StreamSocket, FullSendBufferIsZeroNotABlock) {
    Listener listener;
    s::StreamSocket host = s::StreamSocket::connect(listener.addr(), nullptr, s::Clock::now() + 5s);
    s::StreamSocket target = listener.accept();
    std::vector<char> chunk(1 << 20, 'x');
    const iovec out[] = {{chunk.data(), chunk.size()}};
    std::int64_t total = 0;
    for (int i = 0; i < 256; ++i) {
        const std::int64_t n = host.send(out);
        ASSERT_GE(n, 0);
        if (n == 0) {
            break;
        }
        total += n;
    }
    EXPECT_EQ(host.send(out), 0) << "the peer reads nothing, so the buffers fill";
    EXPECT_GT(total, 0);
}

TEST(StreamSocket, ClosedPeerIsReset) {
    Listener listener;
    s::StreamSocket host = s::StreamSocket::connect(listener.addr(), nullptr, s::Clock::now() + 5s);
    listener.accept().close();
    char byte = 0;
    const iovec in[] = {{&byte, 1}};
    ASSERT_TRUE(host.wait(POLLIN, s::Clock::now() + 5s));
    EXPECT_EQ(host.receive(in), -ECONNRESET);
}

TEST(StreamSocket, RefusedConnectNamesTheError) {
    sockaddr_in nobody{};
    {
        Listener listener;  // a port that was just free, closed again
        nobody = listener.address;
    }
    try {
        s::StreamSocket::connect(reinterpret_cast<sockaddr*>(&nobody), nullptr,
                                 s::Clock::now() + 5s);
        FAIL() << "connected to a closed port";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ECONNREFUSED);
        EXPECT_NE(std::string(e.what()).find("connecting"), std::string::npos);
    }
}

TEST(StreamSocket, UnknownFamilyIsRefused) {
    sockaddr unix_family{};
    unix_family.sa_family = AF_UNIX;
    EXPECT_THROW(s::StreamSocket::connect(&unix_family, nullptr, s::Clock::now() + 1s),
                 std::system_error);
}
