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

// What a queue's transport did over the queue's life (every connection, its
// Fabrics Connect included), for "system calls per I/O" and "bytes copied
// per I/O" (IoQueue::transport_counters()). NVMe/TCP counts all of it; over
// NVMe/RDMA the data path makes no system call and copies nothing, and every
// field is 0.
struct TransportCounters {
    std::uint64_t pdus_sent = 0;
    std::uint64_t pdus_received = 0;
    std::uint64_t send_calls = 0;     // sendmsg
    std::uint64_t receive_calls = 0;  // recvmsg
    // Read data copied out of the queue's receive buffer, and received
    // straight into the caller's memory.
    std::uint64_t bytes_copied = 0;
    std::uint64_t bytes_direct = 0;
};

}  // namespace nvmeof
