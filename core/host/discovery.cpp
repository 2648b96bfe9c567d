// Discovery over RDMA: a discovery controller (admin queue only) and Get Log
// Page 0x70 into one registered chunk.
#include <cstring>
#include <thread>

#include "host/discovery_options.hpp"
#include "nvmeof/controller.hpp"
#include "nvmeof/discovery.hpp"
#include "nvmeof/wire/admin.hpp"

namespace nvmeof {
namespace {

std::uint32_t chunk_for(const DiscoveryOptions& discovery, const Limits& limits) {
    std::uint64_t chunk = discovery.chunk_bytes;
    if (limits.max_transfer_bytes != 0 && limits.max_transfer_bytes < chunk) {
        chunk = limits.max_transfer_bytes / wire::kDwordSize * wire::kDwordSize;
    }
    return static_cast<std::uint32_t>(chunk);
}

// One Get Log Page into `memory`, copied out; failures as ConnectError.
void read_log_chunk(IoQueue admin, const MemoryRegion& memory, std::uint64_t offset,
                    std::span<std::byte> out) {
    const std::string step = "Get Log Page (discovery log, offset " + std::to_string(offset) +
                             ", " + std::to_string(out.size()) + " bytes)";
    const wire::Sqe command = wire::get_log_page_command(
        wire::LogPageId::discovery, offset, wire::keyed_data_block(memory.remote(0, out.size())));
    try {
        Request request = admin.submit(command, &memory);
        while (!request.done()) {
            admin.make_progress();
            if (!request.done()) {
                std::this_thread::yield();
            }
        }
        const Response& response = request.response();
        if (response.status.transport != TransportErrc::none) {
            raise_for_status(response.status);
        }
        if (!response.status.ok()) {
            ConnectError::Details d;
            d.status = response.status.nvme;
            d.result = response.cqe.dw0;
            throw ConnectError(ConnectFailure::command_failed, step, describe(response.status), d);
        }
    } catch (const TransportError& e) {
        ConnectError::Details d;
        d.sys_errno = e.sys_errno();
        throw ConnectError(e.code() == TransportErrc::timeout ? ConnectFailure::timeout
                                                              : ConnectFailure::device_error,
                           step, e.what(), d);
    }
    std::memcpy(out.data(), memory.data(), out.size());
}

}  // namespace

DiscoveryLog read_discovery_log(const Options& options, const DiscoveryOptions& discovery) {
    detail::validate_discovery_options(discovery);
    Options discovery_options = options;
    if (discovery_options.subsystem_nqn.empty()) {
        discovery_options.subsystem_nqn = wire::kDiscoveryNqn;
    }
    Controller controller = Controller::connect(discovery_options);
    if (!controller.limits().discovery) {
        throw ConnectError(
            ConnectFailure::unsupported_controller, "Identify Controller",
            discovery_options.subsystem_nqn + " is an I/O controller, not a discovery controller");
    }
    const std::uint32_t chunk = chunk_for(discovery, controller.limits());
    const MemoryRegion memory = controller.allocate(chunk);
    DiscoveryOptions bounded = discovery;
    bounded.chunk_bytes = chunk;
    DiscoveryLog log = read_discovery_log(
        [&](std::uint64_t offset, std::span<std::byte> out) {
            read_log_chunk(controller.admin(), memory, offset, out);
        },
        bounded);
    controller.close();
    return log;
}

std::vector<DiscoveryRecord> discover(const Options& options) {
    return read_discovery_log(options).records;
}

}  // namespace nvmeof
