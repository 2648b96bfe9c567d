// DH-HMAC-CHAP against nvmeof-target: every queue authenticates before any
// other command, uni- and bidirectionally, and each failure names its cause.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "auth/dhchap_crypto.hpp"
#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

namespace {

constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:5a1e0c2b-7d0e-4f57-9b0a-1d2c3e4f5a6b";

#define REQUIRE_CONFIGURABLE()           \
    if (!TargetProcess::can_configure()) \
    GTEST_SKIP() << "needs our nvmeof-target (keys)"

std::string key(std::uint8_t transform, std::uint8_t fill, std::size_t length = 32) {
    return auth::format_secret({transform, wire::Bytes(length, fill)});
}

Options host_options(const TargetProcess& target, std::string secret,
                     std::string ctrl_secret = {}) {
    Options o = target.options();
    o.host_nqn = kHostNqn;
    o.io_queues = 2;
    o.dhchap_secret = std::move(secret);
    o.dhchap_ctrl_secret = std::move(ctrl_secret);
    return o;
}

// Writes and reads back a block on every I/O queue's controller: commands run
// only on authenticated queues.
void check_io(Controller& ctrl) {
    auto ns = ctrl.namespace_at(1);
    auto out = ctrl.allocate(ns.lba_size());
    auto in = ctrl.allocate(ns.lba_size());
    std::memset(out.data(), 0x5C, out.size());
    ns.write(out, 3);
    ns.read(in, 3, 1);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

ConnectError connect_error(const Options& o) {
    try {
        Controller::connect(o);
    } catch (const ConnectError& e) {
        return e;
    }
    ADD_FAILURE() << "connect succeeded";
    return ConnectError(ConnectFailure::invalid_options, "", "");
}

}  // namespace

TEST(Auth, UnidirectionalSha256NullGroup) {
    REQUIRE_CONFIGURABLE();
    const std::string k = key(1, 0x11);
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + k, "--dhchap-hash",
                          "sha256", "--dhchap-dhgroup", "null"});
    auto ctrl = Controller::connect(host_options(target, k));
    EXPECT_EQ(ctrl.limits().io_queues, 2u);
    check_io(ctrl);
}

TEST(Auth, BidirectionalSha512Ffdhe3072) {
    REQUIRE_CONFIGURABLE();
    const std::string k = key(3, 0x22, 64);
    const std::string ck = key(0, 0x33, 48);
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + k, "--dhchap-ctrl-key",
                          std::string(kHostNqn) + "=" + ck, "--dhchap-hash", "sha512",
                          "--dhchap-dhgroup", "ffdhe3072"});
    auto ctrl = Controller::connect(host_options(target, k, ck));
    check_io(ctrl);
}

TEST(Auth, SecretFromFile) {
    REQUIRE_CONFIGURABLE();
    const std::string k = key(2, 0x44, 48);
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + k, "--dhchap-hash",
                          "sha384", "--dhchap-dhgroup", "ffdhe2048"});
    char path[] = "/tmp/nvmeof-auth-test-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string text = k + "\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    auto ctrl = Controller::connect(host_options(target, std::string("@") + path));
    unlink(path);
    check_io(ctrl);
}

TEST(Auth, WrongKeyNamesTheControllersReason) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + key(1, 0x11)});
    const ConnectError e = connect_error(host_options(target, key(1, 0x12)));
    EXPECT_EQ(e.cause(), ConnectFailure::authentication) << e.what();
    EXPECT_NE(std::string(e.what()).find("refused authentication: authentication failed"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("qid 0"), std::string::npos) << e.what();
}

TEST(Auth, WrongControllerKeyIsCaughtByTheHost) {
    REQUIRE_CONFIGURABLE();
    const std::string k = key(1, 0x11);
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + k, "--dhchap-ctrl-key",
                          std::string(kHostNqn) + "=" + key(1, 0x55)});
    const ConnectError e = connect_error(host_options(target, k, key(1, 0x56)));
    EXPECT_EQ(e.cause(), ConnectFailure::authentication) << e.what();
    EXPECT_NE(std::string(e.what()).find("wrong controller key"), std::string::npos) << e.what();
}

TEST(Auth, NoKeyForATargetThatRequiresOne) {
    REQUIRE_CONFIGURABLE();
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + key(1, 0x11)});
    const ConnectError e = connect_error(host_options(target, ""));
    EXPECT_EQ(e.cause(), ConnectFailure::authentication) << e.what();
    EXPECT_NE(std::string(e.what()).find("no dhchap_secret is set"), std::string::npos) << e.what();
}

TEST(Auth, UntransformedKeySha384Ffdhe8192) {
    REQUIRE_CONFIGURABLE();
    const std::string k = key(0, 0x11);
    TargetProcess target({"--dhchap-key", std::string(kHostNqn) + "=" + k, "--dhchap-hash",
                          "sha384", "--dhchap-dhgroup", "ffdhe8192"});
    auto ctrl = Controller::connect(host_options(target, k));
    check_io(ctrl);
}

TEST(Auth, MalformedSecretIsRefusedBeforeConnecting) {
    TargetProcess target;
    std::string bad = key(1, 0x11);
    bad[12] = bad[12] == 'A' ? 'B' : 'A';
    const ConnectError e = connect_error(host_options(target, bad));
    EXPECT_EQ(e.cause(), ConnectFailure::invalid_options) << e.what();
    EXPECT_NE(std::string(e.what()).find("dhchap_secret: secret CRC-32"), std::string::npos)
        << e.what();
    const ConnectError only_ctrl = connect_error(host_options(target, "", key(1, 0x11)));
    EXPECT_EQ(only_ctrl.cause(), ConnectFailure::invalid_options) << only_ctrl.what();
}
