// Discovery: what a discovery controller lists (the discovery log page, LID 0x70).
//
//   for (const auto& r : nvmeof::discover({.target = "10.0.0.2"})) {
//       if (r.subtype == nvmeof::SubsystemType::nvm) {
//           auto ctrl = nvmeof::Controller::connect(
//               {.target = r.address, .subsystem_nqn = r.subsystem_nqn,
//                .port = static_cast<std::uint16_t>(std::stoul(r.service_id))});
//       }
//   }
//
// The host connects to the discovery controller as Linux does (admin queue only:
// Connect with the options' KATO, enable, Identify Controller; no Set Features
// Number of Queues, no I/O queues), reads the whole log, and disconnects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nvmeof/errors.hpp"
#include "nvmeof/options.hpp"
#include "nvmeof/wire/discovery.hpp"

namespace nvmeof {

// A log entry and the types of its fields an application decides on.
using DiscoveryRecord = wire::DiscoveryRecord;
using SubsystemType = wire::SubsystemType;
using TransportType = wire::TransportType;
using AddressFamily = wire::AddressFamily;

struct DiscoveryLog {
    std::uint64_t generation = 0;  // GENCTR of the log the records were read from
    std::vector<DiscoveryRecord> records;
};

struct DiscoveryOptions {
    // Bytes per Get Log Page (a multiple of 4), lowered to the controller's MDTS.
    std::uint32_t chunk_bytes = 4096;
    // Whole-log reads before a generation counter that keeps changing is an error.
    unsigned max_attempts = 10;
};

// Records beyond this are refused as a malformed log (64 MiB of records).
inline constexpr std::uint64_t kMaxDiscoveryRecords = 65536;

// Connects to the discovery controller at options.target:options.port (an empty
// subsystem_nqn means the well-known nqn.2014-08.org.nvmexpress.discovery;
// io_queues, queue_depth and io_timeout are not used), reads every record and
// disconnects. Throws ConnectError like Controller::connect (cause() and step()
// say what failed; discovery_log for a log that is malformed or kept changing,
// unsupported_controller when the NQN names an I/O controller) or InvalidArgument.
DiscoveryLog read_discovery_log(const Options& options, const DiscoveryOptions& discovery = {});

// The records alone.
std::vector<DiscoveryRecord> discover(const Options& options);

// The read procedure on its own, over any source of log bytes: `read` fills
// `out` (at most chunk_bytes, a multiple of 4) from byte `offset` of the log.
// Reads the header (GENCTR, NUMREC), then every record in chunks, then the header
// again, and starts over while GENCTR changed, at most max_attempts times.
using LogPageReader = std::function<void(std::uint64_t offset, std::span<std::byte> out)>;
DiscoveryLog read_discovery_log(const LogPageReader& read, const DiscoveryOptions& discovery = {});

}  // namespace nvmeof
