// Command-line parsing (docs/target-cli.md).
#include "config.hpp"

#include <gtest/gtest.h>

namespace nvmeof::target {
namespace {

TargetConfig parse(std::vector<std::string_view> args) {
    TargetConfig config;
    EXPECT_EQ(parse_command_line(args, config), ParseOutcome::run);
    return config;
}

std::string error_of(std::vector<std::string_view> args) {
    TargetConfig config;
    try {
        parse_command_line(args, config);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Config, DefaultsAndSubsystems) {
    const TargetConfig c =
        parse({"--subsystem", "nqn.2024-01.io.a", "--namespace", "ram:64M", "--namespace",
               "ram:1G:4096", "--allow-host", "nqn.h1", "--subsystem", "nqn.2024-01.io.b", "--size",
               "8M", "--namespace", "file:/tmp/x:y.img:4096"});
    EXPECT_EQ(c.listen_address, "127.0.0.1");
    EXPECT_EQ(c.port, 4420);
    ASSERT_EQ(c.subsystems.size(), 2u);
    ASSERT_EQ(c.subsystems[0].namespaces.size(), 2u);
    EXPECT_EQ(c.subsystems[0].namespaces[0].size_bytes, 64u << 20);
    EXPECT_EQ(c.subsystems[0].namespaces[0].lba_size, 512u);
    EXPECT_EQ(c.subsystems[0].namespaces[1].size_bytes, 1u << 30);
    EXPECT_EQ(c.subsystems[0].namespaces[1].lba_size, 4096u);
    EXPECT_EQ(c.subsystems[0].allowed_hosts, std::vector<std::string>{"nqn.h1"});
    const NamespaceConfig& file = c.subsystems[1].namespaces[0];
    EXPECT_EQ(file.backing, NamespaceConfig::Backing::file);
    EXPECT_EQ(file.path, "/tmp/x:y.img");
    EXPECT_EQ(file.lba_size, 4096u);
    EXPECT_EQ(file.size_bytes, 8u << 20);
    EXPECT_EQ(c.limits.mdts, 5);
    EXPECT_EQ(c.limits.mqes, 127);
    EXPECT_EQ(c.limits.effective_maxcmd(), 128);
    EXPECT_EQ(c.limits.ioccsz, 260u);
    EXPECT_EQ(c.limits.max_io_queues, 8);
    EXPECT_EQ(c.limits.kas, 10);
    EXPECT_EQ(c.limits.max_transfer_bytes(), 128u * 1024);
}

TEST(Config, LimitsListenAndStats) {
    const TargetConfig c =
        parse({"--listen",    "0.0.0.0",         "--port=0", "--mdts",    "3",    "--mqes",
               "15",          "--maxcmd",        "8",        "--crqsize", "12",   "--ioccsz",
               "4",           "--max-io-queues", "2",        "--kas",     "0x14", "--stats",
               "/tmp/s.json", "--subsystem",     "nqn.a"});
    EXPECT_EQ(c.listen_address, "0.0.0.0");
    EXPECT_EQ(c.port, 0);
    EXPECT_EQ(c.limits.mdts, 3);
    EXPECT_EQ(c.limits.mqes, 15);
    EXPECT_EQ(c.limits.effective_maxcmd(), 8);
    EXPECT_EQ(c.limits.crqsize, 12);
    EXPECT_EQ(c.limits.ioccsz, 4u);
    EXPECT_EQ(c.limits.max_io_queues, 2);
    EXPECT_EQ(c.limits.kas, 20);
    EXPECT_EQ(c.stats_path, "/tmp/s.json");
}

TEST(Config, Faults) {
    const TargetConfig c = parse({"--subsystem", "nqn.a", "--fault", "reject-connect=6", "--fault",
                                  "connect-status=1/0x81", "--fault", "fail-io=3:2/0x81", "--fault",
                                  "fail-lba=10-20:0/0x80", "--fault", "drop-after=50", "--fault",
                                  "delay-ms=5", "--fault=stop-answering-after=7", "--fault",
                                  "ignore-io=9", "--fault", "reorder-io=4"});
    const FaultConfig& f = c.faults;
    EXPECT_EQ(f.reorder_io, 4u);
    EXPECT_EQ(f.reject_connect, 6);
    ASSERT_TRUE(f.connect_status);
    EXPECT_EQ(f.connect_status->cqe_field(), 0x8000 | (1 << 9) | (0x81 << 1));
    EXPECT_EQ(f.ignore_io, 9u);
    ASSERT_EQ(f.fail_io.size(), 1u);
    EXPECT_EQ(f.fail_io[0].nth, 3u);
    EXPECT_EQ(f.fail_io[0].status.type(), wire::StatusCodeType::media);
    ASSERT_EQ(f.fail_lba.size(), 1u);
    EXPECT_EQ(f.fail_lba[0].first, 10u);
    EXPECT_EQ(f.fail_lba[0].last, 20u);
    EXPECT_EQ(f.drop_after, 50u);
    EXPECT_EQ(f.delay_ms, 5u);
    EXPECT_EQ(f.stop_answering_after, 7u);
    EXPECT_FALSE(f.drop_after_run);
    EXPECT_EQ(parse({"--subsystem", "nqn.a", "--fault", "drop-after-run=12"}).faults.drop_after_run,
              12u);
    EXPECT_EQ(error_of({"--subsystem", "nqn.a", "--fault", "drop-after-run=0"}),
              "--fault drop-after-run=0: N is 1-based");
}

TEST(Config, ListenerFaultsAndPorts) {
    const TargetConfig c = parse({"--port", "0", "--port", "4421", "--port=4422", "--subsystem",
                                  "nqn.a", "--fault", "outage-after=100:1500",
                                  "--fault=outage-after=900:0", "--fault", "port-down-after=40:2"});
    EXPECT_EQ(c.port, 0);
    EXPECT_EQ(c.more_ports, (std::vector<std::uint16_t>{4421, 4422}));
    ASSERT_EQ(c.faults.outages.size(), 2u);
    EXPECT_EQ(c.faults.outages[0].after, 100u);
    EXPECT_EQ(c.faults.outages[0].ms, 1500u);
    EXPECT_EQ(c.faults.outages[1].after, 900u);
    ASSERT_EQ(c.faults.ports_down.size(), 1u);
    EXPECT_EQ(c.faults.ports_down[0].after, 40u);
    EXPECT_EQ(c.faults.ports_down[0].port_index, 2u);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "port-down-after=4:1"})
                  .find("names no --port"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "outage-after=4"}).find("N:MS"),
              std::string::npos);
}

