#include "transport/peer_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>

#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail {

std::string address_text(const sockaddr* address) {
    char host[INET6_ADDRSTRLEN] = {};
    std::uint16_t port = 0;
    if (address->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(address);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    if (address->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        return "[" + std::string(host) + "]:" + std::to_string(port);
    }
    return "?";
}

// "[::1]" as URLs and SPDK write IPv6 addresses: the brackets are not part of the address.
static std::string unbracketed(const std::string& host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        return host.substr(1, host.size() - 2);
    }
    return host;
}

static bool lookup(const std::string& host, std::uint16_t port, sockaddr_storage& out, int& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    const std::string service = std::to_string(port);
    error = getaddrinfo(unbracketed(host).c_str(), service.c_str(), &hints, &result);
    if (error != 0 || result == nullptr) {
        return false;
    }
    std::memcpy(&out, result->ai_addr, result->ai_addrlen);
    freeaddrinfo(result);
    return true;
}

PeerAddress resolve_peer(const std::string& target, std::uint16_t port, const std::string& source) {
    PeerAddress peer;
    int error = 0;
    if (target.empty()) {
        throw ConnectError(ConnectFailure::invalid_options, "options", "no target address given");
    }
    if (!lookup(target, port, peer.target, error)) {
        throw ConnectError(ConnectFailure::address_unreachable, "resolving the target address",
                           "'" + target + "': " + gai_strerror(error));
    }
    if (!source.empty()) {
        if (!lookup(source, 0, peer.source, error)) {
            throw ConnectError(ConnectFailure::bad_source_address, "resolving the source address",
                               "'" + source + "': " + gai_strerror(error));
        }
        peer.has_source = true;
    }
    peer.target_text = address_text(reinterpret_cast<const sockaddr*>(&peer.target));
    return peer;
}

}  // namespace nvmeof::detail
