// In-capsule write data: how many bytes of a write command may travel inside
// its command capsule (the SEND, as a second SGE on the caller's registered
// buffer) instead of being fetched by the target with an RDMA READ. A small
// write then costs one message each way instead of a round trip more.
// Pure logic on Identify Controller and the device limits; unit-tested alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "nvmeof/wire/common.hpp"
#include "nvmeof/wire/identify.hpp"

namespace nvmeof::detail {

// A SEND with in-capsule data gathers the SQE and the caller's data.
inline constexpr int kInCapsuleSendSges = 2;

struct InCapsuleInputs {
    bool enabled = true;       // Options::in_capsule_writes
    std::uint32_t ioccsz = 0;  // Identify IOCCSZ: I/O command capsule size, 16-byte units
    std::uint32_t sgls = 0;    // Identify SGLS: bit 20 allows the offset (in-capsule) descriptor
    std::uint16_t icdoff = 0;  // Identify ICDOFF: where the data starts after the SQE
    int device_max_sge = 0;    // the transport's gather limit (RDMA: ibv_device_attr::max_sge)
};

// Bytes of write data one I/O command may carry in its capsule; 0: none (every
// write keyed). Only for I/O queues: nvmet's admin queue receives 64 bytes.
// ICDOFF ≠ 0 turns it off rather than padding the capsule (no known target
// uses it, and the controller setup refuses such a controller anyway, as Linux does).
constexpr std::uint32_t in_capsule_write_limit(const InCapsuleInputs& in) {
    if (!in.enabled || (in.sgls & wire::kSglsOffsetAddress) == 0 || in.icdoff != 0 ||
        in.device_max_sge < kInCapsuleSendSges) {
        return 0;
    }
    const std::uint64_t capsule = std::uint64_t{in.ioccsz} * wire::kCapsuleUnit;
    if (capsule <= wire::kSqeSize) {
        return 0;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(
        capsule - wire::kSqeSize, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace nvmeof::detail
