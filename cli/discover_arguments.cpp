#include "discover_arguments.hpp"

#include <getopt.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>

namespace nvmeof::cli {

const char kDiscoverUsage[] = R"(Usage: nvmeof-discover -a TRADDR [OPTIONS]

Connects to the NVMe-oF discovery controller at TRADDR over RDMA or TCP
(admin queue only), reads every record of its discovery log (Get Log Page
0x70) and prints them as `nvme discover` does.

  -t, --transport=TRTYPE      rdma (default) or tcp
  -a, --traddr=ADDR           discovery controller address (required)
  -s, --trsvcid=PORT          port (default 4420 over rdma, 8009 over tcp)
  -w, --host-traddr=ADDR      local source address (over rdma it picks the
                              RDMA device; over tcp it binds the socket)
  -n, --nqn=NQN               discovery subsystem NQN
                              (default nqn.2014-08.org.nvmexpress.discovery)
  -q, --hostnqn=NQN           host NQN (default /etc/nvme/hostnqn, else derived)
  -I, --hostid=UUID           host ID (default /etc/nvme/hostid, else derived)
  -g, --hdr-digest            NVMe/TCP header digest (no effect over rdma)
  -G, --data-digest           NVMe/TCP data digest (no effect over rdma)
      --timeout-ms=MS         deadline of each connect step and command (default 30000)
  -o, --output-format=FMT     normal (default) or json
  -h, --help                  this text

Exit status: 0 when the log was read, 1 when discovery failed, 2 for bad usage.
)";

namespace {

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

}  // namespace

DiscoverArguments parse_discover_arguments(int argc, char** argv) {
    enum : int { kTimeoutOption = 256 };
    static const option kLongOptions[] = {
        {"transport", required_argument, nullptr, 't'},
        {"traddr", required_argument, nullptr, 'a'},
        {"trsvcid", required_argument, nullptr, 's'},
        {"host-traddr", required_argument, nullptr, 'w'},
        {"nqn", required_argument, nullptr, 'n'},
        {"hostnqn", required_argument, nullptr, 'q'},
        {"hostid", required_argument, nullptr, 'I'},
        {"hdr-digest", no_argument, nullptr, 'g'},
        {"data-digest", no_argument, nullptr, 'G'},
        {"timeout-ms", required_argument, nullptr, kTimeoutOption},
        {"output-format", required_argument, nullptr, 'o'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    DiscoverArguments args;
    bool port_given = false;
    opterr = 0;
    optind = 0;  // glibc: start over, as for a new argv
    for (;;) {
        const int c = getopt_long(argc, argv, ":t:a:s:w:n:q:I:gGo:h", kLongOptions, nullptr);
        if (c == -1) {
            break;
        }
        switch (c) {
            case 't': {
                const std::optional<Transport> transport = parse_transport(optarg);
                if (!transport) {
                    throw UsageError("transport '" + std::string(optarg) +
                                     "' is not supported (rdma or tcp)");
                }
                args.options.transport = *transport;
                break;
            }
            case 'a':
                args.options.target = optarg;
                break;
            case 's': {
                const auto port = parse_number(optarg, 1, 65535);
                if (!port) {
                    throw UsageError("trsvcid '" + std::string(optarg) +
                                     "' is not a port number (1-65535)");
                }
                args.options.port = static_cast<std::uint16_t>(*port);
                port_given = true;
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
            case 'g':
                args.options.header_digest = true;
                break;
            case 'G':
                args.options.data_digest = true;
                break;
            case kTimeoutOption: {
                const auto ms = parse_number(optarg, 1, 86'400'000);
                if (!ms) {
                    throw UsageError("timeout-ms '" + std::string(optarg) +
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
                    throw UsageError("output format '" + format + "' is not normal or json");
                }
                break;
            }
            case 'h':
                args.help = true;
                return args;
            case ':':
                throw UsageError(std::string("option ") + argv[optind - 1] + " needs a value");
            default:
                throw UsageError(std::string("unknown option ") + argv[optind - 1]);
        }
    }
    if (optind < argc) {
        throw UsageError(std::string("unexpected argument '") + argv[optind] + "'");
    }
    if (args.options.target.empty()) {
        throw UsageError("--traddr is required");
    }
    if (!port_given) {
        args.options.port = default_discovery_port(args.options.transport);
    }
    return args;
}

}  // namespace nvmeof::cli
