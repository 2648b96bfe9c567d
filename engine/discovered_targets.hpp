// What a discovery spec turns into: one target per NVM subsystem that the
// discovery service lists over the job's transport. Pure logic over the records the core read, so
// it is unit-tested on its own; the engine reads the log (in a child process for process jobs) and
// adds one fio file per target.
#pragma once

#include <string>
#include <vector>

#include "nvmeof/discovery.hpp"
#include "target_spec.hpp"

namespace nvmeof::engine {

struct DiscoveredTargets {
    std::vector<TargetSpec> targets;  // in log order, one per subsystem
    std::string skipped;              // "" or "record 2 (NQN): why; record 3 ..."
};

// Every record of subtype NVM subsystem whose trtype is the discovery spec's
// (RDMA, or TCP for a job with trtype=tcp) becomes a target with the record's
// address, port and NQN and the discovery spec's transport, nsid, host
// identity and source. A wildcard or empty address means the discovery
// service's own. Referrals, discovery subsystems, other transports and later
// paths to a subsystem already taken are skipped (two files on one namespace
// would defeat fio's per-file verify), each with its reason. Throws SpecError
// naming the discovery service when no record is usable.
DiscoveredTargets targets_from_discovery(const TargetSpec& discovery,
                                         const std::vector<DiscoveryRecord>& records);

// "127.0.0.1:4420" or "[::1]:4420": the discovery service, for messages.
std::string service_name(const TargetSpec& spec);

// The result as text and back, to cross from the probe process to fio's
// parent: the skipped line, then one canonical filename per target.
std::string encode(const DiscoveredTargets& discovered);
DiscoveredTargets decode_discovered(const std::string& text);

}  // namespace nvmeof::engine
