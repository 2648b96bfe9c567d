// Plain-language causes for the failures rdma-core reports only by errno or
// by a bare number: no RDMA-CM at all, an RDMA-CM reject reason, and a memory
// registration that did or did not run into RLIMIT_MEMLOCK. Pure functions (no
// verbs calls), so they are unit-tested on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nvmeof::verbs {

// Why creating an RDMA-CM event channel or ID failed, with what to check; the
// errno text alone ("No such device") names no device and no remedy.
std::string cm_unavailable_text(int error);

// The IB CM reject reason carried in a REJECTED event's status (IBTA table
// "REJ reason"; iWARP and RoCE use the same codes through rdma_cm).
std::string_view cm_reject_reason_name(int status);

// What the kernel counts against RLIMIT_MEMLOCK for this process (VmLck +
// VmPin of /proc/self/status), in bytes; nullopt when it cannot be read.
std::optional<std::uint64_t> locked_and_pinned_bytes();

struct MemlockState {
    std::uint64_t limit = 0;              // RLIMIT_MEMLOCK soft limit (bytes)
    bool unlimited = false;               // RLIM_INFINITY
    std::optional<std::uint64_t> in_use;  // already locked or pinned (bytes)
};

// The text after "ibv_reg_mr of N bytes": blames RLIMIT_MEMLOCK only when the
// registration would really go beyond it (or usage is unknown); otherwise says
// the limit is not the cause. Empty for errors no limit can cause.
std::string memlock_explanation(int error, std::size_t length, const MemlockState& state);

}  // namespace nvmeof::verbs
