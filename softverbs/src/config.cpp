#include "config.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "constants.h"
#include "sockaddr.h"

namespace sv {
namespace {

constexpr in_addr_t kLoopbackNet = 0x7f000000;   // 127.0.0.0, host order
constexpr in_addr_t kLoopbackMask = 0xff000000;  // /8
constexpr std::size_t kDeviceNameMax = 64;       // IBV_SYSFS_NAME_MAX
constexpr const char* kDefaultDevices = "softrdma0=127.0.0.1";

bool g_debug = false;

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 65535 * 16) fatal("bad %s=%s", name, v);
  return static_cast<int>(x);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

std::vector<DeviceSpec> parse_devices(const std::string& s) {
  std::vector<DeviceSpec> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) fatal("SOFTVERBS_DEVICES: expected name=ip, got '%s'", item.c_str());
    DeviceSpec d;
    d.name = item.substr(0, eq);
    in_addr a{};
    if (d.name.size() >= kDeviceNameMax || inet_pton(AF_INET, item.c_str() + eq + 1, &a) != 1)
      fatal("SOFTVERBS_DEVICES: bad entry '%s'", item.c_str());
    if (!is_allowed_ip(a.s_addr)) fatal("SOFTVERBS_DEVICES: %s is outside 127.0.0.0/8", item.c_str() + eq + 1);
    d.ip = a.s_addr;
    out.push_back(d);
  }
  if (out.empty()) fatal("SOFTVERBS_DEVICES: no devices");
  return out;
}

}  // namespace

bool is_allowed_ip(in_addr_t ip) { return (ntohl(ip) & kLoopbackMask) == kLoopbackNet; }

bool is_allowed_addr(const sockaddr* sa) {
  if (!sa) return false;
  if (sa->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (sa->sa_family != AF_INET) return false;
  in_addr_t ip = reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr;
  return is_allowed_ip(ip);
}

Config load_config() {
  Config c;
  const char* dev = std::getenv("SOFTVERBS_DEVICES");
  c.devices = parse_devices(dev && *dev ? dev : kDefaultDevices);
  c.port_offset = env_int("SOFTVERBS_PORT_OFFSET", 0);
  c.cm_timeout_ms = env_int("SOFTVERBS_CM_TIMEOUT_MS", kDefaultCmTimeoutMs);
  c.exact_private_data = env_flag("SOFTVERBS_EXACT_PDATA");
  c.strict_rnr = env_flag("SOFTVERBS_STRICT_RNR");
  c.strict_cq = env_flag("SOFTVERBS_STRICT_CQ");
  c.debug = env_flag("SOFTVERBS_DEBUG");
  g_debug = c.debug;
  if (const char* s = std::getenv("SOFTVERBS_STATS")) c.stats_path = s;
  if (const char* f = std::getenv("SOFTVERBS_FAULTS")) c.faults = f;
  if (const char* p = std::getenv("SOFTVERBS_CTL")) c.control_path = p;
  return c;
}

void fatal(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("softverbs: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::abort();
}

void debug_log(const char* fmt, ...) {
  if (!g_debug) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "softverbs[%d]: ", static_cast<int>(getpid()));
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

}  // namespace sv
