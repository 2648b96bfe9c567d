// The wire between the cross-process tests (and the benchmark) and their peer
// process: 64-byte command capsules, like NVMe-oF's, sent with SEND.
#pragma once
#include <cstdint>

namespace svt {

enum class PeerOp : uint32_t {
  kVerify = 1,     // check [offset, offset+len) of the peer buffer against seed
  kWriteBack = 2,  // RDMA_WRITE pattern(seed) to raddr/rkey, then SEND the reply
  kReadFrom = 3,   // RDMA_READ raddr/rkey into the peer buffer, verify against seed
  kQuit = 4,
};

struct Capsule {
  uint32_t op;
  uint32_t len;
  uint64_t raddr;
  uint32_t rkey;
  uint32_t seed;
  uint64_t offset;
  uint32_t status;  // reply: 0 = ok
  uint8_t pad[28];
};
static_assert(sizeof(Capsule) == 64);

// Accept private data: where the peer's buffer lives.
struct PeerInfo {
  uint64_t addr;
  uint32_t rkey;
  uint32_t len;
  uint8_t pad[16];
};
static_assert(sizeof(PeerInfo) == 32);

inline uint8_t pattern(uint32_t seed, uint64_t i) { return static_cast<uint8_t>(seed + i * 13u); }

}  // namespace svt
