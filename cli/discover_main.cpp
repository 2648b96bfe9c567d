// nvmeof-discover: reads a discovery controller's log over RDMA or TCP and
// prints it as `nvme discover` does.
#include <exception>
#include <iostream>
#include <string>

#include "discover_arguments.hpp"
#include "discovery_format.hpp"
#include "nvmeof/discovery.hpp"

namespace {

constexpr char kProgram[] = "nvmeof-discover";
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
    nvmeof::cli::DiscoverArguments args;
    try {
        args = nvmeof::cli::parse_discover_arguments(argc, argv);
    } catch (const nvmeof::cli::UsageError& e) {
        std::cerr << kProgram << ": " << e.what() << " (see --help)\n";
        return kExitUsage;
    }
    if (args.help) {
        std::cout << nvmeof::cli::kDiscoverUsage;
        return 0;
    }
    try {
        const nvmeof::DiscoveryLog log = nvmeof::read_discovery_log(args.options);
        std::cout << (args.format == nvmeof::cli::OutputFormat::json
                          ? nvmeof::cli::format_discovery_log_json(log)
                          : nvmeof::cli::format_discovery_log(log));
        std::cout.flush();
        return std::cout ? 0 : kExitFailure;
    } catch (const std::exception& e) {
        std::cerr << kProgram << ": " << args.options.target << ":" << args.options.port << ": "
                  << e.what() << "\n";
        return kExitFailure;
    }
}
