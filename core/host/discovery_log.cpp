// The discovery log read procedure (NVMe-oF: Discovery Log Page): header, every
// record, header again; start over while the generation counter moved.
#include <algorithm>
#include <string>
#include <vector>

#include "host/discovery_options.hpp"
#include "nvmeof/discovery.hpp"
#include "nvmeof/wire/admin.hpp"

namespace nvmeof {
namespace detail {

void validate_discovery_options(const DiscoveryOptions& discovery) {
    if (discovery.chunk_bytes < wire::kDwordSize || discovery.chunk_bytes % wire::kDwordSize != 0) {
        throw ConnectError(ConnectFailure::invalid_options, "options",
                           "discovery chunk_bytes " + std::to_string(discovery.chunk_bytes) +
                               " is not a positive multiple of 4");
    }
    if (discovery.max_attempts == 0) {
        throw ConnectError(ConnectFailure::invalid_options, "options",
                           "discovery max_attempts must be at least 1");
    }
}

}  // namespace detail

namespace {

constexpr char kStep[] = "Get Log Page (discovery log)";

[[noreturn]] void malformed(const std::string& why) {
    throw ConnectError(ConnectFailure::discovery_log, kStep, why);
}

// Reads [offset, offset + out.size()) in pieces of at most `chunk` bytes.
void read_range(const LogPageReader& read, std::uint64_t offset, std::span<std::byte> out,
                std::size_t chunk) {
    for (std::size_t done = 0; done < out.size(); done += chunk) {
        const std::size_t n = std::min(chunk, out.size() - done);
        read(offset + done, out.subspan(done, n));
    }
}

wire::DiscoveryLogHeader read_header(const LogPageReader& read, std::size_t chunk) {
    wire::DiscoveryLogHeader header{};
    read_range(read, 0, std::as_writable_bytes(std::span(&header, 1)), chunk);
    return header;
}

}  // namespace

DiscoveryLog read_discovery_log(const LogPageReader& read, const DiscoveryOptions& discovery) {
    detail::validate_discovery_options(discovery);
    const std::size_t chunk = discovery.chunk_bytes;
    std::uint64_t first_generation = 0;
    for (unsigned attempt = 1; attempt <= discovery.max_attempts; ++attempt) {
        const wire::DiscoveryLogSummary before =
            wire::parse_discovery_log_header(read_header(read, chunk));
        if (attempt == 1) {
            first_generation = before.generation;
        }
        if (before.format != 0) {
            malformed("RECFMT " + std::to_string(before.format) +
                      " is not 0 (unknown record format)");
        }
        if (before.records > kMaxDiscoveryRecords) {
            malformed("NUMREC " + std::to_string(before.records) + " is above the " +
                      std::to_string(kMaxDiscoveryRecords) + " records this host accepts");
        }
        DiscoveryLog log;
        log.generation = before.generation;
        if (before.records == 0) {
            return log;  // the header alone was read in one go
        }
        std::vector<wire::DiscoveryLogEntry> entries(before.records);
        read_range(read, sizeof(wire::DiscoveryLogHeader),
                   std::as_writable_bytes(std::span(entries)), chunk);
        const wire::DiscoveryLogSummary after =
            wire::parse_discovery_log_header(read_header(read, chunk));
        if (after.generation != before.generation || after.records != before.records) {
            continue;  // the log changed while it was read: the records may be torn
        }
        log.records.reserve(entries.size());
        for (const auto& entry : entries) {
            log.records.push_back(wire::parse_discovery_entry(entry));
        }
        return log;
    }
    malformed("the log changed during each of " + std::to_string(discovery.max_attempts) +
              " reads (GENCTR " + std::to_string(first_generation) + " and on)");
}

}  // namespace nvmeof
