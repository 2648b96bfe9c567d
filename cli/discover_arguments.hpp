// nvmeof-discover's command line, as nvme-cli's `nvme discover` spells it:
// parsed into the library's Options, apart from main() so it is unit-tested.
#pragma once

#include <stdexcept>
#include <string>

#include "nvmeof/options.hpp"

namespace nvmeof::cli {

enum class OutputFormat { normal, json };

struct DiscoverArguments {
    Options options;  // the port defaulted for the transport when -s is not given
    OutputFormat format = OutputFormat::normal;
    bool help = false;  // -h: print kDiscoverUsage, nothing else
};

// A bad command line: what() is one line naming the problem (exit status 2).
class UsageError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The --help text.
extern const char kDiscoverUsage[];

// Reads argv[1..argc) with getopt_long (from the start, whatever it read
// before). -t rdma or tcp (any case); without -s the port is the transport's
// discovery port, as nvme-cli defaults it: 4420 over RDMA, 8009 over TCP.
// Throws UsageError.
DiscoverArguments parse_discover_arguments(int argc, char** argv);

}  // namespace nvmeof::cli
