// The guard CRCs of end-to-end protection, table against carry-less multiply
// (CRC-32C: against the SSE4.2 CRC32 instruction, in the "clmul" column):
// GB/s over 512- and 4096-byte blocks (one call per block, as pi_generate and
// pi_verify make them), the blocks in a 256 KiB buffer that stays in cache.
//
//   build/bench/crc_bench [milliseconds per figure, default 300]
//
// Each figure is the best of five runs, the three versions taking turns (the
// machine may be shared); "public" is crc16_t10dif/crc32c/crc64_nvme as chosen. A figure,
// not a check: tests/unit/wire/protection_test.cpp checks the results.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "nvmeof/wire/protection.hpp"
#include "wire/crc.hpp"

namespace {

namespace crc = nvmeof::wire::crc;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kBufferBytes = 256 * 1024;
constexpr int kRuns = 5;

using BlockCrc = std::uint64_t (*)(const std::uint8_t*, std::size_t);

// GB/s of each function over the buffer's blocks; their runs take turns, so a
// burst of load from elsewhere falls on all of them alike.
std::vector<double> gbps(const std::vector<std::uint8_t>& buffer, std::size_t block,
                         const std::vector<BlockCrc>& fns, double seconds, std::uint64_t& sink) {
    std::vector<double> best(fns.size(), 0.0);
    for (int run = 0; run < kRuns; ++run) {
        for (std::size_t f = 0; f < fns.size(); ++f) {
            std::uint64_t bytes = 0;
            const auto start = Clock::now();
            std::chrono::duration<double> elapsed{};
            do {
                for (std::size_t at = 0; at + block <= buffer.size(); at += block) {
                    sink += fns[f](buffer.data() + at, block);
                }
                bytes += buffer.size() / block * block;
                elapsed = Clock::now() - start;
            } while (elapsed.count() < seconds / kRuns);
            const double rate = static_cast<double>(bytes) / elapsed.count() / 1e9;
            best[f] = rate > best[f] ? rate : best[f];
        }
    }
    return best;
}

std::uint64_t crc16_table(const std::uint8_t* p, std::size_t n) {
    return crc::crc16_t10dif_table(0, p, n);
}
std::uint64_t crc16_clmul(const std::uint8_t* p, std::size_t n) {
    return crc::crc16_t10dif_clmul(0, p, n);
}
std::uint64_t crc16_public(const std::uint8_t* p, std::size_t n) {
    return nvmeof::wire::crc16_t10dif(0, p, n);
}
std::uint64_t crc32c_table(const std::uint8_t* p, std::size_t n) {
    return crc::crc32c_table(0, p, n);
}
std::uint64_t crc32c_sse42(const std::uint8_t* p, std::size_t n) {
    return crc::crc32c_sse42(0, p, n);
}
std::uint64_t crc32c_public(const std::uint8_t* p, std::size_t n) {
    return nvmeof::wire::crc32c(0, p, n);
}
std::uint64_t crc64_table(const std::uint8_t* p, std::size_t n) {
    return crc::crc64_nvme_table(0, p, n);
}
std::uint64_t crc64_clmul(const std::uint8_t* p, std::size_t n) {
    return crc::crc64_nvme_clmul(0, p, n);
}
std::uint64_t crc64_public(const std::uint8_t* p, std::size_t n) {
    return nvmeof::wire::crc64_nvme(0, p, n);
}

void row(const char* name, std::size_t block, const std::vector<double>& rates, bool clmul) {
    std::printf("%-18s %6zu %12.2f %12.2f %12.2f %7.1fx\n", name, block, rates[0], clmul ? rates[1] : 0.0,
                rates[2], clmul ? rates[1] / rates[0] : 1.0);
}

}  // namespace

int main(int argc, char** argv) {
    const double seconds = (argc > 1 ? std::atof(argv[1]) : 300.0) / 1000.0;
    std::vector<std::uint8_t> buffer(kBufferBytes);
    std::mt19937 rng(1);
    for (auto& b : buffer) {
        b = static_cast<std::uint8_t>(rng());
    }
    const bool clmul = crc::clmul_supported();
    std::printf("carry-less multiply: %s\n", clmul ? "yes (PCLMULQDQ, SSE4.1)" : "no (tables only)");
    std::printf("%-18s %6s %12s %12s %12s %8s\n", "crc", "block", "table GB/s", "clmul GB/s",
                "public GB/s", "speedup");
    std::uint64_t sink = 0;
    for (const std::size_t block : {std::size_t{512}, std::size_t{4096}}) {
        // Without carry-less multiply the "clmul" functions are the tables again.
        row("CRC-16/T10-DIF", block, gbps(buffer, block, {crc16_table, crc16_clmul, crc16_public}, seconds, sink),
            clmul);
        row("CRC-32C", block, gbps(buffer, block, {crc32c_table, crc32c_sse42, crc32c_public}, seconds, sink),
            crc::sse42_supported());
        row("CRC-64/NVME", block, gbps(buffer, block, {crc64_table, crc64_clmul, crc64_public}, seconds, sink),
            clmul);
    }
    // Printed so that no result goes unused (it depends on how many runs fit).
    std::printf("(sum of the results: %016llx)\n", static_cast<unsigned long long>(sink));
    return 0;
}
