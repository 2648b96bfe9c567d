// Connection options (designated-initialiser friendly) and the host identity.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "nvmeof/base/transport.hpp"
#include "nvmeof/wire/common.hpp"

namespace nvmeof {

using namespace std::chrono_literals;

// NVMe/RDMA and NVMe/TCP I/O controllers, and RDMA discovery (IANA 4420).
inline constexpr std::uint16_t kDefaultPort = wire::kDefaultPort;
inline constexpr std::uint16_t kDefaultQueueDepth = 128;
inline constexpr std::chrono::milliseconds kDefaultTimeout = 30s;

// Fields are in the order designated initialisers must follow:
//   nvmeof::Controller::connect({.target = "10.0.0.2", .subsystem_nqn = nqn, .io_queues = 2});
struct Options {
    // IPv4/IPv6 address of the target. Several paths to the same subsystem, for
    // reconnecting (ctrl_loss_tmo): "10.0.0.2,10.0.0.3"; a path may carry its
    // own port: "10.0.0.2:4421", "[::1]:4421".
    std::string target{};
    std::string subsystem_nqn{};
    std::uint16_t port = kDefaultPort;
    // NVMe/RDMA, or NVMe/TCP (nvme-cli's -t rdma / -t tcp).
    Transport transport = Transport::rdma;
    // optional local address: RDMA binds RDMA-CM to it (it picks the HCA), TCP
    // binds its sockets to it
    std::string source{};
    std::string host_nqn{};  // default: /etc/nvme/hostnqn, else derived from host_id
    std::string host_id{};   // UUID text; default: /etc/nvme/hostid, else /etc/machine-id
    std::uint16_t queue_depth = kDefaultQueueDepth;  // I/O queue size asked for; negotiated down
    std::uint32_t io_queues = 1;
    // Deadline of the whole connect(), every step together (address and route
    // resolution, CM connects, Fabrics Connects, properties, the CSTS.RDY wait,
    // Identify, queue creation): each step gets only the time left, and the
    // ConnectError names the step that ran out. Once live, also the deadline of
    // each admin request (and of I/O requests when io_timeout is 0).
    std::chrono::milliseconds timeout = kDefaultTimeout;
    // Keep-alive timeout (KATO) asked for in the admin Connect; 0 disables it.
    // With a timeout, call Controller::keep_connected() regularly (see there).
    std::uint32_t keep_alive_ms = 0;
    bool random_host_id = false;  // a fresh random host ID instead of the stable default
    // Deadline of each I/O-queue request; 0 means the same as `timeout`.
    std::chrono::milliseconds io_timeout{0};
    // Reconnect (the kernel's nvme-fabrics timers; see docs/reconnect.md).
    // With ctrl_loss_tmo 0 (the default here; the kernel's is 600 s) a failed
    // queue stays failed and its transfers fail back. Otherwise
    // a queue failure (WC error, disconnect, keep-alive or request timeout)
    // tears every queue down, and every reconnect_delay (kernel: 10 s) the whole
    // association is tried again, on the next address of `target` when it lists
    // several ("10.0.0.2,10.0.0.3": paths to the same subsystem). Transfers in
    // flight are held and re-sent in order once reconnected; new ones are
    // refused busy, or fail with ENOLINK once fast_io_fail_tmo has passed
    // (0, the kernel's default: off). After ctrl_loss_tmo the controller gives
    // up and everything fails with ENODEV. Driven from keep_connected(), no thread.
    std::chrono::milliseconds ctrl_loss_tmo{0};
    std::chrono::milliseconds reconnect_delay{10000};
    std::chrono::milliseconds fast_io_fail_tmo{0};
    // DH-HMAC-CHAP (in-band authentication), used when a queue's Connect asks
    // for it: "DHHC-1:<hh>:<base64>:" as nvme-cli's gen-dhchap-key prints it,
    // or "@/path/file" holding that text. dhchap_ctrl_secret also has the
    // controller prove its key (bidirectional).
    std::string dhchap_secret{};
    std::string dhchap_ctrl_secret{};
    // Small writes carry their data inside the command capsule when the
    // controller allows it (Identify IOCCSZ > 4 and SGLS bit 20): the target
    // then needs no RDMA READ round trip. false: every write is keyed.
    bool in_capsule_writes = true;
    // NVMe/TCP: header and data digests (CRC-32C) asked for in ICReq, as
    // nvme-cli's --hdr-digest and --data-digest; the controller may decline.
    bool header_digest = false;
    bool data_digest = false;
};

// The rules each field follows: nvmeof/option_rules.hpp.

// Where the default host identity comes from (tests point these at fake files).
struct HostIdentityPaths {
    std::string hostnqn_file = "/etc/nvme/hostnqn";
    std::string hostid_file = "/etc/nvme/hostid";
    std::string machine_id_file = "/etc/machine-id";
};

struct HostIdentity {
    wire::HostId id{};
    std::string id_text;  // 8-4-4-4-12 lower-case UUID
    std::string nqn;
    std::string origin;  // "options", "/etc/nvme/hostid", "machine-id", "random", ...
};

// Resolves host ID and NQN: explicit options win; then /etc/nvme/hostid and
// /etc/nvme/hostnqn; then the UUID inside a host NQN of the uuid form; then a
// UUID derived from /etc/machine-id (stable across runs); random only when
// options.random_host_id is set or nothing else exists. Throws InvalidArgument
// for a malformed host_id or host_nqn.
HostIdentity resolve_host_identity(const Options& options, const HostIdentityPaths& paths = {});

// "nqn.2014-08.org.nvmexpress:uuid:<id>".
std::string host_nqn_from_id(const wire::HostId& id);
std::string format_uuid(const wire::HostId& id);
// Accepts 8-4-4-4-12 hex, either case; false otherwise.
bool parse_uuid(std::string_view text, wire::HostId& out);
// A name-based UUID (version 8 layout) from a machine ID, so the raw machine ID is
// never sent on the wire.
wire::HostId host_id_from_machine_id(std::string_view machine_id);

}  // namespace nvmeof
