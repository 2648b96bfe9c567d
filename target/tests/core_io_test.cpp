// CommandCore: I/O commands, their status paths, faults, and file-backed restart.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "core_harness.hpp"

namespace nvmeof::target::testing {
namespace {

using wire::GenericStatus;
using wire::IoOpcode;
using wire::Status;

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
    }
    return bytes;
}

wire::RemoteBuffer host_buffer(std::size_t size) {
    return wire::RemoteBuffer{kHostAddress, size, kRkey};
}

wire::Sqe rw(IoOpcode op, std::uint64_t slba, std::uint32_t blocks, std::uint32_t lba = 512,
             std::uint32_t nsid = 1) {
    return wire::rw_command(op, nsid, slba, blocks, host_buffer(std::size_t{blocks} * lba), lba);
}

class Io : public ::testing::Test {
  protected:
    void SetUp() override { io_ = h_.bring_up_io(admin_); }
    CoreHarness h_;
    QueueState admin_ = CoreHarness::new_queue(0);
    QueueState io_;
};

TEST_F(Io, WriteThenReadKeyed) {
    const auto data = pattern(4096, 3);
    Result w = h_.run(io_, rw(IoOpcode::write, 8, 8), data);
    ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
    EXPECT_EQ(w.plan.source, DataSource::keyed);
    Result r = h_.run(io_, rw(IoOpcode::read, 8, 8), std::vector<std::uint8_t>(4096));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data, data);
    EXPECT_EQ(h_.stats().bytes_written, 4096u);
    EXPECT_EQ(h_.stats().bytes_read, 4096u);
    EXPECT_EQ(h_.stats().count_of(CommandKind::read), 1u);
    EXPECT_EQ(h_.stats().count_of(CommandKind::write), 1u);
    EXPECT_EQ(r.cqe.sq_id, 1);
}

TEST_F(Io, CompareMatchesAndMiscompares) {
    const auto data = pattern(4096, 4);
    ASSERT_TRUE(h_.run(io_, rw(IoOpcode::write, 16, 8), data).status().ok());
    auto compare = rw(IoOpcode::write, 16, 8);  // laid out as a Write
    compare.opcode = static_cast<std::uint8_t>(IoOpcode::compare);
    Result same = h_.run(io_, compare, data);
    ASSERT_TRUE(same.status().ok()) << wire::describe(same.status());
    EXPECT_EQ(same.plan.direction, wire::DataDirection::host_to_controller);
    auto other = data;
    other[4095] ^= 1;
    EXPECT_EQ(h_.run(io_, compare, other).status(),
              Status::make(wire::StatusCodeType::media,
                           static_cast<std::uint8_t>(wire::MediaStatus::compare_failure), true));
    // In the capsule, as a write's data may be.
    compare.dptr = wire::in_capsule_data(0, 4096);
    EXPECT_TRUE(h_.run(io_, compare, {}, data).status().ok());
    EXPECT_EQ(h_.stats().count_of(CommandKind::compare), 3u);
    EXPECT_EQ(h_.stats().bytes_written, 4096u);  // Compare writes nothing
}

TEST_F(Io, InCapsuleWrite) {
    const auto data = pattern(4096, 9);
    auto sqe = rw(IoOpcode::write, 0, 8);
    sqe.dptr = wire::in_capsule_data(0, 4096);
    Result w = h_.run(io_, sqe, {}, data);
    ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
    EXPECT_EQ(h_.stats().in_capsule_writes, 1u);
    Result r = h_.run(io_, rw(IoOpcode::read, 0, 8), std::vector<std::uint8_t>(4096));
    EXPECT_EQ(r.data, data);
}

