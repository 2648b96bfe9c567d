// nvmeof-discover's command line: nvme-cli's options, the transport and the
// port it defaults, and one line for each mistake.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "../../cli/discover_arguments.hpp"

namespace cli = nvmeof::cli;
using nvmeof::Transport;

namespace {

cli::DiscoverArguments parse(const std::vector<const char*>& words) {
    std::vector<std::string> text{"nvmeof-discover"};
    text.insert(text.end(), words.begin(), words.end());
    std::vector<char*> argv;
    for (std::string& word : text) {
        argv.push_back(word.data());
    }
    argv.push_back(nullptr);
    return cli::parse_discover_arguments(static_cast<int>(text.size()), argv.data());
}

// The UsageError's line, or "" when the command line is accepted.
std::string refusal(const std::vector<const char*>& words) {
    try {
        parse(words);
    } catch (const cli::UsageError& error) {
        return error.what();
    }
    return "";
}

}  // namespace

TEST(DiscoverArguments, RdmaByDefaultOnPort4420) {
    const auto args = parse({"-a", "10.0.0.2"});
    EXPECT_EQ(args.options.transport, Transport::rdma);
    EXPECT_EQ(args.options.target, "10.0.0.2");
    EXPECT_EQ(args.options.port, 4420);
    EXPECT_FALSE(args.options.header_digest || args.options.data_digest);
    EXPECT_EQ(parse({"-t", "rdma", "-a", "10.0.0.2"}).options.port, 4420);
}

TEST(DiscoverArguments, TcpDiscoveryDefaultsToPort8009AsNvmeCli) {
    for (const char* name : {"tcp", "TCP"}) {
        const auto args = parse({"-t", name, "-a", "10.0.0.2"});
        EXPECT_EQ(args.options.transport, Transport::tcp) << name;
        EXPECT_EQ(args.options.port, 8009) << name;
    }
    EXPECT_EQ(parse({"--transport=tcp", "--traddr=10.0.0.2"}).options.port, 8009);
    // A port given wins, before or after -t.
    EXPECT_EQ(parse({"-t", "tcp", "-a", "10.0.0.2", "-s", "4420"}).options.port, 4420);
    EXPECT_EQ(parse({"-s", "4430", "-t", "tcp", "-a", "10.0.0.2"}).options.port, 4430);
}

TEST(DiscoverArguments, EveryOptionAsNvmeCliSpellsIt) {
    const auto args = parse({"-t", "tcp", "-a", "fe80::2", "-s", "4421", "-w", "10.0.0.1", "-n",
                             "nqn.2026-12.io.nvmeof:disc", "-q", "nqn.2026-12.io.nvmeof:host", "-I",
                             "9b1c4e4a-6f39-4b8e-9d5e-3c8a7f2b1d00", "-g", "-G",
                             "--timeout-ms=5000", "-o", "json"});
    EXPECT_EQ(args.options.transport, Transport::tcp);
    EXPECT_EQ(args.options.target, "fe80::2");
    EXPECT_EQ(args.options.port, 4421);
    EXPECT_EQ(args.options.source, "10.0.0.1");
    EXPECT_EQ(args.options.subsystem_nqn, "nqn.2026-12.io.nvmeof:disc");
    EXPECT_EQ(args.options.host_nqn, "nqn.2026-12.io.nvmeof:host");
    EXPECT_EQ(args.options.host_id, "9b1c4e4a-6f39-4b8e-9d5e-3c8a7f2b1d00");
    EXPECT_TRUE(args.options.header_digest);
    EXPECT_TRUE(args.options.data_digest);
    EXPECT_EQ(args.options.timeout.count(), 5000);
    EXPECT_EQ(args.format, cli::OutputFormat::json);
    const auto digests = parse({"-a", "10.0.0.2", "--hdr-digest", "--data-digest"});
    EXPECT_TRUE(digests.options.header_digest && digests.options.data_digest);
}

TEST(DiscoverArguments, HelpNeedsNothingElse) {
    EXPECT_TRUE(parse({"-h"}).help);
    EXPECT_TRUE(parse({"--help"}).help);
    EXPECT_NE(std::string(cli::kDiscoverUsage).find("--transport=TRTYPE"), std::string::npos);
}

TEST(DiscoverArguments, EachMistakeIsOneLine) {
    const std::pair<std::vector<const char*>, std::string> cases[] = {
        {{"-s", "4420"}, "--traddr is required"},
        {{"-t", "fc", "-a", "10.0.0.2"}, "transport 'fc' is not supported (rdma or tcp)"},
        {{"-t", "loop", "-a", "10.0.0.2"}, "transport 'loop' is not supported (rdma or tcp)"},
        {{"-a", "10.0.0.2", "-s", "70000"}, "trsvcid '70000' is not a port number (1-65535)"},
        {{"-a", "10.0.0.2", "-s", "0"}, "trsvcid '0' is not a port number (1-65535)"},
        {{"-a", "10.0.0.2", "-o", "xml"}, "output format 'xml' is not normal or json"},
        {{"-a", "10.0.0.2", "--timeout-ms", "0"},
         "timeout-ms '0' is not a number of milliseconds (1-86400000)"},
        {{"-a", "10.0.0.2", "-t"}, "option -t needs a value"},
        {{"-a", "10.0.0.2", "-x"}, "unknown option -x"},
        {{"-a", "10.0.0.2", "extra"}, "unexpected argument 'extra'"},
    };
    for (const auto& [words, expected] : cases) {
        EXPECT_EQ(refusal(words), expected);
    }
}
