// The option rules (nvmeof/option_rules.hpp) that connect(), the fio engine and
// the Python package all apply: each rule at its edges, so a rule dropped or
// loosened fails here, and the one line each refusal is.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "auth/dhchap_crypto.hpp"
#include "nvmeof/option_rules.hpp"

using namespace std::chrono_literals;
using nvmeof::InvalidOption;
using nvmeof::Options;

namespace {

// The line a check throws, or "" when it accepts.
std::string refusal(const std::function<void()>& check) {
    try {
        check();
    } catch (const InvalidOption& e) {
        return e.what();
    }
    return "";
}

bool starts_with(const std::string& line, const std::string& prefix) {
    return line.rfind(prefix, 0) == 0;
}

// Options that pass every rule: a target and a subsystem NQN, the rest defaults.
Options good() {
    return {.target = "10.0.0.2", .subsystem_nqn = "nqn.2026-12.io.nvmeof:t"};
}

Options with(const std::function<void(Options&)>& change) {
    Options o = good();
    change(o);
    return o;
}

// A well-formed DH-HMAC-CHAP secret (no transform, a 32-byte key).
std::string good_secret(std::uint8_t fill) {
    return nvmeof::auth::format_secret({.transform = 0, .key = nvmeof::auth::Bytes(32, fill)});
}

}  // namespace

TEST(OptionRules, DefaultsPass) {
    EXPECT_EQ(refusal([] { nvmeof::validate(good()); }), "");
}

TEST(OptionRules, InvalidOptionIsOneLineNamingTheOption) {
    const InvalidOption e("io_queues", "0", "I/O queues must be from 1 to 65534");
    EXPECT_STREQ(e.what(), "io_queues=0: I/O queues must be from 1 to 65534");
    EXPECT_EQ(e.option(), "io_queues");
    EXPECT_EQ(e.reason(), "I/O queues must be from 1 to 65534");
    // No value shown (a secret): "<option>: <reason>".
    EXPECT_STREQ(InvalidOption("dhchap_secret", "", "bad key").what(), "dhchap_secret: bad key");
    // The API's InvalidArgument, so callers that catch that see these too.
    EXPECT_THROW(throw InvalidOption("x", "1", "y"), nvmeof::InvalidArgument);
}

TEST(OptionRules, LongTextValuesAreCutShort) {
    const std::string line = refusal([] { nvmeof::check_subsystem_nqn(std::string(300, 'q')); });
    EXPECT_TRUE(starts_with(line, "subsystem_nqn=\"" + std::string(64, 'q') + "...\": ")) << line;
}

// Every field validate() checks: one bad value each, refused naming that field.
TEST(OptionRules, ValidateRefusesEachFieldByItsName) {
    const std::vector<std::pair<std::function<void(Options&)>, std::string>> cases = {
        {[](Options& o) { o.target = ""; }, "target=\"\": no target address"},
        {[](Options& o) { o.target = "10.0.0.2,,10.0.0.3"; }, "target=\""},
        {[](Options& o) { o.subsystem_nqn = ""; }, "subsystem_nqn=\"\": "},
        {[](Options& o) { o.port = 0; }, "port=0: "},
        {[](Options& o) { o.host_nqn = "myhost"; }, "host_nqn=\"myhost\": not an NVMe Qualified"},
        {[](Options& o) { o.host_id = "not-a-uuid"; }, "host_id=\"not-a-uuid\": not a UUID"},
        {[](Options& o) { o.queue_depth = 1; }, "queue_depth=1: "},
        {[](Options& o) { o.io_queues = 0; }, "io_queues=0: "},
        {[](Options& o) { o.timeout = 0ms; }, "timeout=0: "},
        {[](Options& o) { o.io_timeout = -1ms; }, "io_timeout=-1: "},
        {[](Options& o) { o.ctrl_loss_tmo = -1ms; }, "ctrl_loss_tmo=-1: "},
        {[](Options& o) { o.reconnect_delay = 0ms; }, "reconnect_delay=0: "},
        {[](Options& o) { o.fast_io_fail_tmo = 5ms; }, "fast_io_fail_tmo=5: "},
        {[](Options& o) { o.dhchap_secret = "DHHC-1:00:x:"; }, "dhchap_secret: "},
        {[](Options& o) { o.dhchap_ctrl_secret = good_secret(1); }, "dhchap_ctrl_secret: needs"},
    };
    for (const auto& [change, prefix] : cases) {
        const std::string line = refusal([&] { nvmeof::validate(with(change)); });
        EXPECT_TRUE(starts_with(line, prefix))
            << "expected \"" << prefix << "...\", got \"" << line << "\"";
        EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    }
}

