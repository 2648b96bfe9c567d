// nvmeof-discover: reads a discovery controller's log over RDMA and prints it
// as `nvme discover` does.
#include <getopt.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "discovery_format.hpp"
#include "nvmeof/discovery.hpp"

namespace {

constexpr char kProgram[] = "nvmeof-discover";
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] = R"(Usage: nvmeof-discover -a TRADDR [OPTIONS]

Connects to the NVMe-oF discovery controller at TRADDR over RDMA (admin queue
only), reads every record of its discovery log (Get Log Page 0x70) and prints
them as `nvme discover` does.

  -t, --transport=rdma        transport (only rdma)
  -a, --traddr=ADDR           discovery controller address (required)
  -s, --trsvcid=PORT          RDMA-CM port (default 4420)
  -w, --host-traddr=ADDR      local source address (picks the RDMA device)
  -n, --nqn=NQN               discovery subsystem NQN
                              (default nqn.2014-08.org.nvmexpress.discovery)
  -q, --hostnqn=NQN           host NQN (default /etc/nvme/hostnqn, else derived)
  -I, --hostid=UUID           host ID (default /etc/nvme/hostid, else derived)
      --timeout-ms=MS         deadline of each connect step and command (default 30000)
  -o, --output-format=FMT     normal (default) or json
  -h, --help                  this text

Exit status: 0 when the log was read, 1 when discovery failed, 2 for bad usage.
)";

[[noreturn]] void usage_error(const std::string& what) {
    std::cerr << kProgram << ": " << what << " (see --help)\n";
    std::exit(kExitUsage);
}

// A whole decimal number in [min, max], or nullopt.
std::optional<unsigned long> parse_number(const char* text, unsigned long min, unsigned long max) {
    if (text == nullptr || *text == '\0' || *text == '-' || *text == '+') {
        return std::nullopt;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long value = std::strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < min || value > max) {
        return std::nullopt;
    }
    return value;
}

enum class OutputFormat { normal, json };

struct Arguments {
    nvmeof::Options options;
    OutputFormat format = OutputFormat::normal;
};

Arguments parse_arguments(int argc, char** argv) {
    enum : int { kTimeoutOption = 256 };
    static const option kLongOptions[] = {
        {"transport", required_argument, nullptr, 't'},
        {"traddr", required_argument, nullptr, 'a'},
        {"trsvcid", required_argument, nullptr, 's'},
        {"host-traddr", required_argument, nullptr, 'w'},
        {"nqn", required_argument, nullptr, 'n'},
        {"hostnqn", required_argument, nullptr, 'q'},
        {"hostid", required_argument, nullptr, 'I'},
        {"timeout-ms", required_argument, nullptr, kTimeoutOption},
        {"output-format", required_argument, nullptr, 'o'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    Arguments args;
    opterr = 0;
    for (;;) {
        const int c = getopt_long(argc, argv, ":t:a:s:w:n:q:I:o:h", kLongOptions, nullptr);
        if (c == -1) {
            break;
        }
        switch (c) {
            case 't':
                if (std::string(optarg) != "rdma") {
                    usage_error("transport '" + std::string(optarg) +
                                "' is not supported (only rdma)");
                }
                break;
            case 'a':
                args.options.target = optarg;
                break;
            case 's': {
                const auto port = parse_number(optarg, 1, 65535);
                if (!port) {
                    usage_error("trsvcid '" + std::string(optarg) +
                                "' is not a port number (1-65535)");
                }
                args.options.port = static_cast<std::uint16_t>(*port);
                break;
            }
            case 'w':
                args.options.source = optarg;
                break;
            case 'n':
                args.options.subsystem_nqn = optarg;
                break;
            case 'q':
                args.options.host_nqn = optarg;
                break;
            case 'I':
                args.options.host_id = optarg;
                break;
            case kTimeoutOption: {
                const auto ms = parse_number(optarg, 1, 86'400'000);
                if (!ms) {
                    usage_error("timeout-ms '" + std::string(optarg) +
                                "' is not a number of milliseconds (1-86400000)");
                }
                args.options.timeout = std::chrono::milliseconds(*ms);
                break;
            }
            case 'o': {
                const std::string format = optarg;
                if (format == "normal") {
                    args.format = OutputFormat::normal;
                } else if (format == "json") {
                    args.format = OutputFormat::json;
                } else {
                    usage_error("output format '" + format + "' is not normal or json");
                }
                break;
            }
            case 'h':
                std::cout << kUsage;
                std::exit(0);
            case ':':
                usage_error(std::string("option ") + argv[optind - 1] + " needs a value");
            default:
                usage_error(std::string("unknown option ") + argv[optind - 1]);
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    if (args.options.target.empty()) {
        usage_error("--traddr is required");
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments args = parse_arguments(argc, argv);
    try {
        const nvmeof::DiscoveryLog log = nvmeof::read_discovery_log(args.options);
        std::cout << (args.format == OutputFormat::json
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