TEST_F(Io, InCapsuleErrors) {
    auto sqe = rw(IoOpcode::write, 0, 9);  // 4608 bytes: above IOCCSZ×16 − 64
    sqe.dptr = wire::in_capsule_data(0, 4608);
    EXPECT_EQ(h_.run(io_, sqe, {}, pattern(4608, 1)).status(),
              generic(GenericStatus::sgl_offset_invalid));
    auto read = rw(IoOpcode::read, 0, 1);
    read.dptr = wire::in_capsule_data(0, 512);
    EXPECT_EQ(h_.run(io_, read).status(), generic(GenericStatus::invalid_field));
    auto short_capsule = rw(IoOpcode::write, 0, 8);
    short_capsule.dptr = wire::in_capsule_data(0, 4096);
    EXPECT_EQ(h_.run(io_, short_capsule, {}, pattern(100, 1)).status(),
              generic(GenericStatus::data_sgl_length_invalid));
}

TEST_F(Io, StatusPaths) {
    // LBA out of range: past the end, and a range crossing it (2048 blocks).
    EXPECT_EQ(h_.run(io_, rw(IoOpcode::read, 2048, 1), std::vector<std::uint8_t>(512)).status(),
              generic(GenericStatus::lba_out_of_range));
    EXPECT_EQ(h_.run(io_, rw(IoOpcode::write, 2040, 16), pattern(8192, 0)).status(),
              generic(GenericStatus::lba_out_of_range));
    // Invalid namespace.
    EXPECT_EQ(
        h_.run(io_, rw(IoOpcode::read, 0, 1, 512, 2), std::vector<std::uint8_t>(512)).status(),
        generic(GenericStatus::invalid_namespace_or_format));
    // SGL length differs from NLB × LBA size.
    auto sqe = rw(IoOpcode::read, 0, 8);
    sqe.dptr = CoreHarness::keyed(4095);
    EXPECT_EQ(h_.run(io_, sqe).status(), generic(GenericStatus::data_sgl_length_invalid));
    // MDTS (128 KiB) exceeded.
    EXPECT_EQ(
        h_.run(io_, rw(IoOpcode::read, 0, 512), std::vector<std::uint8_t>(256 * 1024)).status(),
        generic(GenericStatus::invalid_field));
    // Opcodes this target does not implement (Write Uncorrectable, Verify).
    EXPECT_EQ(h_.run(io_, wire::make_sqe(0x04, 1)).status(),
              generic(GenericStatus::invalid_opcode));
    EXPECT_EQ(h_.run(io_, wire::make_sqe(0x0C, 1)).status(),
              generic(GenericStatus::invalid_opcode));
    // Admin commands are not I/O commands.
    EXPECT_EQ(h_.run(io_, wire::keep_alive_command()).status(),
              generic(GenericStatus::invalid_opcode));
    EXPECT_EQ(h_.stats().errors, 8u);
}

