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

// The port a discovery service is reached at when none is given, as nvme-cli
// and libnvme default it: 4420 over RDMA (IANA's NVMe-oF port, which RDMA's
// discovery shares), 8009 over TCP (IANA's NVMe/TCP discovery port). An I/O
// controller's default is 4420 over either (nvmeof::kDefaultPort).
std::uint16_t default_discovery_port(Transport transport) noexcept;

}  // namespace nvmeof
