// Where the engine connects: built from the engine options and, for job files
// written for other NVMe-oF engines, from fio's `filename`
// ("trtype=RDMA adrfam=IPv4 traddr=10.0.0.1 trsvcid=4420 subnqn=nqn... ns=1",
// or trtype=TCP for NVMe/TCP).
// Pure logic, no fio headers, so it is unit-tested on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nvmeof/option_rules.hpp"
#include "nvmeof/options.hpp"

namespace nvmeof::engine {

using nvmeof::kDefaultPort;  // the library's: one home for an I/O controller's port
inline constexpr std::uint32_t kDefaultNsid = 1;
// The well-known NQN of a discovery controller (NVMe Base Specification 4.7).
inline constexpr std::string_view kDiscoveryNqn = "nqn.2014-08.org.nvmexpress.discovery";

struct TargetSpec {
    Transport transport = Transport::rdma;  // trtype
    std::string address;                    // traddr
    // trsvcid; when none is given, kDefaultPort, or for a discovery service
    // over TCP its own port (default_discovery_port: 8009)
    std::uint16_t port = kDefaultPort;
    std::string subsystem_nqn;
    std::uint32_t nsid = kDefaultNsid;
    std::string host_nqn;  // empty: the library's stable default
    std::string host_id;   // empty: the library's stable default
    // host_traddr: RDMA binds RDMA-CM to it (so it picks the HCA), TCP binds
    // its sockets to it
    std::string source;
};

// An option value or filename that makes no sense; what() names the option.
class SpecError : public std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Runs one of the library's option checks (nvmeof/option_rules.hpp), given
// the option's name as the job writes it: its refusal becomes a SpecError
// with the same line.
template <typename Check>
void core_check(Check&& check) {
    try {
        check();
    } catch (const InvalidOption& e) {
        throw SpecError(e.what());
    }
}

// The filename's key=value pairs, separated by spaces. Colons may arrive
// escaped as "\:" (fio strips the backslash itself, but a value copied from a
// shell or a job generator may still carry it). An empty value means the
// default. trtype is RDMA or TCP in any case (SPDK's names); unknown keys,
// another transport and an address family other than IPv4/IPv6 are errors.
// SPDK's `hostaddr` names the source address.
// Returns nullopt when `filename` is not in that form at all (no '=').
std::optional<TargetSpec> parse_filename_spec(std::string_view filename);

// Engine option values, as fio stores them (empty string: not given; fio turns
// an unset ${VAR} into an empty string, which means "use the default").
struct OptionValues {
    std::string_view trtype;  // rdma or tcp, any case
    std::string_view traddr;
    std::string_view trsvcid;
    std::string_view subnqn;
    std::string_view nsid;
    std::string_view hostnqn;
    std::string_view hostid;
    std::string_view host_traddr;
};

// One address as written: "10.0.0.2", "fe80::1", "[::1]" or "[::1]:4420",
// read by the library's grammar of a target path (nvmeof::split_target).
// Throws SpecError naming `what`.
using Address = TargetPath;
Address parse_address(std::string_view text, std::string_view what);

// Files of one job that name the same (transport, address, port, subsystem,
// host identity, source) share one controller: equal keys, one connection.
// RDMA and TCP to the same address and port are two controllers.
std::string controller_key(const TargetSpec& spec);

// Options win over the filename; what neither gives takes the default. Throws
// SpecError naming the missing or malformed option (traddr has no default),
// by the library's rules for each (nvmeof/option_rules.hpp). An empty subnqn
// is no error: the spec then names a discovery service, whose port when none
// is given is the transport's discovery port (4420 over RDMA, 8009 over TCP,
// as nvme-cli defaults them).
TargetSpec resolve_target(const OptionValues& options, std::string_view filename);

// A spec with no subsystem NQN, or with the discovery NQN, points at a
// discovery service: the engine reads its log and uses the NVM subsystems it
// lists (as SPDK's plugin does).
bool is_discovery_spec(const TargetSpec& spec);

// "traddr=127.0.0.1 trsvcid=4420 subnqn=nqn... ns=1" (led by trtype=TCP over
// TCP), then hostnqn=, hostid= and host_traddr= when set: the filename the
// engine gives a file it adds itself (one per discovered subsystem), so it
// resolves like any filename spec and fio's output names what was connected.
std::string canonical_filename(const TargetSpec& spec);

// The gpu= option: "" (host memory), "N" (GPU N) or "rr" (round-robin over the
// visible GPUs by job number). Throws SpecError for anything else.
struct GpuChoice {
    bool enabled = false;
    bool round_robin = false;
    int ordinal = 0;
};
GpuChoice parse_gpu_option(std::string_view value);
// The GPU job `job_index` (0-based) uses, given `visible` GPUs; throws SpecError
// when there is none or the ordinal is not visible.
int gpu_for_job(const GpuChoice& choice, unsigned int job_index, int visible);

}  // namespace nvmeof::engine
