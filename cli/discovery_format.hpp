// The discovery log as `nvme discover` prints it (nvme-cli's field names,
// layout and value names), in its normal and JSON output formats.
#pragma once

#include <string>

#include "nvmeof/discovery.hpp"

namespace nvmeof::cli {

// "\nDiscovery Log Number of Records N, Generation counter G\n" then one
// "=====Discovery Log Entry i======" block per record.
std::string format_discovery_log(const DiscoveryLog& log);
// {"genctr": G, "records": [{"trtype": "rdma", ...}]}
std::string format_discovery_log_json(const DiscoveryLog& log);

}  // namespace nvmeof::cli