TEST_F(Io, FlushWriteZeroesAndDeallocate) {
    ASSERT_TRUE(h_.run(io_, rw(IoOpcode::write, 0, 16), pattern(8192, 5)).status().ok());
    EXPECT_TRUE(h_.run(io_, wire::flush_command(1)).status().ok());
    EXPECT_TRUE(h_.run(io_, wire::flush_command(wire::kBroadcastNsid)).status().ok());
    EXPECT_EQ(h_.run(io_, wire::flush_command(7)).status(),
              generic(GenericStatus::invalid_namespace_or_format));

    ASSERT_TRUE(h_.run(io_, wire::write_zeroes_command(1, 0, 2)).status().ok());
    Result r = h_.run(io_, rw(IoOpcode::read, 0, 4), std::vector<std::uint8_t>(2048));
    EXPECT_EQ(std::count(r.data.begin(), r.data.begin() + 1024, 0), 1024);
    EXPECT_NE(std::count(r.data.begin() + 1024, r.data.end(), 0), 1024);
    EXPECT_EQ(h_.run(io_, wire::write_zeroes_command(1, 2047, 2)).status(),
              generic(GenericStatus::lba_out_of_range));

    wire::DsmRange ranges[2] = {{0, 2, 2}, {0, 4, 10}};
    std::vector<std::uint8_t> bytes(sizeof ranges);
    std::memcpy(bytes.data(), ranges, sizeof ranges);
    const auto dsm = wire::dataset_management_command(1, 2, wire::kDsmAttributeDeallocate,
                                                      host_buffer(bytes.size()));
    ASSERT_TRUE(h_.run(io_, dsm, bytes).status().ok());
    r = h_.run(io_, rw(IoOpcode::read, 0, 16), std::vector<std::uint8_t>(8192));
    EXPECT_EQ(std::count(r.data.begin(), r.data.begin() + 4 * 512, 0), 4 * 512);
    EXPECT_EQ(std::count(r.data.begin() + 10 * 512, r.data.begin() + 14 * 512, 0), 4 * 512);
    EXPECT_NE(std::count(r.data.begin() + 14 * 512, r.data.end(), 0), 2 * 512);

    wire::DsmRange outside{0, 8, 2044};
    std::memcpy(bytes.data(), &outside, sizeof outside);
    const auto bad =
        wire::dataset_management_command(1, 1, wire::kDsmAttributeDeallocate, host_buffer(16));
    EXPECT_EQ(h_.run(io_, bad, bytes).status(), generic(GenericStatus::lba_out_of_range));
    auto short_sgl = dsm;
    short_sgl.dptr = CoreHarness::keyed(16);  // two ranges need 32 bytes
    EXPECT_EQ(h_.run(io_, short_sgl, bytes).status(),
              generic(GenericStatus::data_sgl_length_invalid));
    EXPECT_EQ(h_.stats().count_of(CommandKind::dataset_management), 3u);
    EXPECT_EQ(h_.stats().count_of(CommandKind::write_zeroes), 2u);
    EXPECT_EQ(h_.stats().count_of(CommandKind::flush), 3u);
}

TEST(IoFaults, FailNthIoAndLbaRange) {
    TargetConfig config = default_config();
    const Status media = Status::make(wire::StatusCodeType::media, 0x81, true);
    config.faults.fail_io.push_back({2, media});
    config.faults.fail_lba.push_back(
        {100, 199, Status::make(wire::StatusCodeType::media, 0x80, true)});
    CoreHarness h(config);
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    EXPECT_TRUE(h.run(io, rw(IoOpcode::write, 0, 1), pattern(512, 0)).status().ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::write, 0, 1), pattern(512, 0)).status(), media);
    EXPECT_TRUE(h.run(io, rw(IoOpcode::write, 0, 1), pattern(512, 0)).status().ok());
    EXPECT_TRUE(
        h.run(io, rw(IoOpcode::read, 90, 10), std::vector<std::uint8_t>(5120)).status().ok());
    EXPECT_EQ(
        h.run(io, rw(IoOpcode::read, 95, 10), std::vector<std::uint8_t>(5120)).status().code(),
        0x80);
    EXPECT_EQ(h.run(io, rw(IoOpcode::write, 199, 1), pattern(512, 0)).status().code(), 0x80);
    EXPECT_EQ(h.stats().faults_injected, 3u);
    EXPECT_EQ(h.stats().errors, 3u);
}

