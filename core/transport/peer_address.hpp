// Where a queue connects: the target's address (and the source's, when given),
// resolved once per path by the host, for either transport (RDMA-CM resolves
// it to a device, a TCP queue connects a socket to it).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace nvmeof::detail {

struct PeerAddress {
    sockaddr_storage target{};
    sockaddr_storage source{};
    bool has_source = false;
    std::string target_text;  // "addr:port"
};
// Resolves numeric or named addresses; throws ConnectError.
PeerAddress resolve_peer(const std::string& target, std::uint16_t port, const std::string& source);
// "10.0.0.2:4420", "[::1]:4420".
std::string address_text(const sockaddr* address);

}  // namespace nvmeof::detail
