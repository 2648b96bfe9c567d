// The softverbs wire format: one TCP stream per RC QP, CM messages in-band.
// Every message is a 32-byte little-endian header followed by `len` payload bytes.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

#include "constants.h"

namespace sv {

static_assert(std::endian::native == std::endian::little, "wire structs are sent as host bytes");

enum class Op : uint8_t {
  kCmReq = 1,  // payload CmPayload: active side's private data and depths
  kCmRep,      // payload CmPayload: passive side accepted
  kCmRtu,      // active side saw the REP; passive side becomes ESTABLISHED
  kCmRej,      // payload CmPayload, imm = reject reason
  kCmDreq,     // orderly disconnect; travels behind all earlier data
  kSend,
  kSendInv,  // imm = rkey to report as invalidated
  kSendImm,  // imm = immediate data
  kWrite,
  kWriteImm,  // consumes a receive like a SEND, payload goes to raddr
  kReadReq,   // rd_len bytes from raddr/rkey; no payload
  kReadResp,  // payload = data for READ msn
  kAck,       // all requests with msn <= hdr.msn were placed
  kNak,       // request msn failed with ibv_wc_status hdr.status
};

struct WireHdr {
  uint8_t op;
  uint8_t status;
  uint16_t flags;
  uint32_t len;  // payload bytes following the header
  uint32_t msn;  // per-connection request sequence number
  uint32_t rkey;
  uint64_t raddr;
  uint32_t imm;     // immediate data, invalidated rkey or reject reason
  uint32_t rd_len;  // READ length
};
static_assert(sizeof(WireHdr) == 32);
static_assert(offsetof(WireHdr, raddr) == 16);

// CM payload: the largest private data any CM message may carry is the accept's.
struct CmPayload {
  uint8_t initiator_depth;
  uint8_t responder_resources;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint32_t qp_num;
  uint32_t private_len;
  uint32_t reserved;
  uint8_t private_data[kAcceptPrivateMax];
};
static_assert(sizeof(CmPayload) == 16 + kAcceptPrivateMax);

inline bool is_request(Op op) {
  return op == Op::kSend || op == Op::kSendInv || op == Op::kSendImm || op == Op::kWrite || op == Op::kWriteImm ||
         op == Op::kReadReq;
}
inline bool is_cm(Op op) { return op >= Op::kCmReq && op <= Op::kCmDreq; }

}  // namespace sv