TEST(Config, AnaStatesAndChanges) {
    const TargetConfig c =
        parse({"--port", "0", "--port", "0", "--subsystem", "nqn.a", "--ana-state",
               "1:non-optimized", "--fault", "ana-change-after=300:0:inaccessible"});
    ASSERT_EQ(c.ana_states.size(), 1u);
    EXPECT_EQ(c.ana_states[0].first, 1u);
    EXPECT_EQ(c.ana_states[0].second, wire::AnaState::non_optimized);
    ASSERT_EQ(c.faults.ana_changes.size(), 1u);
    EXPECT_EQ(c.faults.ana_changes[0].after, 300u);
    EXPECT_EQ(c.faults.ana_changes[0].port_index, 0u);
    EXPECT_EQ(c.faults.ana_changes[0].state, wire::AnaState::inaccessible);
    EXPECT_NE(
        error_of({"--subsystem", "nqn.a", "--ana-state", "1:optimized"}).find("names no --port"),
        std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--ana-state", "0:fast"}).find("INDEX:STATE"),
              std::string::npos);
    EXPECT_NE(
        error_of({"--subsystem", "nqn.a", "--fault", "ana-change-after=5"}).find("N:INDEX:STATE"),
        std::string::npos);
}

TEST(Config, Transport) {
    EXPECT_EQ(parse({"--subsystem", "nqn.a"}).transport, Transport::rdma);
    EXPECT_EQ(parse({"--transport", "tcp", "--subsystem", "nqn.a"}).transport, Transport::tcp);
    EXPECT_EQ(parse({"--transport=rdma", "--subsystem", "nqn.a"}).transport, Transport::rdma);
    EXPECT_EQ(error_of({"--transport", "fc", "--subsystem", "nqn.a"}),
              "--transport \"fc\": expected rdma or tcp");
    EXPECT_EQ(
        error_of({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", "reject-connect=6"}),
        "--fault reject-connect is NVMe/RDMA only (--transport rdma)");
    EXPECT_EQ(error_of({"--transport", "tcp", "--crqsize", "8", "--subsystem", "nqn.a"}),
              "--crqsize is NVMe/RDMA only (--transport rdma)");
    EXPECT_EQ(error_of({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", "reorder-io=2"}),
              "--fault reorder-io is NVMe/RDMA only (--transport rdma)");
    EXPECT_EQ(error_of({"--subsystem", "nqn.a", "--fault", "reorder-io=0"}),
              "--fault reorder-io=0: N is 1 or more (every Nth I/O command of a queue)");
}

TEST(Config, TcpSettings) {
    const TargetConfig defaults = parse({"--transport", "tcp", "--subsystem", "nqn.a"});
    EXPECT_EQ(defaults.tcp.maxh2cdata, 128u * 1024);
    EXPECT_EQ(defaults.tcp.c2h_pdu_bytes, 64u * 1024);
    EXPECT_TRUE(defaults.tcp.c2h_success);
    const TargetConfig c =
        parse({"--transport", "tcp", "--maxh2cdata", "8K", "--c2h-pdu-bytes=1000",
               "--no-c2h-success", "--subsystem", "nqn.a"});
    EXPECT_EQ(c.tcp.maxh2cdata, 8192u);
    EXPECT_EQ(c.tcp.c2h_pdu_bytes, 1000u);
    EXPECT_FALSE(c.tcp.c2h_success);
    EXPECT_EQ(parse({"--transport", "tcp", "--maxh2cdata", "4100", "--subsystem", "nqn.a"})
                  .tcp.maxh2cdata,
              4100u);
    for (const char* bad : {"4092", "4098", "17M"}) {
        EXPECT_EQ(error_of({"--transport", "tcp", "--maxh2cdata", bad, "--subsystem", "nqn.a"}),
                  std::string("--maxh2cdata ") + bad +
                      ": MAXH2CDATA must be a multiple of 4 bytes from 4096 to 16M");
    }
    EXPECT_NE(error_of({"--transport", "tcp", "--maxh2cdata", "lots", "--subsystem", "nqn.a"})
                  .find("not a number"),
              std::string::npos);
    EXPECT_NE(error_of({"--transport", "tcp", "--c2h-pdu-bytes", "0", "--subsystem", "nqn.a"})
                  .find("must not be zero"),
              std::string::npos);
    EXPECT_EQ(error_of({"--transport", "tcp", "--no-c2h-success=1", "--subsystem", "nqn.a"}),
              "--no-c2h-success takes no value");
    EXPECT_EQ(error_of({"--maxh2cdata", "8192", "--subsystem", "nqn.a"}),
              "--maxh2cdata is NVMe/TCP only (--transport tcp)");
    EXPECT_EQ(error_of({"--subsystem", "nqn.a", "--no-c2h-success"}),
              "--no-c2h-success is NVMe/TCP only (--transport tcp)");
}

TEST(Config, TcpFaults) {
    using Action = FaultConfig::Tcp::Action;
    const TargetConfig c =
        parse({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", "reset-after=7", "--fault",
               "reset-mid-transfer=2", "--fault", "short-pdu=3", "--fault", "short-pdu=4:close",
               "--fault", "corrupt-pdu=5:hlen", "--fault=corrupt-pdu=6:ddgst", "--fault",
               "r2t-delay-ms=250"});
    const FaultConfig::Tcp& tcp = c.faults.tcp;
    EXPECT_EQ(tcp.reset_after, std::vector<std::uint64_t>{7});
    ASSERT_EQ(tcp.commands.size(), 5u);
    EXPECT_EQ(tcp.commands[0].nth, 2u);
    EXPECT_EQ(tcp.commands[0].action, Action::reset_mid_transfer);
    EXPECT_EQ(tcp.commands[1].action, Action::short_stall);
    EXPECT_EQ(tcp.commands[2].action, Action::short_close);
    EXPECT_EQ(tcp.commands[3].action, Action::corrupt_hlen);
    EXPECT_EQ(tcp.commands[4].nth, 6u);
    EXPECT_EQ(tcp.commands[4].action, Action::corrupt_ddgst);
    EXPECT_EQ(tcp.r2t_delay_ms, 250u);
    EXPECT_EQ(tcp_fault_spec(tcp.commands[0]), "reset-mid-transfer=2");
    EXPECT_EQ(tcp_fault_spec(tcp.commands[1]), "short-pdu=3:stall");
    EXPECT_EQ(tcp_fault_spec(tcp.commands[4]), "corrupt-pdu=6:ddgst");
    EXPECT_EQ(parse({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", "corrupt-pdu=1:type",
                     "--fault", "corrupt-pdu=2:hdgst"})
                  .faults.tcp.commands[1]
                  .action,
              Action::corrupt_hdgst);

    const auto error = [](std::string_view spec) {
        return error_of({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", spec});
    };
    EXPECT_EQ(error("short-pdu=3:explode"),
              "--fault short-pdu=3:explode: expected N:WHAT, WHAT one of stall, close");
    EXPECT_EQ(error("corrupt-pdu=3"),
              "--fault corrupt-pdu=3: expected N:WHAT, WHAT one of type, hlen, hdgst, ddgst");
    EXPECT_EQ(error("reset-mid-transfer=2:close"),
              "--fault reset-mid-transfer=2:close: expected N");
    EXPECT_EQ(error("reset-after=0"), "--fault reset-after=0: N is 1-based");
    EXPECT_EQ(error("corrupt-pdu=0:type"), "--fault corrupt-pdu=0:type: N is 1-based");
    EXPECT_EQ(error("short-pdu=x"), "--fault short-pdu=x: \"x\" is not a number");
    EXPECT_NE(error("r2t-delay-ms=600001").find("maximum"), std::string::npos);
    EXPECT_EQ(error_of({"--transport", "tcp", "--subsystem", "nqn.a", "--fault", "short-pdu=3",
                        "--fault", "corrupt-pdu=3:type"}),
              "--fault corrupt-pdu=3:type: I/O command 3 already has short-pdu=3:stall");
    EXPECT_EQ(error_of({"--subsystem", "nqn.a", "--fault", "reset-after=3"}),
              "--fault reset-after is NVMe/TCP only (--transport tcp)");
    EXPECT_EQ(error_of({"--subsystem", "nqn.a", "--fault", "r2t-delay-ms=3"}),
              "--fault r2t-delay-ms is NVMe/TCP only (--transport tcp)");
}

TEST(Config, Help) {
    TargetConfig config;
    EXPECT_EQ(parse_command_line({"--subsystem", "nqn.a", "--help"}, config), ParseOutcome::help);
    EXPECT_NE(help_text().find("--fault"), std::string_view::npos);
    EXPECT_NE(help_text().find("stop-answering-after"), std::string_view::npos);
}

TEST(Config, Errors) {
    EXPECT_NE(error_of({}).find("--subsystem"), std::string::npos);
    EXPECT_NE(error_of({"--bogus"}).find("--bogus"), std::string::npos);
    EXPECT_NE(error_of({"stray"}).find("stray"), std::string::npos);
    EXPECT_NE(error_of({"--port"}).find("--port needs a value"), std::string::npos);
    EXPECT_NE(error_of({"--port", "70000", "--subsystem", "nqn.a"}).find("--port"),
              std::string::npos);
    EXPECT_NE(error_of({"--port", "x1", "--subsystem", "nqn.a"}).find("not a number"),
              std::string::npos);
    EXPECT_NE(error_of({"--namespace", "ram:1M"}).find("must follow a --subsystem"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--namespace", "ram:1M:1024"}).find("512 or 4096"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--namespace", "disk:/x"}).find("ram:SIZE"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--namespace", "ram:1000"}).find("multiple"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--namespace", "ram:0"}).find("zero"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.2014-08.org.nvmexpress.discovery"}).find("discovery"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--subsystem", "nqn.a"}).find("twice"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", std::string(300, 'x')}).find("223"), std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "explode=1"}).find("explode"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "fail-io=0:0/1"}).find("1-based"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "fail-io=1:8/1"}).find("maximum"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "fail-lba=5-1:0/1"}).find("FIRST"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "connect-status=1"}).find("SCT/SC"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--mdts", "13"}).find("--mdts"), std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--ioccsz", "3"}).find("--ioccsz"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--max-io-queues", "0"}).find("at least"),
              std::string::npos);
}

