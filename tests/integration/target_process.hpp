// Finds the peer for integration tests: an external target named by
// NVMEOF_TEST_TARGET=addr:port (NVMe/RDMA), NVMEOF_TEST_TCP_TARGET=addr:port
// (its NVMe/TCP port, for tests that ask for "--transport tcp") and
// NVMEOF_TEST_NQN, or an nvmeof-target
// (NVMEOF_TARGET_BIN) started on a free port, with extra arguments for limits
// and faults, and its --stats JSON read back after it stops.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nvmeof/controller.hpp"

namespace nvmeof::test {

inline constexpr char kTestNqn[] = "nqn.2026-01.io.nvmeof:test";

// Fills a region with a pattern that differs per seed and per 4-byte word, so
// a misplaced or stale block reads back different.
inline void fill(const MemoryRegion& m, std::uint32_t seed) {
    auto* p = reinterpret_cast<std::uint32_t*>(m.data());
    for (std::size_t i = 0; i < m.size() / 4; ++i) {
        p[i] = seed * 2654435761u + static_cast<std::uint32_t>(i);
    }
}

class TargetProcess {
  public:
    // Starts a target (or picks up the external one). `extra` are more
    // command-line arguments (e.g. {"--mdts", "1"}). `port` 0: any free one;
    // another: that one (a target restarted where the host reconnects).
    explicit TargetProcess(std::vector<std::string> extra = {}, std::string ns = "ram:64M",
                           std::uint16_t port = 0);
    ~TargetProcess();
    TargetProcess(const TargetProcess&) = delete;
    TargetProcess& operator=(const TargetProcess&) = delete;

    static bool external();
    // False when the external target has no NVMe/TCP port named: a test
    // that asks for "--transport tcp" skips.
    static bool serves_tcp();
    // True when faults/limits can be injected (our own target).
    static bool can_configure() { return !external(); }

    const std::string& address() const { return address_; }
    std::uint16_t port() const { return port_; }
    // Every --port's real port, in order (port() is the first).
    const std::vector<std::uint16_t>& ports() const { return ports_; }
    const std::string& nqn() const { return nqn_; }
    // The target's process id; -1 when external or stopped.
    pid_t pid() const { return pid_; }
    Options options(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

    // Stops the target (SIGTERM) and returns its stats JSON ("" when external).
    std::string stop();
    // A number from the stats JSON: key path like "max_inflight.io".
    static std::optional<std::uint64_t> stat(const std::string& json, const std::string& path);

  private:
    pid_t pid_ = -1;
    std::string address_;
    std::uint16_t port_ = 0;
    std::vector<std::uint16_t> ports_;
    std::string nqn_;
    std::string stats_path_;
};

}  // namespace nvmeof::test
