// The discovery log read procedure against a fake log: chunking with offsets,
// the generation-counter re-read, and malformed logs.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "nvmeof/discovery.hpp"

using namespace nvmeof;
namespace w = nvmeof::wire;

namespace {

std::vector<w::DiscoveryRecord> some_records(std::size_t n, const std::string& tag = "") {
    std::vector<w::DiscoveryRecord> records(n);
    for (std::size_t i = 0; i < n; ++i) {
        records[i].port_id = static_cast<std::uint16_t>(i + 1);
        records[i].service_id = std::to_string(4420 + i);
        records[i].subsystem_nqn = "nqn.2026-12.io.nvmeof:s" + std::to_string(i) + tag;
        records[i].address = "10.0.0." + std::to_string(i + 1);
        records[i].rdma.pkey = static_cast<std::uint16_t>(0xFFFF - i);
    }
    return records;
}

// A log in memory; every read is recorded, and `on_read` may change the log.
struct FakeLog {
    std::vector<std::uint8_t> bytes;
    std::vector<std::pair<std::uint64_t, std::size_t>> reads;
    std::function<void(FakeLog&)> on_read;

    void set(std::uint64_t generation, const std::vector<w::DiscoveryRecord>& records) {
        bytes = w::discovery_log(generation, records);
    }
    LogPageReader reader() {
        return [this](std::uint64_t offset, std::span<std::byte> out) {
            reads.emplace_back(offset, out.size());
            if (on_read) {
                on_read(*this);
            }
            std::memset(out.data(), 0, out.size());  // past the end: zeroes, like the target
            if (offset < bytes.size()) {
                std::memcpy(out.data(), bytes.data() + offset,
                            std::min<std::size_t>(out.size(), bytes.size() - offset));
            }
        };
    }
};

}  // namespace

TEST(DiscoveryLogRead, HeaderRecordsThenHeaderAgain) {
    FakeLog fake;
    fake.set(7, some_records(3));
    const DiscoveryLog log = read_discovery_log(fake.reader(), {.chunk_bytes = 4096});
    EXPECT_EQ(log.generation, 7u);
    EXPECT_EQ(log.records, some_records(3));
    // Header, the three records in one chunk, the header again.
    const std::vector<std::pair<std::uint64_t, std::size_t>> expected = {
        {0, 1024}, {1024, 3072}, {0, 1024}};
    EXPECT_EQ(fake.reads, expected);
}

TEST(DiscoveryLogRead, SmallChunksCoverTheLogWithOffsets) {
    FakeLog fake;
    fake.set(1, some_records(2));
    const DiscoveryLog log = read_discovery_log(fake.reader(), {.chunk_bytes = 300});
    EXPECT_EQ(log.records, some_records(2));
    // 1024 = 300 + 300 + 300 + 124; records 2048 bytes from offset 1024.
    std::uint64_t expected_offset = 1024;
    std::size_t record_bytes = 0;
    std::size_t header_reads = 0;
    for (const auto& [offset, size] : fake.reads) {
        EXPECT_LE(size, 300u);
        EXPECT_EQ(size % 4, 0u);
        EXPECT_EQ(offset % 4, 0u);
        if (offset >= 1024) {
            EXPECT_EQ(offset, expected_offset);
            expected_offset += size;
            record_bytes += size;
        } else if (offset == 0) {
            ++header_reads;
        }
    }
    EXPECT_EQ(record_bytes, 2048u);
    EXPECT_EQ(header_reads, 2u);
}

TEST(DiscoveryLogRead, EmptyLogIsOneHeaderRead) {
    FakeLog fake;
    fake.set(4, {});
    const DiscoveryLog log = read_discovery_log(fake.reader());
    EXPECT_EQ(log.generation, 4u);
    EXPECT_TRUE(log.records.empty());
    EXPECT_EQ(fake.reads.size(), 1u);
}

TEST(DiscoveryLogRead, ChangedGenerationStartsOver) {
    FakeLog fake;
    fake.set(1, some_records(2));
    // The log changes while the records of the first pass are read.
    fake.on_read = [](FakeLog& f) {
        if (f.reads.size() == 2) {
            f.set(2, some_records(3, "-new"));
        }
    };
    const DiscoveryLog log = read_discovery_log(fake.reader());
    EXPECT_EQ(log.generation, 2u);
    EXPECT_EQ(log.records, some_records(3, "-new"));
    // First pass: header, records, header (GENCTR 2); second: header, records, header.
    EXPECT_EQ(fake.reads.size(), 6u);
}

TEST(DiscoveryLogRead, GenerationThatNeverSettlesIsAnError) {
    FakeLog fake;
    std::uint64_t generation = 1;
    fake.set(generation, some_records(1));
    fake.on_read = [&](FakeLog& f) { f.set(++generation, some_records(1)); };
    try {
        read_discovery_log(fake.reader(), {.max_attempts = 3});
        FAIL() << "expected ConnectError";
    } catch (const ConnectError& e) {
        EXPECT_EQ(e.cause(), ConnectFailure::discovery_log);
        EXPECT_NE(std::string(e.what()).find("changed during each of 3 reads"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(fake.reads.size(), 9u);
}

TEST(DiscoveryLogRead, MalformedHeadersAreRefused) {
    FakeLog fake;
    fake.set(1, {});
    w::DiscoveryLogHeader header{};
    header.recfmt = 1;
    std::memcpy(fake.bytes.data(), &header, sizeof header);
    try {
        read_discovery_log(fake.reader());
        FAIL() << "expected ConnectError";
    } catch (const ConnectError& e) {
        EXPECT_EQ(e.cause(), ConnectFailure::discovery_log);
        EXPECT_NE(std::string(e.what()).find("RECFMT 1"), std::string::npos) << e.what();
    }
    header = {};
    header.numrec = kMaxDiscoveryRecords + 1;
    std::memcpy(fake.bytes.data(), &header, sizeof header);
    try {
        read_discovery_log(fake.reader());
        FAIL() << "expected ConnectError";
    } catch (const ConnectError& e) {
        EXPECT_NE(std::string(e.what()).find("NUMREC 65537"), std::string::npos) << e.what();
    }
}

TEST(DiscoveryLogRead, BadOptionsAreRefusedBeforeAnyRead) {
    FakeLog fake;
    fake.set(1, {});
    for (const DiscoveryOptions& bad :
         {DiscoveryOptions{.chunk_bytes = 0}, DiscoveryOptions{.chunk_bytes = 1022},
          DiscoveryOptions{.max_attempts = 0}}) {
        try {
            read_discovery_log(fake.reader(), bad);
            ADD_FAILURE() << "expected ConnectError";
        } catch (const ConnectError& e) {
            EXPECT_EQ(e.cause(), ConnectFailure::invalid_options);
        }
    }
    EXPECT_TRUE(fake.reads.empty());
}
