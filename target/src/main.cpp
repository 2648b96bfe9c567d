// nvmeof-target: command line, signals, and the lifetime of the core and the
// RDMA or TCP server (docs/target-cli.md).
#include <csignal>
#include <cstdio>
#include <exception>
#include <system_error>

#include "config.hpp"
#include "core.hpp"
#include "rdma_server.hpp"
#include "tcp_server.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) {
    g_stop = 1;
}

void install_signal_handlers() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: poll() returns at once with EINTR
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

int usage_error(const std::string& what) {
    std::fprintf(stderr, "nvmeof-target: %s\n", what.c_str());
    return nvmeof::target::kUsageExitCode;
}

// Either server: listen, say where, serve until a signal, then stop.
template <typename Server>
void run_server(Server& server, const nvmeof::target::TargetConfig& config) {
    // IPv6 bracketed ("[::1]:4420"), so the port stays unambiguous.
    const bool ipv6 = config.listen_address.find(':') != std::string::npos;
    for (const std::uint16_t port : server.listen()) {
        std::printf(ipv6 ? "listening on [%s]:%u\n" : "listening on %s:%u\n",
                    config.listen_address.c_str(), static_cast<unsigned>(port));
    }
    std::fflush(stdout);
    server.run(g_stop);
    std::fprintf(stderr, "nvmeof-target: stopping\n");
    server.shutdown();
}

int serve(const nvmeof::target::TargetConfig& config) {
    using namespace nvmeof::target;
    Stats stats;
    int status = 0;
    {
        std::unique_ptr<CommandCore> core;
        try {
            core = std::make_unique<CommandCore>(config, stats);
        } catch (const UsageError& e) {
            return usage_error(e.what());
        } catch (const std::system_error& e) {
            return usage_error(e.what());
        }
        try {
            if (config.transport == Transport::tcp) {
                TcpServer server(*core, config, stats);
                run_server(server, config);
            } else {
                RdmaServer server(*core, config, stats);
                run_server(server, config);
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "nvmeof-target: %s\n", e.what());
            status = 1;
        }
        core->flush_all();
    }  // the core closes (and syncs) the namespace files here
    if (!config.stats_path.empty() && !write_stats_file(stats, config.stats_path)) {
        status = 1;
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace nvmeof::target;
    std::vector<std::string_view> args(argv + 1, argv + argc);
    TargetConfig config;
    try {
        if (parse_command_line(args, config) == ParseOutcome::help) {
            std::fwrite(help_text().data(), 1, help_text().size(), stdout);
            return 0;
        }
    } catch (const UsageError& e) {
        return usage_error(e.what());
    }
    install_signal_handlers();
    return serve(config);
}
