// Test harness for the softverbs conformance suite: RAII wrappers around the
// real rdma-core API (tests link the real libraries; softverbs is preloaded),
// bounded waits for CM events and completions, and a connected-pair builder
// that drives both ends from one thread (everything is asynchronous).
#pragma once
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace svt {

inline constexpr int kWaitMs = 5000;  // bound on every wait; nothing may hang
inline constexpr uint32_t kBufBytes = 1 << 20;
inline constexpr int kQueueDepth = 64;
inline constexpr uint8_t kPdataLen = 32;  // NVMe-oF CM private data size

struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_DEVICE_REMOVAL;
  int status = 0;
  rdma_cm_id* id = nullptr;
  rdma_cm_id* listen_id = nullptr;
  std::vector<uint8_t> pdata;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
};

// Gets one event within timeout_ms (copying what tests check, then acking).
std::optional<CmEvent> get_event(rdma_event_channel* ch, int timeout_ms = kWaitMs);
// Like get_event but fails the test unless the event has the expected type.
CmEvent expect_event(rdma_event_channel* ch, rdma_cm_event_type type, int timeout_ms = kWaitMs);
// Polls cq until n completions arrived or timeout_ms passed.
std::vector<ibv_wc> poll_n(ibv_cq* cq, std::size_t n, int timeout_ms = kWaitMs);
// Polls for up to ms and returns what arrived (to assert that nothing more comes).
std::vector<ibv_wc> poll_for(ibv_cq* cq, int ms);

sockaddr_in loopback(const char* ip, uint16_t port);
// An IPv4 or IPv6 (when `ip` has a colon) address.
sockaddr_storage inet_address(const char* ip, uint16_t port);

// One work request over explicit SGEs (any MR, any key); returns ibv_post_*'s result.
int post_sges(ibv_qp* qp, ibv_wr_opcode op, uint64_t wr_id, ibv_sge* sges, int n, uint64_t raddr = 0, uint32_t rkey = 0,
              unsigned flags = IBV_SEND_SIGNALED);
int post_recv_sges(ibv_qp* qp, uint64_t wr_id, ibv_sge* sges, int n);

// One side of an RC connection with its own channel, PD, CQ, QP and buffer.
struct Side {
  rdma_event_channel* ch = nullptr;
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* comp = nullptr;
  ibv_cq* cq = nullptr;
  std::vector<uint8_t> buf;
  ibv_mr* mr = nullptr;

  Side();
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  ~Side();
  // PD + CQ + QP + MR on id->verbs.
  void setup_qp(rdma_cm_id* on,
                unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  ibv_qp* qp() const { return id->qp; }
  uint64_t addr(std::size_t off = 0) { return reinterpret_cast<uintptr_t>(buf.data()) + off; }
  int post_recv(uint64_t wr_id, std::size_t off, uint32_t len);
  int post(ibv_wr_opcode op, uint64_t wr_id, std::size_t off, uint32_t len, uint64_t raddr = 0, uint32_t rkey = 0,
           unsigned flags = IBV_SEND_SIGNALED);
  // What an NVMe-oF target does for a read: RDMA WRITE [data_off, +len) to
  // (raddr, rkey), then SEND [resp_off, +resp_len), chained in one post list.
  int post_write_then_send(std::size_t data_off, uint32_t len, uint64_t raddr, uint32_t rkey, std::size_t resp_off,
                           uint32_t resp_len);
};

struct PairOptions {
  const char* server_ip = "127.0.0.1";  // or "::1"
  const char* client_src = nullptr;     // resolve_addr source address
  uint8_t rnr_retry = 7;
  bool accept = true;
};

// A connected pair in one process: client (active) and server (passive).
struct Pair {
  Side listener;
  Side server;  // child id from CONNECT_REQUEST (its ch is the listener's)
  Side client;
  uint16_t port = 0;
  CmEvent request;      // what the server saw
  CmEvent established;  // what the client saw
  bool connect(const PairOptions& o = {});
  // One SEND from client to server completes successfully (the pair still works).
  void expect_send_works();
};

}  // namespace svt
