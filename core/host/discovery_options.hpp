// Checks shared by the discovery read procedure and the RDMA discovery path
// (internal), so bad options fail before any connection is made.
#pragma once

#include "nvmeof/discovery.hpp"

namespace nvmeof::detail {

// Throws ConnectError(invalid_options) naming the bad field.
void validate_discovery_options(const DiscoveryOptions& discovery);

}  // namespace nvmeof::detail
