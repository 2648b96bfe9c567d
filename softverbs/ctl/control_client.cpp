// Client side of the control API: looks up the private entry points of the
// replacement libibverbs.so.1 by name and version, so nothing links to them
// and the same binary also runs (inactive) on the real rdma-core.
#include <dlfcn.h>

#include <cerrno>

#include "softverbs/control.h"

namespace {

constexpr const char* kPrivateVersion = "SOFTVERBS_PRIVATE";

template <class Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(dlvsym(RTLD_DEFAULT, name, kPrivateVersion));
}

}  // namespace

extern "C" {

int softverbs_active(void) { return lookup<int (*)()>("softverbs_priv_active") != nullptr; }

int softverbs_fault_add(const char* rules, char* err, size_t err_len) {
  auto fn = lookup<int (*)(const char*, char*, size_t)>("softverbs_priv_fault_add");
  return fn ? fn(rules, err, err_len) : -ENOSYS;
}

int softverbs_fault_clear(void) {
  auto fn = lookup<int (*)()>("softverbs_priv_fault_clear");
  return fn ? fn() : -ENOSYS;
}

uint64_t softverbs_faults_fired(void) {
  auto fn = lookup<uint64_t (*)()>("softverbs_priv_faults_fired");
  return fn ? fn() : 0;
}

int softverbs_drop_connections(int port) {
  auto fn = lookup<int (*)(int)>("softverbs_priv_drop_connections");
  return fn ? fn(port) : -ENOSYS;
}

int softverbs_stats_dump(const char* path) {
  auto fn = lookup<int (*)(const char*)>("softverbs_priv_stats_dump");
  return fn ? fn(path) : -ENOSYS;
}

}  // extern "C"
