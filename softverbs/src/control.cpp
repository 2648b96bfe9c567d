// Private control entry points (SOFTVERBS_PRIVATE) behind softverbs/control.h,
// plus the trap every unimplemented rdma-core export calls.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core.h"

using namespace sv;

extern "C" {

[[noreturn]] void softverbs_trap(const char* fn) {
  std::fprintf(stderr, "softverbs: %s is not implemented\n", fn);
  std::fflush(stderr);
  std::abort();
}

int softverbs_priv_active(void) { return 1; }

int softverbs_priv_fault_add(const char* rules, char* err, size_t err_len) {
  std::lock_guard lk(core().mu);
  std::string msg;
  if (!rules || !core().faults.add(rules, &msg)) {
    if (err && err_len) std::snprintf(err, err_len, "%s", rules ? msg.c_str() : "null rules");
    return -EINVAL;
  }
  return 0;
}

int softverbs_priv_fault_clear(void) {
  std::lock_guard lk(core().mu);
  core().faults.clear();
  return 0;
}

uint64_t softverbs_priv_faults_fired(void) {
  std::lock_guard lk(core().mu);
  return core().faults.fired_total();
}

int softverbs_priv_drop_connections(int port) {
  std::lock_guard lk(core().mu);
  return drop_connections_locked(port);
}

int softverbs_priv_stats_dump(const char* path) {
  std::lock_guard lk(core().mu);
  if (!path) return -EINVAL;
  return core().stats.dump(path, core().faults.fired_total()) ? 0 : -errno;
}

}  // extern "C"
