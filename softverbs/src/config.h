// Process-wide configuration from SOFTVERBS_* environment variables, and the
// single loopback-only address policy every address passes through.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sv {

struct DeviceSpec {
  std::string name;
  in_addr_t ip;  // network byte order, always inside 127.0.0.0/8
};

struct Config {
  std::vector<DeviceSpec> devices;  // SOFTVERBS_DEVICES="softrdma0=127.0.0.1,..."
  int port_offset = 0;              // SOFTVERBS_PORT_OFFSET: TCP port = RDMA port + offset
  int cm_timeout_ms;                // SOFTVERBS_CM_TIMEOUT_MS
  bool exact_private_data = false;  // SOFTVERBS_EXACT_PDATA=1: no zero padding
  bool strict_rnr = false;          // SOFTVERBS_STRICT_RNR=1: missing RECV fails at once
  bool strict_cq = false;           // SOFTVERBS_STRICT_CQ=1: CQ overrun aborts
  bool debug = false;               // SOFTVERBS_DEBUG=1: log CM and errors to stderr
  std::string stats_path;           // SOFTVERBS_STATS (%p = pid)
  std::string faults;               // SOFTVERBS_FAULTS
  std::string control_path;         // SOFTVERBS_CTL (%p = pid): runtime control socket
};

// Parses the environment once; a bad value is a configuration error and aborts.
Config load_config();

// The one loopback policy: true for addresses in 127.0.0.0/8 (network order).
bool is_allowed_ip(in_addr_t ip);
// Same for a sockaddr: AF_INET in 127.0.0.0/8, or AF_INET6 ::1, which the
// device owning 127.0.0.1 (else the first) also serves.
bool is_allowed_addr(const struct sockaddr* sa);

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void debug_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace sv
