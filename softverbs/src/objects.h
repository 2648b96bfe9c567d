// The software device's objects.  Each embeds its public rdma-core struct as
// the first member (the context embeds a verbs_context), so the public pointer
// handed to the application converts back with one cast.
#pragma once
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "constants.h"
#include "fd.h"
#include "gpu_memory.h"
#include "rdma.h"
#include "ring.h"
#include "stats.h"

namespace sv {

struct Conn;
struct QpStats;
struct CqStats;

struct Device {
  ibv_device dev;
  in_addr_t ip;  // network order
  uint64_t guid;
  int index;
  struct Context* ctx;                  // the one shared context (rdma_cm id->verbs == ibv_open_device)
  struct Context* child_ctx = nullptr;  // ibv_open_device in a forked child: its own context
};

struct Context {
  verbs_context v;  // must stay first: the app gets &v.context
  Device* device;
  uint64_t fork_generation = 0;  // of the process that opened it (see inherited())
  Pipe async_pipe;               // async_fd; one byte per queued event
  std::deque<ibv_async_event> async_events;
  ibv_pd* default_pd = nullptr;  // rdma_create_qp(id, NULL, ...) uses it
};

struct Pd {
  ibv_pd pd;
};

struct Mr {
  ibv_mr mr;
  uint64_t iova;  // remote (rkey) addresses start here
  uint64_t base;  // local (lkey) SGE addresses start here, and byte 0 lives here
  unsigned access;
  GpuMemory gpu;  // set: base is a CUDA device address, reached only by copies
  Fd dmabuf;      // a dma-buf MR keeps its buffer, as the kernel holds a reference
};

// A stretch of registered memory the data path reads or writes: host bytes,
// or device bytes reached through gpu.
struct Span {
  uint64_t addr;
  std::size_t len;
  GpuMemory gpu;
};

struct CompChannel {
  ibv_comp_channel ch;
  Fd wfd;  // carries ibv_cq* values to ibv_get_cq_event
};

// Completions are produced only with core().mu held (one producer at a time)
// and consumed by any number of pollers, which serialise on mu.  The producer
// fills a slot and then publishes it by advancing tail; a poller that finds
// head == tail returns without locking, which is what a busy poll mostly sees.
struct Cq {
  ibv_cq cq;
  std::mutex mu;                   // pollers among themselves
  std::vector<ibv_wc> ring;        // sized at creation (cqe)
  std::atomic<uint64_t> head{0};   // next entry to poll (pollers, under mu)
  std::atomic<uint64_t> tail{0};   // next entry to fill (producer, under core().mu)
  std::atomic<bool> armed{false};  // ibv_req_notify_cq: the next CQE writes to the channel
  bool overrun = false;            // core().mu
  int qp_refs = 0;                 // QPs using the CQ (destroy refuses with EBUSY)
  CqStats* stats = nullptr;        // never null once created (see Stats::add_cq)
};

// One posted send-queue work request, retired strictly in post order.  Slots
// are reused: read_sges keeps its capacity (max_send_sge, reserved at creation).
struct SqEntry {
  uint64_t wr_id = 0;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  uint32_t msn = 0;
  uint32_t byte_len = 0;
  bool signaled = false;
  bool is_read = false;
  std::vector<ibv_sge> read_sges;  // where READ data lands (validated at post)
};

// A posted receive; sges keeps its capacity (max_recv_sge) across reuse.
struct RqEntry {
  uint64_t wr_id = 0;
  std::vector<ibv_sge> sges;
};

struct Qp {
  ibv_qp qp;
  ibv_qp_cap cap;
  bool sq_sig_all;
  Conn* conn = nullptr;   // set while connected; engine-owned
  Ring<SqEntry> sq;       // posted, not yet retired; max_send_wr slots
  Ring<RqEntry> rq;       // max_recv_wr slots
  uint32_t next_msn = 1;  // next request msn this side sends
  uint8_t rnr_retry = kRnrRetryDefault;
  uint8_t retry_cnt = 7;
  uint8_t timeout = kDefaultAckTimeout;  // local ACK timeout: 4.096 us x 2^timeout
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  QpStats* stats = nullptr;  // never null once created (see Stats::add_qp)
  static constexpr uint8_t kRnrRetryDefault = 7;
};

inline Context* to_ctx(ibv_context* c) {
  // The public context is the last member of the verbs_context that heads Context.
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}
inline Pd* to_pd(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }
inline Mr* to_mr(ibv_mr* m) { return reinterpret_cast<Mr*>(m); }
inline Cq* to_cq(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Qp* to_qp(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline CompChannel* to_ch(ibv_comp_channel* c) { return reinterpret_cast<CompChannel*>(c); }

}  // namespace sv