// A front end's names, in the option's place and in a rule's mention of another.
TEST(OptionRules, FrontEndNamesReplaceTheFieldNames) {
    const nvmeof::OptionNames fio{.target = "traddr",
                                  .io_queues = "nr_io_queues",
                                  .ctrl_loss_tmo = "ctrl_loss_tmo_ms",
                                  .fast_io_fail_tmo = "fast_io_fail_tmo_ms"};
    EXPECT_TRUE(starts_with(
        refusal([&] { nvmeof::validate(with([](Options& o) { o.io_queues = 0; }), fio); }),
        "nr_io_queues=0: "));
    EXPECT_TRUE(starts_with(
        refusal([&] { nvmeof::validate(with([](Options& o) { o.target = "a,"; }), fio); }),
        "traddr=\"a,\": an empty address"));
    const std::string late = refusal([&] {
        nvmeof::validate(with([](Options& o) {
                             o.ctrl_loss_tmo = 1000ms;
                             o.fast_io_fail_tmo = 1000ms;
                         }),
                         fio);
    });
    EXPECT_TRUE(starts_with(late, "fast_io_fail_tmo_ms=1000: must be below ctrl_loss_tmo_ms=1000"))
        << late;
    const std::string alone = refusal(
        [&] { nvmeof::validate(with([](Options& o) { o.fast_io_fail_tmo = 500ms; }), fio); });
    EXPECT_NE(alone.find("set ctrl_loss_tmo_ms too"), std::string::npos) << alone;
}

TEST(OptionRules, QueueDepthFrom2To65535) {
    EXPECT_EQ(refusal([] { nvmeof::check_queue_depth(2); }), "");
    EXPECT_EQ(refusal([] { nvmeof::check_queue_depth(65535); }), "");
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_queue_depth(1); }), "queue_depth=1: "));
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_queue_depth(0); }), "queue_depth=0: "));
    // Wider than the field: refused, not truncated into 16 bits.
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_queue_depth(65536, "queue_size"); }),
                            "queue_size=65536: "));
}

TEST(OptionRules, IoQueuesFrom1To65534) {
    EXPECT_EQ(refusal([] { nvmeof::check_io_queues(1); }), "");
    EXPECT_EQ(refusal([] { nvmeof::check_io_queues(65534); }), "");
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_io_queues(0); }), "io_queues=0: "));
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_io_queues(65535); }), "io_queues=65535: "));
}

TEST(OptionRules, PortFrom1To65535) {
    EXPECT_EQ(refusal([] { nvmeof::check_port(1); }), "");
    EXPECT_EQ(refusal([] { nvmeof::check_port(65535); }), "");
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_port(0); }), "port=0: "));
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_port(65536); }), "port=65536: "));
}

TEST(OptionRules, NsidNamesOneNamespace) {
    EXPECT_EQ(refusal([] { nvmeof::check_nsid(1); }), "");
    EXPECT_EQ(refusal([] { nvmeof::check_nsid(0xFFFFFFFE); }), "");
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_nsid(0); }), "nsid=0: "));
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_nsid(0xFFFFFFFF); }), "nsid=4294967295: "));
}

