#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "nvmeof/protection.hpp"
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

// The one-line message parse_protection_options throws, or "" when it accepts.
std::string protection_refusal(const e::ProtectionOptionText& text) {
    try {
        e::parse_protection_options(text);
    } catch (const e::SpecError& error) {
        return error.what();
    }
    return "";
}

TEST(ProtectionOptions, DefaultsAreSpdks) {
    const e::ProtectionOptions o = e::parse_protection_options({});
    EXPECT_TRUE(o.pi_act);
    EXPECT_EQ(o.pi_chk, 0);
    EXPECT_EQ(o.apptag, 0x1234);
    EXPECT_EQ(o.apptag_mask, 0xFFFF);
    EXPECT_EQ(o.md_per_io_size, 4096u);
    EXPECT_FALSE(o.pi_given);
    EXPECT_FALSE(o.md_per_io_size_given);
}

TEST(ProtectionOptions, ValuesAsSpdkWritesThem) {
    const e::ProtectionOptions o = e::parse_protection_options({.pi_act = "0",
                                                                .pi_chk = "GUARD|REFTAG",
                                                                .apptag = "0x8888",
                                                                .apptag_mask = "255",
                                                                .md_per_io_size = "8k"});
    EXPECT_FALSE(o.pi_act);
    EXPECT_EQ(o.pi_chk, nvmeof::kPrchkGuard | nvmeof::kPrchkReftag);
    EXPECT_EQ(o.apptag, 0x8888);
    EXPECT_EQ(o.apptag_mask, 0xFF);
    EXPECT_EQ(o.md_per_io_size, 8192u);
    EXPECT_TRUE(o.pi_given);
    EXPECT_TRUE(o.md_per_io_size_given);
    EXPECT_TRUE(e::parse_protection_options({.pi_act = "1"}).pi_given);
}

TEST(ProtectionOptions, EveryPiChkSubsetInEitherSeparatorAndAnyCase) {
    const char* names[] = {"GUARD", "REFTAG", "APPTAG"};
    const std::uint8_t bits[] = {nvmeof::kPrchkGuard, nvmeof::kPrchkReftag, nvmeof::kPrchkApptag};
    for (unsigned subset = 1; subset < 8; ++subset) {
        for (const char* separator : {",", "|", " | "}) {
            std::string text;
            std::uint8_t want = 0;
            for (unsigned i = 0; i < 3; ++i) {
                if ((subset >> i) & 1u) {
                    text += (text.empty() ? "" : separator) + std::string(names[i]);
                    want |= bits[i];
                }
            }
            EXPECT_EQ(e::parse_protection_options({.pi_chk = text}).pi_chk, want) << text;
        }
    }
    EXPECT_EQ(e::parse_protection_options({.pi_chk = "guard,AppTag"}).pi_chk,
              nvmeof::kPrchkGuard | nvmeof::kPrchkApptag);
    EXPECT_EQ(e::pi_chk_names(nvmeof::kPrchkAll), "GUARD|REFTAG|APPTAG");
    EXPECT_EQ(e::pi_chk_names(0), "none");
}

TEST(ProtectionOptions, EachMistakeIsOneLineNamingItsOption) {
    const std::pair<e::ProtectionOptionText, std::string> cases[] = {
        {{.pi_act = "2"}, "pi_act=2: must be 0"},
        {{.pi_act = "yes"}, "pi_act=yes: must be 0"},
        {{.pi_chk = "GUARD|CRC"}, "pi_chk=GUARD|CRC: unknown check \"CRC\""},
        {{.pi_chk = "GUARD,"}, "pi_chk=GUARD,: an empty check"},
        {{.pi_chk = "GUARD,,REFTAG"}, "pi_chk=GUARD,,REFTAG: an empty check"},
        {{.apptag = "0x12345"}, "apptag=0x12345: an application tag field is 16 bits"},
        {{.apptag = "65536"}, "apptag=65536: an application tag field is 16 bits"},
        {{.apptag = "-1"}, "apptag=-1: not a number"},
        {{.apptag_mask = "0xfffff"}, "apptag_mask=0xfffff: an application tag field is 16 bits"},
        {{.apptag_mask = "ff"}, "apptag_mask=ff: not a number"},
        {{.md_per_io_size = "4q"}, "md_per_io_size=4q: not a byte count"},
        {{.md_per_io_size = "8g"}, "md_per_io_size=8g: a metadata buffer per I/O is below 4 GiB"},
    };
    for (const auto& [text, needle] : cases) {
        const std::string refused = protection_refusal(text);
        EXPECT_EQ(refused.rfind(needle, 0), 0u) << refused;
        EXPECT_EQ(refused.find('\n'), std::string::npos) << refused;
    }
}

TEST(OptionRules, IgnoredSpdkOptionNames) {
    EXPECT_EQ(e::ignored_option_names(0), "");
    std::uint64_t given = 0;
    for (std::size_t i = 0; i < e::kSpdkIgnoredOptions.size(); ++i) {
        if (e::kSpdkIgnoredOptions[i] == "enable_sgl" || e::kSpdkIgnoredOptions[i] == "sge_size") {
            given |= std::uint64_t{1} << i;
        }
    }
    EXPECT_EQ(e::ignored_option_names(given), "enable_sgl, sge_size");
    // digest_enable means something over TCP: named only where it does not.
    EXPECT_EQ(e::ignored_option_names(given, true), "enable_sgl, sge_size, digest_enable");
    EXPECT_EQ(e::ignored_option_names(0, true), "digest_enable");
    for (const std::string_view name : e::kSpdkIgnoredOptions) {
        EXPECT_NE(name, "digest_enable");
    }
}