TEST(Config, NamespacesWithMetadataAndProtection) {
    const TargetConfig c = parse({"--subsystem", "nqn.a",
                                  "--namespace", "ram:64M:512+8:pi1",
                                  "--namespace", "ram:64M:4096+64:pi1:guard64",
                                  "--namespace", "ram:16M:512+16",
                                  "--namespace", "ram:1M:512+16:first:pi2",
                                  "--namespace", "ram:1M:4096+16:pi3:guard64:first",
                                  "--size",      "4M",
                                  "--namespace", "file:/tmp/a:b.img:512+32:pi3",
                                  "--namespace", "file:/tmp/c.img:4096",
                                  "--namespace", "ram:1M:4096+16:pi1:guard32",
                                  "--namespace", "ram:1M:512+8:pi2:sts=12",
                                  "--namespace", "file:/tmp/d.img:512+16:pi1:guard64:sts=48"});
    const auto& ns = c.subsystems[0].namespaces;
    ASSERT_EQ(ns.size(), 10u);
    EXPECT_EQ(ns[0].size_bytes, 64u << 20);
    EXPECT_EQ(ns[0].lba_size, 512u);
    EXPECT_EQ(ns[0].metadata_size, 8u);
    EXPECT_EQ(ns[0].pi_type, wire::PiType::type1);
    EXPECT_EQ(ns[0].pi_guard, wire::PiGuard::crc16);
    EXPECT_FALSE(ns[0].pi_first);
    EXPECT_EQ(ns[0].store_bytes(), (64u << 20) / 512 * 520);
    EXPECT_EQ(ns[1].lba_size, 4096u);
    EXPECT_EQ(ns[1].metadata_size, 64u);
    EXPECT_EQ(ns[1].pi_guard, wire::PiGuard::crc64);
    EXPECT_EQ(ns[1].block_format().pi_bytes(), wire::kPi64Bytes);
    EXPECT_EQ(ns[2].metadata_size, 16u);
    EXPECT_EQ(ns[2].pi_type, wire::PiType::none);
    EXPECT_EQ(ns[3].pi_type, wire::PiType::type2);
    EXPECT_TRUE(ns[3].pi_first);
    EXPECT_EQ(ns[4].pi_type, wire::PiType::type3);
    EXPECT_EQ(ns[4].pi_guard, wire::PiGuard::crc64);
    EXPECT_TRUE(ns[4].pi_first);
    EXPECT_EQ(ns[5].path, "/tmp/a:b.img");
    EXPECT_EQ(ns[5].metadata_size, 32u);
    EXPECT_EQ(ns[5].pi_type, wire::PiType::type3);
    EXPECT_EQ(ns[5].size_bytes, 4u << 20);
    EXPECT_EQ(ns[6].path, "/tmp/c.img");
    EXPECT_EQ(ns[6].lba_size, 4096u);
    EXPECT_EQ(ns[7].pi_guard, wire::PiGuard::crc32);
    EXPECT_EQ(ns[7].storage_tag_bits, 16u);  // the least the 32-bit guard allows
    EXPECT_EQ(ns[7].block_format().pi_bytes(), wire::kPi32Bytes);
    EXPECT_EQ(ns[8].pi_guard, wire::PiGuard::crc16);
    EXPECT_EQ(ns[8].storage_tag_bits, 12u);
    EXPECT_EQ(ns[8].block_format().reftag_mask(), 0xFFFFFu);
    EXPECT_EQ(ns[9].path, "/tmp/d.img");
    EXPECT_EQ(ns[9].storage_tag_bits, 48u);
    EXPECT_EQ(ns[6].metadata_size, 0u);
}

