#include <gtest/gtest.h>

#include <string>

#include "option_rules.hpp"
#include "target_spec.hpp"

namespace e = nvmeof::engine;

namespace {

// The one-line message check_numeric_options throws, or "" when it accepts.
std::string refusal(const e::NumericOptions& options) {
    try {
        e::check_numeric_options(options);
    } catch (const e::SpecError& error) {
        return error.what();
    }
    return "";
}

e::NumericOptions with(void (*change)(e::NumericOptions&)) {
    e::NumericOptions options;
    change(options);
    return options;
}

}  // namespace

TEST(OptionRules, DefaultsAndLimitsPass) {
    EXPECT_EQ(refusal({}), "");
    EXPECT_EQ(refusal({.queue_size = 2, .nr_io_queues = 65534, .keep_alive_ms = 1000}), "");
    EXPECT_EQ(refusal({.queue_size = 65535,
                       .nr_io_queues = 1,
                       .keep_alive_ms = 0,
                       .connect_timeout_ms = 1,
                       .io_timeout_ms = 1}),
              "");
}

TEST(OptionRules, EachRefusalNamesItsOption) {
    EXPECT_EQ(refusal(with([](auto& o) { o.queue_size = 1; })).rfind("queue_size=1:", 0), 0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.queue_size = 65536; })).rfind("queue_size=65536:", 0),
              0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.nr_io_queues = 0; })).rfind("nr_io_queues=0:", 0), 0u);
    EXPECT_EQ(
        refusal(with([](auto& o) { o.nr_io_queues = 65535; })).rfind("nr_io_queues=65535:", 0), 0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.keep_alive_ms = 1; })).rfind("keep_alive_ms=1:", 0), 0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.keep_alive_ms = 999; })).rfind("keep_alive_ms=999:", 0),
              0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.io_timeout_ms = 0; })).rfind("io_timeout_ms=0:", 0), 0u);
    EXPECT_EQ(
        refusal(with([](auto& o) { o.connect_timeout_ms = 0; })).rfind("connect_timeout_ms=0:", 0),
        0u);
    EXPECT_EQ(refusal(with([](auto& o) { o.io_timeout_ms = 0; })).find('\n'), std::string::npos);
}

TEST(OptionRules, ReconnectTimers) {
    EXPECT_EQ(refusal({.ctrl_loss_tmo_ms = 30000}), "");
    EXPECT_EQ(refusal({.reconnect_delay_ms = 1, .ctrl_loss_tmo_ms = 2, .fast_io_fail_tmo_ms = 1}),
              "");
    EXPECT_EQ(
        refusal(with([](auto& o) { o.reconnect_delay_ms = 0; })).rfind("reconnect_delay_ms=0:", 0),
        0u);
    // fast_io_fail_tmo means nothing without reconnecting, and nothing past ctrl_loss_tmo.
    EXPECT_EQ(refusal(with([](auto& o) {
                  o.fast_io_fail_tmo_ms = 500;
              })).rfind("fast_io_fail_tmo_ms=500:", 0),
              0u);
    const std::string late = refusal(with([](auto& o) {
        o.ctrl_loss_tmo_ms = 1000;
        o.fast_io_fail_tmo_ms = 1000;
    }));
    EXPECT_EQ(late.rfind("fast_io_fail_tmo_ms=1000:", 0), 0u) << late;
    EXPECT_NE(late.find("ctrl_loss_tmo_ms=1000"), std::string::npos) << late;
}

TEST(OptionRules, IgnoredSpdkOptionNames) {
    EXPECT_EQ(e::ignored_option_names(0), "");
    std::uint64_t given = 0;
    for (std::size_t i = 0; i < e::kSpdkIgnoredOptions.size(); ++i) {
        if (e::kSpdkIgnoredOptions[i] == "enable_sgl" ||
            e::kSpdkIgnoredOptions[i] == "digest_enable") {
            given |= std::uint64_t{1} << i;
        }
    }
    EXPECT_EQ(e::ignored_option_names(given), "enable_sgl, digest_enable");
}

TEST(HostNqn, AcceptsTheTwoFormsNvmeSpecifies) {
    EXPECT_NO_THROW(
        e::check_host_nqn("nqn.2014-08.org.nvmexpress:uuid:"
                          "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"));
    EXPECT_NO_THROW(e::check_host_nqn("nqn.2016-06.io.spdk:host1"));
    EXPECT_NO_THROW(
        e::check_host_nqn("nqn.2026-12.io.nvmeof:" + std::string(200, 'a')));  // 222 bytes
}

TEST(HostNqn, RefusesWithAMessageNamingHostnqn) {
    for (const std::string& bad :
         {std::string("host1"), std::string("iqn.2016-06.io.spdk:host1"), std::string("nqn.host"),
          std::string("nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"),
          "nqn.2026-12.io.nvmeof:" + std::string(202, 'a')}) {  // 224 bytes
        try {
            e::check_host_nqn(bad);
            FAIL() << bad << " was accepted";
        } catch (const e::SpecError& error) {
            EXPECT_EQ(std::string(error.what()).rfind("hostnqn=\"", 0), 0u) << error.what();
        }
    }
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    options.subnqn = "nqn.2026-12.io.nvmeof:t";
    options.hostnqn = "myhost";
    EXPECT_THROW(e::resolve_target(options, ""), e::SpecError);
}