// SCT 1 means different things for Fabrics, admin and I/O commands: the fault
// lines must name a status in the failed command's context, as the host's
// error does, or the two logs of one failure disagree.
TEST(IoFaults, FaultLinesNameTheStatusAsTheHostDoes) {
    const Status read_only = Status::make(wire::StatusCodeType::command_specific, 0x82, true);
    const Status conflicting = Status::make(wire::StatusCodeType::command_specific, 0x80, true);
    const Status invalid_parameters =
        Status::make(wire::StatusCodeType::command_specific, 0x82, true);
    TargetConfig config = default_config();
    config.faults.fail_io.push_back({1, read_only});
    config.faults.fail_lba.push_back({100, 199, conflicting});
    CoreHarness h(config);
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);

    const auto write = rw(IoOpcode::write, 0, 1);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(h.run(io, write, pattern(512, 0)).status(), read_only);
    const std::string fail_io = ::testing::internal::GetCapturedStderr();
    const std::string io_name =
        wire::describe(read_only, wire::context_of(write, wire::QueueKind::io));
    EXPECT_EQ(io_name, "Attempted Write to Read Only Range (SCT 0x1 SC 0x82, DNR)");
    EXPECT_NE(fail_io.find("fails with " + io_name), std::string::npos) << fail_io;

    const auto read = rw(IoOpcode::read, 150, 1);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(h.run(io, read, std::vector<std::uint8_t>(512)).status(), conflicting);
    const std::string fail_lba = ::testing::internal::GetCapturedStderr();
    const std::string lba_name =
        wire::describe(conflicting, wire::context_of(read, wire::QueueKind::io));
    EXPECT_EQ(lba_name, "Conflicting Attributes (SCT 0x1 SC 0x80, DNR)");
    EXPECT_NE(fail_lba.find("fails with " + lba_name), std::string::npos) << fail_lba;

    TargetConfig connect_config = default_config();
    connect_config.faults.connect_status = invalid_parameters;
    CoreHarness refusing(connect_config);
    QueueState q = CoreHarness::new_queue(0);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(refusing.connect(q).status(), invalid_parameters);
    const std::string connect_line = ::testing::internal::GetCapturedStderr();
    const std::string connect_name =
        wire::describe(invalid_parameters, {wire::kFabricsOpcode, wire::QueueKind::admin});
    EXPECT_EQ(connect_name, "Connect Invalid Parameters (SCT 0x1 SC 0x82, DNR)");
    EXPECT_NE(connect_line.find("with " + connect_name), std::string::npos) << connect_line;
}

TEST(IoLba4096, GeometryAndTransfer) {
    TargetConfig config = default_config();
    config.subsystems[0].namespaces[0].lba_size = 4096;
    CoreHarness h(config);
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const auto data = pattern(8192, 11);
    ASSERT_TRUE(h.run(io, rw(IoOpcode::write, 255, 2, 4096), data).status().ok() == false);
    ASSERT_TRUE(h.run(io, rw(IoOpcode::write, 254, 2, 4096), data).status().ok());
    EXPECT_EQ(h.run(io, rw(IoOpcode::read, 254, 2, 4096), std::vector<std::uint8_t>(8192)).data,
              data);
}

class FileNamespace : public ::testing::Test {
  protected:
    void SetUp() override {
        path_ = std::filesystem::temp_directory_path() /
                ("nvmeof-target-core-test-" + std::to_string(getpid()) + ".img");
        std::filesystem::remove(path_);
    }
    void TearDown() override { std::filesystem::remove(path_); }

    TargetConfig file_config(std::uint64_t size) const {
        TargetConfig config = default_config();
        NamespaceConfig& ns = config.subsystems[0].namespaces[0];
        ns.backing = NamespaceConfig::Backing::file;
        ns.path = path_.string();
        ns.size_bytes = size;
        return config;
    }

    std::filesystem::path path_;
};

TEST_F(FileNamespace, DataSurvivesRestart) {
    const auto data = pattern(64 * 1024, 42);
    {
        CoreHarness h(file_config(4 << 20));
        QueueState admin = CoreHarness::new_queue(0);
        QueueState io = h.bring_up_io(admin);
        ASSERT_TRUE(h.run(io, rw(IoOpcode::write, 1000, 128), data).status().ok());
    }
    EXPECT_EQ(std::filesystem::file_size(path_), 4u << 20);
    // Restart with no size: the file's own size is used.
    CoreHarness h(file_config(0));
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const Result r =
        h.run(io, rw(IoOpcode::read, 1000, 128), std::vector<std::uint8_t>(data.size()));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data, data);
    const Result past = h.run(io, rw(IoOpcode::read, 8192, 1), std::vector<std::uint8_t>(512));
    EXPECT_EQ(past.status(), generic(GenericStatus::lba_out_of_range));
}

TEST_F(FileNamespace, MissingFileWithoutSizeIsUsageError) {
    Stats stats;
    EXPECT_THROW(CommandCore(file_config(0), stats), UsageError);
}

}  // namespace
}  // namespace nvmeof::target::testing
