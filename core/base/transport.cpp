#include "nvmeof/base/transport.hpp"

#include <algorithm>
#include <cctype>

#include "nvmeof/wire/common.hpp"
#include "nvmeof/wire/tcp.hpp"

namespace nvmeof {

std::optional<Transport> parse_transport(std::string_view text) noexcept {
    const auto is = [&](std::string_view name) {
        return std::equal(text.begin(), text.end(), name.begin(), name.end(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == b;
        });
    };
    if (is("rdma")) {
        return Transport::rdma;
    }
    if (is("tcp")) {
        return Transport::tcp;
    }
    return std::nullopt;
}

std::uint16_t default_discovery_port(Transport transport) noexcept {
    return transport == Transport::tcp ? wire::kTcpDiscoveryPort : wire::kDefaultPort;
}

}  // namespace nvmeof