TEST(DigestEnable, SpdksValuesInAnyCase) {
    const auto is = [](std::string_view text, bool header, bool data) {
        const e::DigestChoice d = e::parse_digest_enable(text);
        return d.given && d.header == header && d.data == data;
    };
    EXPECT_TRUE(is("HEADER", true, false));
    EXPECT_TRUE(is("header", true, false));
    EXPECT_TRUE(is("DATA", false, true));
    EXPECT_TRUE(is("Data", false, true));
    EXPECT_TRUE(is("BOTH", true, true));
    EXPECT_TRUE(is("both", true, true));
    EXPECT_TRUE(is("NONE", false, false));
    EXPECT_TRUE(is(" none ", false, false));
    const e::DigestChoice unset = e::parse_digest_enable("");  // or an unset ${VAR}
    EXPECT_FALSE(unset.given || unset.header || unset.data);
}

TEST(DigestEnable, AnythingElseIsOneLineNamingIt) {
    for (const char* text : {"HDR", "yes", "1", "HEADER|DATA", "HEADER,DATA", "CRC32C"}) {
        try {
            e::parse_digest_enable(text);
            FAIL() << text << " accepted";
        } catch (const e::SpecError& error) {
            const std::string what = error.what();
            EXPECT_EQ(what.rfind("digest_enable=" + std::string(text) + ": ", 0), 0u) << what;
            EXPECT_NE(what.find("HEADER, DATA, BOTH or NONE"), std::string::npos) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        }
    }
}

// The forms a host NQN may take are the library's rule (tests/unit/core/
// option_rules_test.cpp); here, that the engine applies it, by fio's names.
TEST(HostNqn, ResolveTargetRefusesNamingHostnqn) {
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    options.subnqn = "nqn.2026-12.io.nvmeof:t";
    options.hostnqn = "nqn.2016-06.io.spdk:host1";
    EXPECT_EQ(e::resolve_target(options, "").host_nqn, "nqn.2016-06.io.spdk:host1");
    for (const char* bad : {"myhost", "nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"}) {
        options.hostnqn = bad;
        try {
            e::resolve_target(options, "");
            FAIL() << bad << " was accepted";
        } catch (const e::SpecError& error) {
            EXPECT_EQ(std::string(error.what()).rfind("hostnqn=\"", 0), 0u) << error.what();
        }
    }
    options.hostnqn = "";
    EXPECT_THROW(e::resolve_target(options, "traddr=127.0.0.1 subnqn=nqn.a hostnqn=myhost"),
                 e::SpecError);
}

// Each of the library's rules a spec is held to, refused before any connect
// in one line that starts with the job's name of the option.
TEST(TargetRules, EachRefusalNamesTheJobsOption) {
    const std::pair<const char*, const char*> cases[] = {
        {"traddr=127.0.0.1 subnqn=nqn.a trsvcid=0", "filename trsvcid=0: "},
        {"traddr=127.0.0.1 subnqn=nqn.a trsvcid=port", "filename trsvcid=port: not a number"},
        {"traddr=127.0.0.1 subnqn=nqn.a ns=4294967295", "filename ns=4294967295: "},
        {"traddr=127.0.0.1 subnqn=nqn.a hostid=not-a-uuid", "hostid=\"not-a-uuid\": not a UUID"},
        {"traddr=127.0.0.1 subnqn=nqn.a host_traddr=10.0.0.9:4420",
         "host_traddr=10.0.0.9:4420: a source address takes no port"},
    };
    for (const auto& [filename, needle] : cases) {
        try {
            e::resolve_target({}, filename);
            FAIL() << filename << " was accepted";
        } catch (const e::SpecError& error) {
            EXPECT_EQ(std::string(error.what()).rfind(needle, 0), 0u) << error.what();
            EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
        }
    }
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    // OptionValues holds views, as fio's option strings: the text must outlive them.
    const std::string long_nqn = "nqn.2026-12.io.nvmeof:" + std::string(202, 'a');  // 224 bytes
    options.subnqn = long_nqn;
    try {
        e::resolve_target(options, "");
        FAIL() << "a 224-byte subnqn was accepted";
    } catch (const e::SpecError& error) {
        EXPECT_EQ(std::string(error.what()).rfind("subnqn=\"", 0), 0u) << error.what();
    }
}

TEST(SecretOptions, CheckedAsTheConnectReadsThem) {
    EXPECT_NO_THROW(e::check_secret_options("", ""));
    try {
        e::check_secret_options("", "DHHC-1:00:not-read:");
        FAIL() << "a controller secret without a host secret was accepted";
    } catch (const e::SpecError& error) {
        EXPECT_EQ(std::string(error.what()).rfind("dhchap_ctrl_secret: needs dhchap_secret", 0), 0u)
            << error.what();
    }
    try {
        e::check_secret_options("DHHC-1:00:bm90IGEga2V5:", "");
        FAIL() << "a malformed secret was accepted";
    } catch (const e::SpecError& error) {
        const std::string line = error.what();
        EXPECT_EQ(line.rfind("dhchap_secret: ", 0), 0u) << line;
        EXPECT_EQ(line.find("bm90IGEga2V5"), std::string::npos) << "the secret is shown: " << line;
    }
}
