// Process-wide softverbs state.  core().mu guards everything except CQ rings.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.h"
#include "engine.h"
#include "faults.h"
#include "objects.h"
#include "sockaddr.h"
#include "stats.h"
#include "wire.h"

namespace sv {

struct Id;

struct Event {
  rdma_cm_event ev;
  uint8_t pdata[kAcceptPrivateMax];
};

struct EventChannel {
  rdma_event_channel ch;         // ch.fd is the pipe's read end (the app polls it)
  uint64_t fork_generation = 0;  // of the process that created it (see inherited())
  Pipe pipe;
  std::deque<Event*> q;
};

enum class IdState {
  kIdle,
  kBound,
  kListening,
  kAddrResolved,
  kRouteResolved,
  kConnecting,
  kConnectRequest,
  kAccepting,
  kConnected,
  kDisconnected,
  kError
};

struct Id {
  rdma_cm_id id;  // must stay first
  uint64_t serial;
  EventChannel* chan;
  Device* dev = nullptr;
  IdState state = IdState::kIdle;
  Conn* conn = nullptr;
  std::vector<uint64_t> listeners;  // engine listener serials
  // Sockets bound by rdma_bind_addr (one per device for a wildcard address),
  // later used by rdma_listen or by rdma_connect as its source.
  std::vector<std::pair<Device*, Fd>> bound;
  int unacked = 0;  // events handed out and not yet acked
  bool disconnect_reported = false;
  uint64_t connect_timer = 0;
  int ack_timeout = -1;  // rdma_set_option ACK timeout for the QP; -1: device default
  Id* listen_parent = nullptr;
  CmPayload peer{};              // what the other side sent in REQ/REP
  std::vector<ibv_cq*> own_cqs;  // created by rdma_create_qp for NULL CQs
};

inline Id* to_id(rdma_cm_id* i) { return reinterpret_cast<Id*>(i); }

struct Core {
  std::mutex mu;
  std::condition_variable acked_cv;  // rdma_destroy_id waits for event acks
  Config cfg;
  std::vector<std::unique_ptr<Device>> devices;
  std::unordered_map<uint32_t, Mr*> mrs;  // by rkey (== lkey)
  std::unordered_map<uint64_t, Id*> ids;  // live CM ids by serial (timers look them up)
  // Live CQs: a completion event of a CQ destroyed before it was read is
  // dropped, as the kernel drops it (the channel carries CQ pointers).
  std::unordered_set<const ibv_cq*> live_cqs;
  uint32_t next_key = 0;
  uint32_t next_qpn = kFirstQpNum;
  uint64_t next_id_serial = 1;
  uint64_t fork_generation = 0;  // bumped in every forked child
  Engine engine;
  Faults faults;
  Stats stats;
};

// The process's softverbs core; created on first use and never destroyed
// (objects the app did not free stay reachable for leak checkers).
Core& core();

// verbs_device.cpp
Device* device_by_ip(in_addr_t ip);
// The device serving an allowed address of either family (::1: the one owning
// 127.0.0.1, else the first); nullptr when none does.
Device* device_by_addr(const sockaddr* a);
// The device's own address in `family` (IPv6: ::1) with `port`.
sockaddr_storage device_addr(const Device* d, int family, int port);
// The device's context as rdma_cm caches it: opened once, kept across fork.
Context* open_context(Device* d);

// A forked child may not use what its parent opened: the kernel refuses
// uverbs and rdma_cm commands on an inherited file (its credentials are the
// parent's) with EACCES, and librdmacm's cached device contexts are such files.
inline bool inherited(const Context* c) { return c->fork_generation != core().fork_generation; }
inline bool inherited(const EventChannel* ch) { return ch->fork_generation != core().fork_generation; }
// Says so once per process and returns EACCES (also in errno).
int refuse_inherited(const char* call);
// The same for rdma_cm calls, which return -1 with errno set.
inline int cm_refuse_inherited(const char* call) {
  refuse_inherited(call);
  return -1;
}

// cq.cpp: queue a completion (takes the CQ lock).
void push_cqe(Cq* cq, const ibv_wc& wc);
void post_async_event(Context* ctx, const ibv_async_event& ev);

// qp_state.cpp
void qp_to_error(Qp* qp, ibv_wc_status first_status);
void flush_recv_queue(Qp* qp);

// cm.cpp / cm_conn.cpp
Id* new_id(EventChannel* ch, void* context, rdma_port_space ps);
void report_disconnected(Id* id);
int tcp_port(int rdma_port);
int rdma_port_of(int tcp_port);
std::string addr_str(const sockaddr_storage& a);

// ctl_socket.cpp
// Called while the core is being created, so it takes the engine explicitly.
void open_control_socket(Engine& engine, const std::string& path);
int drop_connections_locked(int port);

// cm_events.cpp
Event* post_cm_event(Id* id, rdma_cm_event_type type, int status, const CmPayload* cm, std::size_t pad_to);

}  // namespace sv
