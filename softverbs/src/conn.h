// One TCP connection carrying one RC QP (and its CM exchange), owned by the engine.
#pragma once
#include <netinet/in.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "fd.h"
#include "objects.h"
#include "ring.h"
#include "wire.h"

namespace sv {

struct Qp;
struct Id;
struct Device;

enum class ConnState {
  kConnecting,   // active: TCP connect in progress, CM_REQ queued
  kAwaitRep,     // active: REQ sent
  kAwaitReq,     // passive: accepted TCP, waiting for CM_REQ
  kAwaitAccept,  // passive: CONNECT_REQUEST delivered to the app
  kAwaitRtu,     // passive: REP sent
  kEstablished,
  kClosing,  // DREQ/REJ sent or received; drains then closes
};

// One message in a connection's output ring.  Slots are reused: reset() empties
// one for its next message and keeps the vectors' capacity.
struct OutChunk {
  WireHdr hdr{};
  std::vector<uint8_t> owned;  // copied payload (inline data, CM, READ responses)
  std::vector<iovec> ext;      // zero-copy payload in registered app memory
  std::size_t sent = 0;        // bytes of header + payload already written
  int64_t not_before_ms = 0;   // fault injection: hold until then
  std::size_t total() const;
  // Copies ext into owned so the chunk no longer references app memory.
  void materialize();
  void reset();
};

// What the parser does with the payload of the current message.
enum class Sink { kNone, kDiscard, kCm, kWrite, kRecv, kReadResp };

struct InParser {
  WireHdr hdr{};
  std::size_t hdr_got = 0;
  bool in_payload = false;
  bool parked = false;  // RNR: header read, waiting for a RECV
  Sink sink = Sink::kNone;
  std::vector<Span> targets;    // where the payload goes
  bool device_targets = false;  // a target is GPU memory: payload goes through staging and copies
  std::size_t tgt_idx = 0;
  std::size_t tgt_off = 0;
  uint32_t remaining = 0;
  uint32_t status = 0;           // error decided at header time (ibv_wc_status)
  std::vector<uint8_t> staging;  // small-message receive batching
  bool bulk = false;             // the last payload of at least kBulkReadAhead bytes went direct
  std::size_t pos = 0;
  std::size_t end = 0;
  CmPayload cm{};

  void add_target(const Span& span) {
    targets.push_back(span);
    device_targets = device_targets || span.gpu.device();
  }
};

struct ConnFaults {
  uint64_t msgs_sent = 0;
  uint64_t writes_in = 0;
  uint64_t reads_in = 0;
  int delay_ms = 0;
  int64_t drop_after_msgs = -1;
  std::shared_ptr<int64_t> drops_left;  // the drop rule's times=K budget; null = no limit
  // Counts one data message sent; true when it is the one to reset the connection after.
  bool drop_now();
  // The count of data messages sent after which a reset is still to come; -1: none.
  int64_t drop_armed_at() const;
};

struct Conn {
  uint64_t serial = 0;
  Fd fd;
  ConnState state = ConnState::kConnecting;
  Qp* qp = nullptr;
  Id* id = nullptr;
  Id* listener = nullptr;  // passive: the listening id until the child id exists
  Device* dev = nullptr;
  sockaddr_storage local{};  // AF_INET or AF_INET6
  sockaddr_storage peer{};
  Ring<OutChunk> out;  // messages not yet (fully) written, in order
  uint32_t ep_events = 0;
  InParser in;
  RqEntry cur_recv;       // receive consumed by the message being parsed (sges: kMaxSge reserved)
  uint32_t recv_msn = 0;  // responder: msn of the last request processed
  bool ack_pending = false;
  uint8_t peer_rnr_retry = 7;  // the requester's rnr_retry decides RNR handling here
  uint64_t rnr_timer = 0;
  // Transport retry emulation (requester.cpp): ACK progress counted, checked
  // by a timer while requests are outstanding.
  uint64_t ack_timer = 0;
  uint64_t acks = 0;
  uint64_t acks_at_check = 0;
  int quiet_checks = 0;
  int rnr_tries = 0;
  bool shut_after_flush = false;
  bool dead = false;
  ConnFaults faults;
};

}  // namespace sv
