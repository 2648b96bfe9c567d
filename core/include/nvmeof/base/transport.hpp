// Which fabric a controller's queues run over.
//
// The base layer's: the host picks a transport by it and the queues carry it
// as their tag (transport/host_queue.hpp). Programs include nvmeof/options.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nvmeof {

// NVMe/RDMA (RoCE, InfiniBand, iWARP; softverbs) or NVMe/TCP.
enum class Transport : std::uint8_t { rdma, tcp };

// "rdma", "tcp": nvme-cli's --transport names.
constexpr std::string_view transport_name(Transport transport) noexcept {
    return transport == Transport::tcp ? "tcp" : "rdma";
}
// nvme-cli's and SPDK's names, any case ("rdma", "RDMA", "tcp", "TCP"); none otherwise.
std::optional<Transport> parse_transport(std::string_view text) noexcept;

}  // namespace nvmeof