TEST(Config, NamespaceProtectionErrors) {
    const auto error = [](std::string_view spec) {
        return error_of({"--subsystem", "nqn.a", "--namespace", spec});
    };
    EXPECT_NE(error("ram:1M:512+7").find("metadata size must be 8, 16, 32 or 64, got 7"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+128").find("metadata size"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+0").find("metadata size"), std::string::npos);
    EXPECT_NE(error("ram:1M:1024+8").find("512 or 4096"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+x").find("not a number"), std::string::npos);
    EXPECT_NE(error("ram:1M:512:pi1").find("\"pi1\" needs metadata"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi4").find("unknown option \"pi4\""), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:pi2").find("more than one PI type"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:first:first").find("\"first\" is given twice"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:first").find("first needs a PI type"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:guard64").find("guard64 needs a PI type"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:guard64").find("guard64 needs 16 bytes of PI"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:guard32").find("guard32 needs 16 bytes of PI"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:pi1:guard32:guard64").find("exclude each other"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:sts=8").find("sts needs a PI type"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:pi1:guard32:sts=8").find("sts=8 is outside"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:sts=33").find("sts=33 is outside"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+16:pi1:guard64:sts=49").find("sts=49 is outside"),
              std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:sts=x").find("not a number"), std::string::npos);
    EXPECT_NE(error("ram:1M:512+8:pi1:sts=4:sts=4").find("\"sts\" is given twice"),
              std::string::npos);
    EXPECT_NE(error("ram:1000:512+8").find("multiple"), std::string::npos);
    EXPECT_NE(error("file:/tmp/x:512+8:pi9").find("unknown option \"pi9\""), std::string::npos);
    EXPECT_NE(error("file:/tmp/x:4096:pi1").find("needs metadata"), std::string::npos);
    EXPECT_NE(error("file::512+8:pi1").find("path is empty"), std::string::npos);
    // Each mistake is one line naming the spec.
    EXPECT_EQ(error("ram:1M:512+8:pi1:guard64").find('\n'), std::string::npos);
    EXPECT_EQ(error("ram:1M:512+16:pi1:guard32:sts=8").find('\n'), std::string::npos);
    EXPECT_EQ(error("ram:1M:512+8:pi1:guard64").rfind("--namespace ram:1M:512+8:pi1:guard64", 0),
              0u);
}

TEST(Config, ZonedNamespaces) {
    const TargetConfig c =
        parse({"--subsystem", "nqn.a", "--namespace", "ram:64M:4096:zoned=1M", "--namespace",
               "ram:1M:zoned=64K,cap=48K,max_open=2,max_active=4,conv=1", "--namespace", "ram:1M",
               "--zasl", "3", "--fault", "zone-offline=5", "--fault", "zone-read-only=0x80",
               "--fault", "zone-full=256"});
    const auto& namespaces = c.subsystems[0].namespaces;
    ASSERT_EQ(namespaces.size(), 3u);
    ASSERT_TRUE(namespaces[0].zoned);
    EXPECT_EQ(namespaces[0].lba_size, 4096u);
    EXPECT_EQ(namespaces[0].zoned->zone_bytes, 1u << 20);
    EXPECT_EQ(namespaces[0].zoned->capacity_bytes, 1u << 20);  // the zone size by default
    EXPECT_FALSE(namespaces[0].zoned->max_open);
    EXPECT_FALSE(namespaces[0].zoned->max_active);
    EXPECT_EQ(namespaces[0].zoned->conventional, 0u);
    const ZonedConfig& z = *namespaces[1].zoned;
    EXPECT_EQ(namespaces[1].lba_size, 512u);
    EXPECT_EQ(z.zone_bytes, 64u << 10);
    EXPECT_EQ(z.capacity_bytes, 48u << 10);
    EXPECT_EQ(z.max_open, 2u);
    EXPECT_EQ(z.max_active, 4u);
    EXPECT_EQ(z.conventional, 1u);
    EXPECT_FALSE(namespaces[2].zoned);
    EXPECT_EQ(c.limits.zasl, 3);
    ASSERT_EQ(c.faults.zone_faults.size(), 3u);
    EXPECT_EQ(c.faults.zone_faults[0].kind, ZoneFault::Kind::offline);
    EXPECT_EQ(c.faults.zone_faults[0].lba, 5u);
    EXPECT_EQ(c.faults.zone_faults[1].kind, ZoneFault::Kind::read_only);
    EXPECT_EQ(c.faults.zone_faults[1].lba, 128u);
    EXPECT_EQ(c.faults.zone_faults[2].kind, ZoneFault::Kind::full);
}

TEST(Config, ZonedNamespaceErrors) {
    const auto error = [](std::string_view spec) {
        return error_of({"--subsystem", "nqn.a", "--namespace", spec});
    };
    const std::pair<const char*, const char*> cases[] = {
        {"ram:1M:zoned=", "zone size: \"\" is not a number"},
        {"ram:1M:zoned=0", "must not be zero"},
        {"ram:1M:zoned=x", "not a number"},
        {"ram:1M:zoned=1000", "not a multiple of the LBA size 512"},
        {"ram:1M:4096:zoned=6K", "not a multiple of the LBA size 4096"},
        {"ram:1M:zoned=384K", "is not a whole number of zones of 393216 bytes"},
        {"ram:1M:zoned=64K,cap=128K", "no larger than the zone size"},
        {"ram:1M:zoned=64K,cap=1000", "a multiple of the LBA size"},
        {"ram:1M:zoned=64K,conv=16", "conv=16 leaves no sequential zone (16 zones in all)"},
        {"ram:1M:zoned=64K,max_open=0", "max_open must be at least 1"},
        {"ram:1M:zoned=64K,max_open=4,max_active=2", "max_open=4 is above max_active=2"},
        {"ram:1M:zoned=64K,max_open=2,max_open=3", "\"max_open\" is given twice"},
        {"ram:1M:zoned=64K,bogus=1", "unknown zone option \"bogus=1\""},
        {"ram:1M:zoned=64K,cap", "unknown zone option \"cap\""},
        {"ram:1M:512+8:zoned=64K", "a zoned namespace takes no metadata"},
        {"ram:1M:512+8:pi1:zoned=64K", "a zoned namespace takes no metadata"},
        {"ram:1M:zoned=64K:512", "zoned= comes last"},
        {"file:/tmp/z.img:zoned=64K", "zoned namespaces are RAM only"},
    };
    for (const auto& [spec, expected] : cases) {
        const std::string message = error(spec);
        EXPECT_NE(message.find(expected), std::string::npos) << spec << ": " << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << spec;
        EXPECT_EQ(message.rfind("--namespace " + std::string(spec), 0), 0u) << message;
    }
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--mdts", "2", "--zasl", "3"})
                  .find("--zasl 3 is above --mdts 2"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--zasl", "13"}).find("above the maximum 12"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "zone-full=x"}).find("not a number"),
              std::string::npos);
}

TEST(Config, CorruptProtectionFaults) {
    const TargetConfig c = parse({"--subsystem", "nqn.a", "--fault", "corrupt-guard=7", "--fault",
                                  "corrupt-apptag=0x10", "--fault=corrupt-reftag=9", "--fault",
                                  "corrupt-storage-tag=3", "--fault", "skip-pi-checks=12"});
    EXPECT_EQ(c.faults.skip_pi_checks, std::vector<std::uint64_t>{12});
    ASSERT_EQ(c.faults.corrupt_pi.size(), 4u);
    EXPECT_EQ(c.faults.corrupt_pi[0].field, wire::PiCheck::guard);
    EXPECT_EQ(c.faults.corrupt_pi[0].lba, 7u);
    EXPECT_EQ(c.faults.corrupt_pi[1].field, wire::PiCheck::apptag);
    EXPECT_EQ(c.faults.corrupt_pi[1].lba, 16u);
    EXPECT_EQ(c.faults.corrupt_pi[2].field, wire::PiCheck::reftag);
    EXPECT_EQ(c.faults.corrupt_pi[2].lba, 9u);
    EXPECT_EQ(c.faults.corrupt_pi[3].field, wire::PiCheck::storage_tag);
    EXPECT_EQ(c.faults.corrupt_pi[3].lba, 3u);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "corrupt-guard=x"}).find("not a number"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--fault", "corrupt-reftag"}).find("NAME=VALUE"),
              std::string::npos);
}

TEST(Config, DhchapKeys) {
    const std::string key = auth::format_secret({1, wire::Bytes(32, 7)});
    const std::string ctrl_key = auth::format_secret({0, wire::Bytes(48, 9)});
    const std::string host_arg = "nqn.h1=" + key;
    const std::string ctrl_arg = "nqn.h1=" + ctrl_key;
    const TargetConfig c =
        parse({"--subsystem", "nqn.a", "--dhchap-key", host_arg, "--dhchap-ctrl-key", ctrl_arg,
               "--dhchap-hash", "sha512,sha256", "--dhchap-dhgroup", "ffdhe4096"});
    ASSERT_EQ(c.dhchap.hosts.size(), 1u);
    const DhchapHostKeys& keys = c.dhchap.hosts.at("nqn.h1");
    ASSERT_TRUE(keys.host_key && keys.controller_key);
    EXPECT_EQ(keys.host_key->key, wire::Bytes(32, 7));
    EXPECT_EQ(keys.controller_key->key.size(), 48u);
    EXPECT_EQ(c.dhchap.hashes,
              (std::vector<wire::DhchapHash>{wire::DhchapHash::sha512, wire::DhchapHash::sha256}));
    EXPECT_EQ(c.dhchap.dh_groups, std::vector<wire::DhGroup>{wire::DhGroup::ffdhe4096});

    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-key", key}).find("HOSTNQN="),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-key", "nqn.h1=DHHC-1:01:AAAA:"})
                  .find("must be 32, 48 or 64"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-ctrl-key", ctrl_arg})
                  .find("needs a --dhchap-key"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-key", host_arg, "--dhchap-key", host_arg})
                  .find("twice"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-hash", "md5"}).find("sha256, sha384"),
              std::string::npos);
    EXPECT_NE(error_of({"--subsystem", "nqn.a", "--dhchap-dhgroup", "ffdhe1024"}).find("ffdhe1024"),
              std::string::npos);
}

TEST(Config, Sizes) {
    EXPECT_EQ(parse_size("4096", "x"), 4096u);
    EXPECT_EQ(parse_size("4k", "x"), 4096u);
    EXPECT_EQ(parse_size("2G", "x"), 2ull << 30);
    EXPECT_THROW(parse_size("G", "x"), UsageError);
    EXPECT_THROW(parse_size("1Q", "x"), UsageError);
}

}  // namespace
}  // namespace nvmeof::target