TEST(OptionRules, Timeouts) {
    EXPECT_EQ(refusal([] { nvmeof::check_timeout(1ms); }), "");
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_timeout(0ms); }), "timeout=0: "));
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_timeout(-5ms); }), "timeout=-5: "));
    EXPECT_EQ(refusal([] { nvmeof::check_io_timeout(0ms); }), "");  // the connect timeout's
    EXPECT_TRUE(starts_with(refusal([] { nvmeof::check_io_timeout(-1ms); }), "io_timeout=-1: "));
}

TEST(OptionRules, ReconnectTimers) {
    auto timers = [](std::chrono::milliseconds loss, std::chrono::milliseconds delay,
                     std::chrono::milliseconds fast) {
        return refusal([&] { nvmeof::check_reconnect_timers(loss, delay, fast); });
    };
    EXPECT_EQ(timers(0ms, 10000ms, 0ms), "");  // the defaults: no reconnecting
    EXPECT_EQ(timers(2ms, 1ms, 1ms), "");
    EXPECT_TRUE(starts_with(timers(-1ms, 1ms, 0ms), "ctrl_loss_tmo=-1: "));
    // A delay of 0 is refused with or without reconnecting, as the kernel refuses it.
    EXPECT_TRUE(starts_with(timers(0ms, 0ms, 0ms), "reconnect_delay=0: "));
    EXPECT_TRUE(starts_with(timers(1000ms, 0ms, 0ms), "reconnect_delay=0: "));
    EXPECT_TRUE(starts_with(timers(1000ms, 1ms, -1ms), "fast_io_fail_tmo=-1: "));
    // fast_io_fail_tmo means nothing without reconnecting, and nothing past ctrl_loss_tmo.
    EXPECT_TRUE(starts_with(timers(0ms, 1ms, 500ms), "fast_io_fail_tmo=500: has no effect"));
    EXPECT_TRUE(starts_with(timers(1000ms, 1ms, 1000ms), "fast_io_fail_tmo=1000: must be below"));
    EXPECT_EQ(timers(1000ms, 1ms, 999ms), "");
}

TEST(OptionRules, SubsystemNqnFitsTheConnectData) {
    EXPECT_EQ(refusal([] { nvmeof::check_subsystem_nqn("nqn.x"); }), "");  // the target's name
    EXPECT_EQ(refusal([] { nvmeof::check_subsystem_nqn(std::string(223, 'n')); }), "");
    EXPECT_NE(refusal([] { nvmeof::check_subsystem_nqn(""); }), "");
    EXPECT_NE(refusal([] { nvmeof::check_subsystem_nqn(std::string(224, 'n')); }), "");
    EXPECT_NE(refusal([] { nvmeof::check_subsystem_nqn(std::string("nqn.a\0b", 7)); }), "");
}

TEST(OptionRules, HostNqnIsAnNvmeQualifiedName) {
    for (const std::string& ok :
         {std::string("nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"),
          std::string("nqn.2016-06.io.spdk:host1"),
          "nqn.2026-12.io.nvmeof:" + std::string(200, 'a')}) {  // 222 bytes
        EXPECT_EQ(refusal([&] { nvmeof::check_host_nqn(ok); }), "") << ok;
    }
    for (const std::string& bad :
         {std::string("host1"), std::string("iqn.2016-06.io.spdk:host1"), std::string("nqn.host"),
          std::string("nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"),
          "nqn.2026-12.io.nvmeof:" + std::string(202, 'a')}) {  // 224 bytes
        const std::string line = refusal([&] { nvmeof::check_host_nqn(bad, "hostnqn"); });
        EXPECT_TRUE(starts_with(line, "hostnqn=\"")) << bad << ": " << line;
    }
}

