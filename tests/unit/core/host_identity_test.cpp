#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nvmeof/errors.hpp"
#include "nvmeof/options.hpp"

namespace fs = std::filesystem;
using nvmeof::HostIdentityPaths;
using nvmeof::Options;
using nvmeof::resolve_host_identity;

namespace {

class HostIdentityTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ =
            fs::temp_directory_path() /
            ("nvmeof-hostid-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
        paths_.hostnqn_file = (dir_ / "hostnqn").string();
        paths_.hostid_file = (dir_ / "hostid").string();
        paths_.machine_id_file = (dir_ / "machine-id").string();
    }
    void TearDown() override { fs::remove_all(dir_); }
    void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

    fs::path dir_;
    HostIdentityPaths paths_;
};

constexpr char kId[] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

}  // namespace

TEST_F(HostIdentityTest, EtcNvmeFilesWin) {
    write(paths_.hostid_file, std::string(kId) + "\n");
    write(paths_.hostnqn_file, "nqn.2014-08.org.example:host1\n");
    write(paths_.machine_id_file, "0123456789abcdef0123456789abcdef\n");
    const auto id = resolve_host_identity(Options{}, paths_);
    EXPECT_EQ(id.id_text, kId);
    EXPECT_EQ(id.nqn, "nqn.2014-08.org.example:host1");
    EXPECT_EQ(id.origin, paths_.hostid_file);
}

TEST_F(HostIdentityTest, HostIdComesFromAUuidHostNqn) {
    write(paths_.hostnqn_file, std::string("nqn.2014-08.org.nvmexpress:uuid:") + kId);
    const auto id = resolve_host_identity(Options{}, paths_);
    EXPECT_EQ(id.id_text, kId);
    EXPECT_EQ(id.origin, "host NQN");
}

TEST_F(HostIdentityTest, DerivedFromMachineIdIsStableAndNotTheMachineId) {
    write(paths_.machine_id_file, "0123456789abcdef0123456789abcdef\n");
    const auto a = resolve_host_identity(Options{}, paths_);
    const auto b = resolve_host_identity(Options{}, paths_);
    EXPECT_EQ(a.id_text, b.id_text);
    EXPECT_EQ(a.nqn, "nqn.2014-08.org.nvmexpress:uuid:" + a.id_text);
    EXPECT_EQ(a.id_text.find("01234567"), std::string::npos);
    EXPECT_EQ(a.id_text[14], '8');  // UUID version 8 (name-based, custom)
    write(paths_.machine_id_file, "fedcba9876543210fedcba9876543210\n");
    EXPECT_NE(resolve_host_identity(Options{}, paths_).id_text, a.id_text);
}

TEST_F(HostIdentityTest, RandomOnlyWhenAsked) {
    write(paths_.machine_id_file, "0123456789abcdef0123456789abcdef\n");
    Options o;
    o.random_host_id = true;
    const auto a = resolve_host_identity(o, paths_);
    const auto b = resolve_host_identity(o, paths_);
    EXPECT_NE(a.id_text, b.id_text);
    EXPECT_EQ(a.origin, "random");
    EXPECT_EQ(a.id_text[14], '4');
}

TEST_F(HostIdentityTest, ExplicitOptionsWin) {
    write(paths_.hostid_file, "11111111-1111-1111-1111-111111111111");
    Options o;
    o.host_id = "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE";
    o.host_nqn = "nqn.2024-01.io.example:me";
    const auto id = resolve_host_identity(o, paths_);
    EXPECT_EQ(id.id_text, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
    EXPECT_EQ(id.nqn, "nqn.2024-01.io.example:me");
}

TEST_F(HostIdentityTest, MalformedValuesAreRefused) {
    Options o;
    o.host_id = "not-a-uuid";
    EXPECT_THROW(resolve_host_identity(o, paths_), nvmeof::InvalidArgument);
    Options n;
    n.host_nqn = std::string(300, 'x');
    EXPECT_THROW(resolve_host_identity(n, paths_), nvmeof::InvalidArgument);
}

TEST_F(HostIdentityTest, MalformedHostIdFileFallsBackToMachineId) {
    write(paths_.hostid_file, "garbage");
    write(paths_.machine_id_file, "0123456789abcdef0123456789abcdef");
    EXPECT_NE(resolve_host_identity(Options{}, paths_).origin.find("machine-id"),
              std::string::npos);
}

TEST(Uuid, RoundTrips) {
    nvmeof::wire::HostId id{};
    ASSERT_TRUE(nvmeof::parse_uuid(kId, id));
    EXPECT_EQ(nvmeof::format_uuid(id), kId);
    EXPECT_FALSE(nvmeof::parse_uuid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", id));
    EXPECT_FALSE(nvmeof::parse_uuid("0f1e2d3c+4b5a-6978-8796-a5b4c3d2e1f0", id));
}
