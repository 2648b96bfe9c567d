// The guard CRCs of end-to-end protection, table against carry-less multiply
// (CRC-32C: against the SSE4.2 CRC32 instruction, in the "clmul" column):
// GB/s over 512- and 4096-byte blocks (one call per block, as pi_generate and
// pi_verify make them), the blocks in a 256 KiB buffer that stays in cache.
//
//   build/bench/crc_bench [milliseconds per figure, default 300]
//
// Then, with carry-less multiply, what the host's PI work with pi_act=0
// (pi_generate, pi_verify over 4096+8 type 1 blocks) runs at against the
// guard CRC alone over the same data.
//
// Each figure is the best of five runs, the three versions taking turns (the
// machine may be shared); "public" is crc16_t10dif/crc32c/crc64_nvme as chosen. A figure,
// not a check: tests/unit/wire/protection_test.cpp checks the results.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
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

// The host's whole PI work per block with pi_act=0 (4096+8, type 1, every
// check), against the guard CRC alone over the same data: pi_generate and
// pi_verify over one extended block per call, the rate counted in data bytes.
// The buffer holds extended blocks whose PI pi_generate wrote, so that every
// check runs and passes.
constexpr nvmeof::wire::BlockFormat kPiFormat{
    .data_bytes = 4096, .metadata_bytes = 8, .pi_type = nvmeof::wire::PiType::type1};
constexpr nvmeof::wire::PiTags kPiTags{.reftag = 7, .apptag = 0x1234};

std::uint64_t crc16_data(const std::uint8_t* p, std::size_t) {
    return crc::crc16_t10dif_clmul(0, p, kPiFormat.data_bytes);
}
std::uint64_t pi_generate_block(const std::uint8_t* p, std::size_t n) {
    // The buffer is the benchmark's own; generating rewrites the same PI.
    auto* block = reinterpret_cast<std::byte*>(const_cast<std::uint8_t*>(p));
    nvmeof::wire::pi_generate(kPiFormat, std::span(block, n), kPiTags);
    return std::to_integer<std::uint64_t>(block[kPiFormat.data_bytes]);
}
std::uint64_t pi_verify_block(const std::uint8_t* p, std::size_t n) {
    const auto* block = reinterpret_cast<const std::byte*>(p);
    return static_cast<std::uint64_t>(
        nvmeof::wire::pi_verify(kPiFormat, std::span(block, n), nvmeof::wire::kPrchkAll, kPiTags)
            .check);
}

// GB/s of data through the host's PI work per 4 KiB block, and the guard CRC's
// own rate over the same blocks.
void host_pi_rows(std::vector<std::uint8_t>& buffer, double seconds, std::uint64_t& sink) {
    const std::size_t block = kPiFormat.extended_bytes();
    for (std::size_t at = 0; at + block <= buffer.size(); at += block) {
        pi_generate_block(buffer.data() + at, block);
    }
    const std::vector<double> rates =
        gbps(buffer, block, {crc16_data, pi_generate_block, pi_verify_block}, seconds, sink);
    const double to_data = static_cast<double>(kPiFormat.data_bytes) / static_cast<double>(block);
    std::printf("\nhost PI, 4096+8 type 1, every check (GB/s of data, one call per block):\n");
    std::printf("%-18s %12.2f\n", "CRC-16 alone", rates[0] * to_data);
    std::printf("%-18s %12.2f %7.0f %%\n", "pi_generate", rates[1] * to_data,
                100.0 * rates[1] / rates[0]);
    std::printf("%-18s %12.2f %7.0f %%\n", "pi_verify", rates[2] * to_data,
                100.0 * rates[2] / rates[0]);
}

void row(const char* name, std::size_t block, const std::vector<double>& rates, bool clmul) {
    std::printf("%-18s %6zu %12.2f %12.2f %12.2f %7.1fx\n", name, block, rates[0],
                clmul ? rates[1] : 0.0, rates[2], clmul ? rates[1] / rates[0] : 1.0);
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
    std::printf("carry-less multiply: %s\n",
                clmul ? "yes (PCLMULQDQ, SSE4.1)" : "no (tables only)");
    std::printf("%-18s %6s %12s %12s %12s %8s\n", "crc", "block", "table GB/s", "clmul GB/s",
                "public GB/s", "speedup");
    std::uint64_t sink = 0;
    for (const std::size_t block : {std::size_t{512}, std::size_t{4096}}) {
        // Without carry-less multiply the "clmul" functions are the tables again.
        row("CRC-16/T10-DIF", block,
            gbps(buffer, block, {crc16_table, crc16_clmul, crc16_public}, seconds, sink), clmul);
        row("CRC-32C", block,
            gbps(buffer, block, {crc32c_table, crc32c_sse42, crc32c_public}, seconds, sink),
            crc::sse42_supported());
        row("CRC-64/NVME", block,
            gbps(buffer, block, {crc64_table, crc64_clmul, crc64_public}, seconds, sink), clmul);
    }
    if (clmul) {
        host_pi_rows(buffer, seconds, sink);
    }
    // Printed so that no result goes unused (it depends on how many runs fit).
    std::printf("(sum of the results: %016llx)\n", static_cast<unsigned long long>(sink));
    return 0;
}