TEST(OptionRules, HostIdIsAUuid) {
    EXPECT_EQ(refusal([] { nvmeof::check_host_id("F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"); }), "");
    for (const char* bad : {"", "not-a-uuid", "f81d4fae7dec11d0a76500a0c91e6bf6",
                            "f81d4fae-7dec-11d0-a765-00a0c91e6bf"}) {
        EXPECT_TRUE(starts_with(refusal([&] { nvmeof::check_host_id(bad); }), "host_id=\"")) << bad;
    }
}

TEST(OptionRules, TargetPathsAndTheirPorts) {
    const std::vector<nvmeof::TargetPath> paths =
        nvmeof::split_target("10.0.0.2,10.0.0.3:4421,[fd00::2]:4422,::1,[::1],host.example");
    ASSERT_EQ(paths.size(), 6u);
    EXPECT_EQ(paths[0].host, "10.0.0.2");
    EXPECT_FALSE(paths[0].port);
    EXPECT_EQ(paths[1].host, "10.0.0.3");
    EXPECT_EQ(paths[1].port, 4421);
    EXPECT_EQ(paths[2].host, "fd00::2");
    EXPECT_EQ(paths[2].port, 4422);
    EXPECT_EQ(paths[3].host, "::1");
    EXPECT_FALSE(paths[3].port);
    EXPECT_EQ(paths[4].host, "::1");
    EXPECT_FALSE(paths[4].port);
    EXPECT_EQ(paths[5].host, "host.example");
    for (const char* bad : {"", ",10.0.0.2", "10.0.0.2,", "10.0.0.2,,10.0.0.3", "10.0.0.2:0",
                            "10.0.0.2:65536", "10.0.0.2:port", ":4420", "[::1", "[]", "[::1]4420",
                            "[::1]:", "[::1]:70000", "::1]", "10.0.0.2,[::1"}) {
        const std::string line = refusal([&] { nvmeof::check_target(bad, "traddr"); });
        EXPECT_TRUE(starts_with(line, "traddr=\"")) << bad << ": " << line;
    }
    // In a list, the line names the path at fault.
    const std::string line = refusal([] { nvmeof::check_target("10.0.0.2,10.0.0.3:0"); });
    EXPECT_NE(line.find("path \"10.0.0.3:0\""), std::string::npos) << line;
}

TEST(OptionRules, DhchapSecretsAsTheConnectReadsThem) {
    const std::string secret = good_secret(0x11);
    EXPECT_EQ(refusal([&] { nvmeof::check_dhchap_secrets(secret, ""); }), "");
    EXPECT_EQ(refusal([&] { nvmeof::check_dhchap_secrets(secret, good_secret(0x22)); }), "");
    EXPECT_EQ(refusal([] { nvmeof::check_dhchap_secrets("", ""); }), "");
    EXPECT_TRUE(starts_with(refusal([&] { nvmeof::check_dhchap_secrets("", secret); }),
                            "dhchap_ctrl_secret: needs dhchap_secret"));
    std::string corrupt = secret;
    corrupt[12] = corrupt[12] == 'A' ? 'B' : 'A';  // the key's CRC no longer matches
    const std::string line = refusal([&] { nvmeof::check_dhchap_secrets(corrupt, ""); });
    EXPECT_TRUE(starts_with(line, "dhchap_secret: ")) << line;
    EXPECT_EQ(line.find(corrupt.substr(10, 20)), std::string::npos) << "shows the key: " << line;
    EXPECT_TRUE(starts_with(
        refusal([&] { nvmeof::check_dhchap_secrets(secret, "@/nonexistent/nvmeof-key"); }),
        "dhchap_ctrl_secret: cannot read /nonexistent/nvmeof-key"));
}

TEST(OptionRules, DhchapSecretFromAFile) {
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() /
        ("nvmeof-option-rules-key-" +
         std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    std::ofstream(file) << good_secret(0x33) << "\n";
    EXPECT_EQ(refusal([&] { nvmeof::validate_dhchap_secret("@" + file.string(), "key"); }), "");
    std::filesystem::remove(file);
}
