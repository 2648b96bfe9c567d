// Counters written as JSON on exit (--stats), in the layout of docs/target-cli.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::target {

enum class CommandKind : std::uint8_t {
    read,
    write,
    flush,
    write_zeroes,
    dataset_management,
    compare,
    identify,
    connect,
    property_get,
    property_set,
    set_features,
    get_features,
    get_log_page,
    keep_alive,
    other,
    count_,
};

CommandKind command_kind(const wire::Sqe& sqe, wire::QueueKind queue);

// Data moved per namespace, so a test can prove each I/O reached the namespace
// the host meant.
struct NamespaceStats {
    std::uint64_t read_commands = 0;
    std::uint64_t write_commands = 0;
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_written = 0;
};

struct Stats {
    std::uint64_t commands[static_cast<std::size_t>(CommandKind::count_)] = {};
    std::uint64_t bytes_read = 0;     // sent to the host by Read
    std::uint64_t bytes_written = 0;  // received by Write
    std::uint64_t rdma_read_ops = 0;
    std::uint64_t rdma_write_ops = 0;
    std::uint64_t post_send_calls = 0;  // ibv_post_send calls: a pass posts its work in one
    // NVMe/TCP PDUs: R2Ts and C2HData sent, H2CData received, C2HTermReqs
    // sent (each one closed a connection over a malformed PDU); the NVMe/TCP
    // faults injected.
    std::uint64_t tcp_r2t_pdus = 0;
    std::uint64_t tcp_h2c_data_pdus = 0;
    std::uint64_t tcp_c2h_data_pdus = 0;
    std::uint64_t tcp_term_reqs = 0;
    std::uint64_t tcp_faults = 0;  // NVMe/TCP faults injected (also in faults_injected)
    std::uint64_t in_capsule_writes = 0;
    std::uint64_t errors = 0;
    std::uint64_t max_inflight_io = 0;
    std::uint64_t max_inflight_admin = 0;
    std::uint64_t controllers = 0;
    std::uint64_t faults_injected = 0;
    std::map<std::pair<std::string, std::uint32_t>, NamespaceStats> namespaces;  // (NQN, NSID)
    // Commands received per I/O queue ID, over every controller: how a host
    // spreads its work over its queues.
    std::map<std::uint16_t, std::uint64_t> io_queue_commands;

    NamespaceStats& of_namespace(const std::string& nqn, std::uint32_t nsid) {
        return namespaces[{nqn, nsid}];
    }

    void count(CommandKind kind) { ++commands[static_cast<std::size_t>(kind)]; }
    std::uint64_t count_of(CommandKind kind) const {
        return commands[static_cast<std::size_t>(kind)];
    }
    std::string to_json() const;
};

// Writes stats.to_json() to path; returns false (after logging) on failure.
bool write_stats_file(const Stats& stats, const std::string& path);

}  // namespace nvmeof::target
