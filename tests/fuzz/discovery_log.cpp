// Fuzz target: the discovery log (the Get Log Page results the host reads), by
// the host's read procedure: header, records in chunks, header again, start
// over while GENCTR moves. Also the one-buffer parser.
// Input: chunk size, attempts, a GENCTR change schedule, then the log bytes
// (zero past their end, as a target's short log page reads).
#include <algorithm>
#include <cstring>
#include <string>

#include "fuzz_bytes.hpp"
#include "nvmeof/discovery.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/discovery.hpp"

namespace wire = nvmeof::wire;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    nvmeof::DiscoveryOptions options;
    options.chunk_bytes = 64u * (1u + (in.take<std::uint8_t>() & 0x3F));
    options.max_attempts = 1u + (in.take<std::uint8_t>() & 0x3);
    const auto genctr_moves = in.take<std::uint8_t>();  // bit i: header read i sees GENCTR + i
    const std::span<const std::uint8_t> log = in.rest();

    unsigned header_reads = 0;
    std::uint64_t bytes_read = 0;
    const nvmeof::LogPageReader reader = [&](std::uint64_t offset, std::span<std::byte> out) {
        require(out.size() <= options.chunk_bytes, "a Get Log Page longer than the chunk");
        require(offset % wire::kDwordSize == 0 && out.size() % wire::kDwordSize == 0,
                "a Get Log Page not in dwords");
        bytes_read += out.size();
        std::fill(out.begin(), out.end(), std::byte{0});
        if (offset < log.size()) {
            const std::size_t n = std::min<std::uint64_t>(out.size(), log.size() - offset);
            std::memcpy(out.data(), log.data() + offset, n);
        }
        if (offset == 0 && out.size() >= sizeof(std::uint64_t)) {
            if ((genctr_moves >> (header_reads % 8)) & 1) {
                std::uint64_t genctr = 0;
                std::memcpy(&genctr, out.data(), sizeof genctr);
                genctr += header_reads + 1;
                std::memcpy(out.data(), &genctr, sizeof genctr);
            }
            ++header_reads;
        }
    };
    try {
        const nvmeof::DiscoveryLog result = nvmeof::read_discovery_log(reader, options);
        require(result.records.size() <= nvmeof::kMaxDiscoveryRecords,
                "more records than the host accepts");
        for (const auto& record : result.records) {
            require(record.subsystem_nqn.size() <= sizeof(wire::DiscoveryLogEntry::subnqn) &&
                        record.address.size() <= sizeof(wire::DiscoveryLogEntry::traddr) &&
                        record.service_id.size() <= sizeof(wire::DiscoveryLogEntry::trsvcid),
                    "a record field longer than its bytes");
        }
    } catch (const nvmeof::ConnectError& e) {
        require(e.what() != nullptr && *e.what() != '\0', "a discovery error without text");
    }
    const std::uint64_t bound =
        (options.max_attempts * 2 + 1) * sizeof(wire::DiscoveryLogHeader) +
        options.max_attempts * nvmeof::kMaxDiscoveryRecords * wire::kDiscoveryRecordSize;
    require(bytes_read <= bound, "the host read more of the log than its limits allow");

    try {
        for (const auto& record : wire::parse_discovery_log(log.data(), log.size())) {
            (void)record;
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
