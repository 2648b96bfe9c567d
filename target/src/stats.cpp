#include "stats.hpp"

#include <cstdio>
#include <fstream>

#include "nvmeof/wire/fabrics.hpp"

namespace nvmeof::target {
namespace {

constexpr const char* kCommandKeys[] = {
    "read",         "write",        "flush",        "write_zeroes", "dataset_management",
    "compare",      "identify",     "connect",      "property_get", "property_set",
    "set_features", "get_features", "get_log_page", "keep_alive",   "other",
};
static_assert(std::size(kCommandKeys) == static_cast<std::size_t>(CommandKind::count_));

}  // namespace

CommandKind command_kind(const wire::Sqe& sqe, wire::QueueKind queue) {
    using wire::AdminOpcode;
    using wire::FabricsType;
    using wire::IoOpcode;
    if (sqe.opcode == wire::kFabricsOpcode) {
        switch (static_cast<FabricsType>(wire::as_fabrics(sqe).fctype)) {
            case FabricsType::connect:
                return CommandKind::connect;
            case FabricsType::property_get:
                return CommandKind::property_get;
            case FabricsType::property_set:
                return CommandKind::property_set;
            default:
                return CommandKind::other;
        }
    }
    if (queue == wire::QueueKind::io) {
        switch (static_cast<IoOpcode>(sqe.opcode)) {
            case IoOpcode::read:
                return CommandKind::read;
            case IoOpcode::write:
                return CommandKind::write;
            case IoOpcode::flush:
                return CommandKind::flush;
            case IoOpcode::write_zeroes:
                return CommandKind::write_zeroes;
            case IoOpcode::dataset_management:
                return CommandKind::dataset_management;
            case IoOpcode::compare:
                return CommandKind::compare;
            default:
                return CommandKind::other;
        }
    }
    switch (static_cast<AdminOpcode>(sqe.opcode)) {
        case AdminOpcode::identify:
            return CommandKind::identify;
        case AdminOpcode::set_features:
            return CommandKind::set_features;
        case AdminOpcode::get_features:
            return CommandKind::get_features;
        case AdminOpcode::get_log_page:
            return CommandKind::get_log_page;
        case AdminOpcode::keep_alive:
            return CommandKind::keep_alive;
        default:
            return CommandKind::other;
    }
}

std::string Stats::to_json() const {
    std::string out = "{\"commands\": {";
    for (std::size_t i = 0; i < std::size(kCommandKeys); ++i) {
        out += (i == 0 ? "\"" : ", \"") + std::string(kCommandKeys[i]) +
               "\": " + std::to_string(commands[i]);
    }
    out += "}, \"bytes\": {\"read\": " + std::to_string(bytes_read) +
           ", \"write\": " + std::to_string(bytes_written) + "}";
    out += ", \"rdma\": {\"read_ops\": " + std::to_string(rdma_read_ops) +
           ", \"write_ops\": " + std::to_string(rdma_write_ops) +
           ", \"post_send_calls\": " + std::to_string(post_send_calls) + "}";
    out += ", \"tcp\": {\"r2t\": " + std::to_string(tcp_r2t_pdus) +
           ", \"h2c_data\": " + std::to_string(tcp_h2c_data_pdus) +
           ", \"c2h_data\": " + std::to_string(tcp_c2h_data_pdus) +
           ", \"term_reqs\": " + std::to_string(tcp_term_reqs) +
           ", \"faults\": " + std::to_string(tcp_faults) + "}";
    out += ", \"in_capsule_writes\": " + std::to_string(in_capsule_writes);
    out += ", \"errors\": " + std::to_string(errors);
    out += ", \"max_inflight\": {\"io\": " + std::to_string(max_inflight_io) +
           ", \"admin\": " + std::to_string(max_inflight_admin) + "}";
    out += ", \"io_queue_commands\": {";
    for (const auto& [qid, count] : io_queue_commands) {
        out += (qid == io_queue_commands.begin()->first ? "\"" : ", \"") + std::to_string(qid) +
               "\": " + std::to_string(count);
    }
    out += "}";
    out += ", \"controllers\": " + std::to_string(controllers);
    out += ", \"faults_injected\": " + std::to_string(faults_injected);
    out += ", \"namespaces\": [";
    bool first = true;
    for (const auto& [key, ns] : namespaces) {
        out += std::string(first ? "" : ", ") + "{\"subnqn\": \"" + key.first +
               "\", \"nsid\": " + std::to_string(key.second) +
               ", \"commands\": {\"read\": " + std::to_string(ns.read_commands) +
               ", \"write\": " + std::to_string(ns.write_commands) +
               "}, \"bytes\": {\"read\": " + std::to_string(ns.bytes_read) +
               ", \"write\": " + std::to_string(ns.bytes_written) + "}}";
        first = false;
    }
    out += "]";
    out += "}\n";
    return out;
}

bool write_stats_file(const Stats& stats, const std::string& path) {
    // Write a sibling file and rename it, so a reader never sees half a file.
    const std::string temporary = path + ".tmp";
    {
        std::ofstream file(temporary, std::ios::trunc);
        file << stats.to_json();
        file.close();
        if (!file) {
            std::fprintf(stderr, "nvmeof-target: cannot write stats to %s\n", temporary.c_str());
            return false;
        }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "nvmeof-target: cannot rename stats file to %s\n", path.c_str());
        return false;
    }
    return true;
}

}  // namespace nvmeof::target
