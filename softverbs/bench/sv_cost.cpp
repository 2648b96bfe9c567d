// softverbs cost probe (a program, not a test): drives the verbs calls of an
// NVMe-oF 4 KiB read through softverbs and prints what they cost.
//
//   softverbs-run build/softverbs/bench/softverbs_cost [--ios N] [--depth D] [--chain] [--busy]
//
// Per I/O the measured process (the "host") posts one 64-byte SEND (the
// command) and one 64-byte receive (for the response) and polls its CQ for
// both completions, sleeping on the completion channel when it is empty (the
// count of polls stays stable under callgrind) or, with --busy, spinning as
// the fio engine does; a peer process (this program re-executed with
// --serve, never under valgrind) answers every command as nvmeof-target does:
// a 4 KiB RDMA WRITE into the host's buffer chained with a 64-byte SEND.
// --chain posts the commands freed by one poll as one list (as the engine's
// commit does) instead of one ibv_post_send per command.
//
// It prints one JSON line: call counts (for bench/softverbs_cost.py, which runs
// it under callgrind twice and divides instruction deltas by count deltas),
// heap allocations per I/O in steady state on both sides (operator new is
// counted here; softverbs allocates only through it), IOPS and mean latency.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "bench_peer.hpp"

extern char** environ;

namespace {

using softverbs_bench::die;
using softverbs_bench::next_event;
using softverbs_bench::wait_for_completions;

std::atomic<uint64_t> g_allocations{0};

constexpr int kWaitMs = 20000;
constexpr uint32_t kCapsuleBytes = 64;
constexpr uint32_t kDataBytes = 4096;
constexpr int kMaxDepth = 256;
constexpr int kPollBatch = 16;
constexpr int kDefaultIos = 20000;
constexpr int kDefaultDepth = 32;

struct PeerInfo {
  uint64_t addr;
  uint32_t rkey;
};

struct Counters {
  uint64_t post_send_calls = 0, send_wrs = 0, post_recv_calls = 0, poll_calls = 0, empty_polls = 0, cqes = 0;
};

// Capsule slots (commands, then responses) followed by one 4 KiB data block per slot.
struct Endpoint {
  int depth;
  std::vector<uint8_t> buf;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* comp = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  rdma_cm_id* id = nullptr;

  explicit Endpoint(int d) : depth(d), buf(static_cast<std::size_t>(d) * (2 * kCapsuleBytes + kDataBytes)) {}
  uint8_t* command(int slot) { return buf.data() + static_cast<std::size_t>(slot) * kCapsuleBytes; }
  uint8_t* response(int slot) { return command(depth + slot); }
  uint8_t* data(int slot) { return command(2 * depth) + static_cast<std::size_t>(slot) * kDataBytes; }

  void setup(rdma_cm_id* on) {
    id = on;
    pd = ibv_alloc_pd(id->verbs);
    comp = ibv_create_comp_channel(id->verbs);
    cq = ibv_create_cq(id->verbs, 4 * depth, nullptr, comp, 0);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = static_cast<uint32_t>(2 * depth);
    a.cap.max_recv_wr = static_cast<uint32_t>(depth);
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    if (!pd || !comp || !cq || !mr || rdma_create_qp(id, pd, &a)) die("resources");
  }
  void post_recv(uint8_t* at, uint64_t wr_id) {
    ibv_sge s{reinterpret_cast<uintptr_t>(at), kCapsuleBytes, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(id->qp, &wr, &bad)) die("post_recv");
  }
};

// Allocations per I/O after warm-up (the first I/Os fill the rings); -1 when the run was too short.
double allocations_per_io(uint64_t allocations, uint64_t ios, uint64_t ios_at_warm) {
  if (ios_at_warm == 0 || ios <= ios_at_warm) return -1.0;
  return static_cast<double>(allocations) / static_cast<double>(ios - ios_at_warm);
}

// The peer answers each command with WRITE(4 KiB, unsignaled) + SEND(64 B).
int serve(int depth) {
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* lid = nullptr;
  if (!ch || rdma_create_id(ch, &lid, nullptr, RDMA_PS_TCP)) die("create id");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (rdma_bind_addr(lid, reinterpret_cast<sockaddr*>(&a)) || rdma_listen(lid, 1)) die("listen");
  std::printf("%u\n", ntohs(rdma_get_src_port(lid)));
  std::fflush(stdout);
  rdma_cm_id* id = nullptr;
  PeerInfo host{};
  if (next_event(kWaitMs, ch, &id, &host) != RDMA_CM_EVENT_CONNECT_REQUEST) die("no request");
  Endpoint ep(depth);
  ep.setup(id);
  for (int i = 0; i < depth; ++i) ep.post_recv(ep.command(i), static_cast<uint64_t>(i));
  rdma_conn_param cp{};
  cp.responder_resources = cp.initiator_depth = 16;
  cp.rnr_retry_count = 7;
  if (rdma_accept(id, &cp)) die("accept");
  if (next_event(kWaitMs, ch) != RDMA_CM_EVENT_ESTABLISHED) die("not established");
  ibv_wc wc[kPollBatch];
  uint64_t served = 0, allocs_at_warm = 0, served_at_warm = 0;
  const uint64_t warm = static_cast<uint64_t>(4 * depth);
  bool armed = false;
  for (bool open = true; open;) {
    int n = ibv_poll_cq(ep.cq, kPollBatch, wc);
    if (n < 0) die("poll_cq");
    for (int i = 0; i < n && open; ++i) {
      // The host's disconnect flushes the receives still posted.
      open = wc[i].status != IBV_WC_WR_FLUSH_ERR;
      if (!open) break;
      if (wc[i].status != IBV_WC_SUCCESS) die(ibv_wc_status_str(wc[i].status));
      if (wc[i].opcode != IBV_WC_RECV) continue;
      int slot = static_cast<int>(wc[i].wr_id);
      uint32_t host_slot = 0;
      std::memcpy(&host_slot, ep.command(slot), sizeof host_slot);
      ibv_sge wsge{reinterpret_cast<uintptr_t>(ep.data(slot)), kDataBytes, ep.mr->lkey};
      ibv_sge ssge{reinterpret_cast<uintptr_t>(ep.response(slot)), kCapsuleBytes, ep.mr->lkey};
      std::memcpy(ep.response(slot), &host_slot, sizeof host_slot);
      ibv_send_wr send{};
      send.wr_id = static_cast<uint64_t>(slot);
      send.sg_list = &ssge;
      send.num_sge = 1;
      send.opcode = IBV_WR_SEND;
      send.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr write{};
      write.sg_list = &wsge;
      write.num_sge = 1;
      write.opcode = IBV_WR_RDMA_WRITE;
      write.wr.rdma.remote_addr = host.addr + host_slot * kDataBytes;
      write.wr.rdma.rkey = host.rkey;
      write.next = &send;
      ep.post_recv(ep.command(slot), static_cast<uint64_t>(slot));
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(ep.id->qp, &write, &bad)) die("post_send");
      if (++served == warm) {
        allocs_at_warm = g_allocations.load();
        served_at_warm = served;
      }
    }
    if (n > 0) {
      armed = false;
      continue;
    }
    if (!wait_for_completions(ep.cq, ep.comp, ch, armed, kWaitMs, "host idle too long")) break;
  }
  // The host reads this line after it disconnected.
  std::printf("%.3f\n", allocations_per_io(g_allocations.load() - allocs_at_warm, served, served_at_warm));
  std::fflush(stdout);
  return 0;
}

int host(const char* self, int ios, int depth, bool chain, bool busy) {
  int out[2];
  if (pipe(out)) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  std::string depth_arg = std::to_string(depth);
  char serve_arg[] = "--serve";
  char* argv[] = {const_cast<char*>(self), serve_arg, depth_arg.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, self, &fa, nullptr, argv, environ)) die("spawn");
  close(out[1]);
  FILE* from_peer = fdopen(out[0], "r");
  unsigned port = 0;
  if (!from_peer || std::fscanf(from_peer, "%u", &port) != 1) die("peer did not start");

  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP);
  sockaddr_in d{};
  d.sin_family = AF_INET;
  d.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&d), kWaitMs) ||
      next_event(kWaitMs, ch) != RDMA_CM_EVENT_ADDR_RESOLVED || rdma_resolve_route(id, kWaitMs) ||
      next_event(kWaitMs, ch) != RDMA_CM_EVENT_ROUTE_RESOLVED)
    die("resolve");
  Endpoint ep(depth);
  ep.setup(id);
  for (int i = 0; i < depth; ++i) ep.post_recv(ep.response(i), static_cast<uint64_t>(i));
  PeerInfo mine{reinterpret_cast<uintptr_t>(ep.data(0)), ep.mr->rkey};
  rdma_conn_param cp{};
  cp.private_data = &mine;
  cp.private_data_len = sizeof mine;
  cp.responder_resources = cp.initiator_depth = 16;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp)) die("connect");
  if (next_event(kWaitMs, ch) != RDMA_CM_EVENT_ESTABLISHED) die("not established");

  using Clock = std::chrono::steady_clock;
  Counters k;
  std::vector<ibv_sge> sges(static_cast<std::size_t>(depth));
  std::vector<ibv_send_wr> wrs(static_cast<std::size_t>(depth));
  std::vector<Clock::time_point> started(static_cast<std::size_t>(depth));
  std::vector<int> ready;  // slots whose command may be (re)sent
  for (int i = 0; i < depth; ++i) ready.push_back(i);
  std::vector<int> halves(static_cast<std::size_t>(depth), 0);  // send and recv completions seen per slot
  uint64_t issued = 0, done = 0, allocs_at_warm = 0, done_at_warm = 0;
  const uint64_t warm = static_cast<uint64_t>(4 * depth);
  double latency_sum_us = 0;
  const auto begin = Clock::now();
  auto submit = [&](std::size_t from, std::size_t to) {
    for (std::size_t j = from; j < to; ++j) wrs[j].next = j + 1 < to ? &wrs[j + 1] : nullptr;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(ep.id->qp, &wrs[from], &bad)) die("post_send");
    ++k.post_send_calls;
  };
  ibv_wc wc[kPollBatch];
  while (done < static_cast<uint64_t>(ios)) {
    std::size_t n_ready = 0;
    for (int slot : ready) {
      if (issued == static_cast<uint64_t>(ios)) break;
      auto s = static_cast<uint32_t>(slot);
      std::memcpy(ep.command(slot), &s, sizeof s);
      sges[n_ready] = {reinterpret_cast<uintptr_t>(ep.command(slot)), kCapsuleBytes, ep.mr->lkey};
      ibv_send_wr& wr = wrs[n_ready];
      wr = ibv_send_wr{};
      wr.wr_id = static_cast<uint64_t>(slot);
      wr.sg_list = &sges[n_ready];
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      started[static_cast<std::size_t>(slot)] = Clock::now();
      ++issued;
      ++k.send_wrs;
      ++n_ready;
      if (!chain) submit(n_ready - 1, n_ready);
    }
    if (chain && n_ready) submit(0, n_ready);
    ready.clear();
    while (ready.empty()) {
      int n = ibv_poll_cq(ep.cq, kPollBatch, wc);
      ++k.poll_calls;
      if (n < 0) die("poll_cq");
      if (n == 0) ++k.empty_polls;
      if (n == 0 && !busy) {
        // Sleep on the channel: arm, poll once more (closes the race), wait.
        ibv_req_notify_cq(ep.cq, 0);
        n = ibv_poll_cq(ep.cq, kPollBatch, wc);
        ++k.poll_calls;
        if (n < 0) die("poll_cq");
        if (n == 0) {
          ++k.empty_polls;
          pollfd p{ep.comp->fd, POLLIN, 0};
          if (poll(&p, 1, kWaitMs) != 1) die("completion wait timed out");
          ibv_cq* c = nullptr;
          void* ctx = nullptr;
          if (ibv_get_cq_event(ep.comp, &c, &ctx) == 0) ibv_ack_cq_events(c, 1);
          continue;
        }
      }
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) die(ibv_wc_status_str(wc[i].status));
        ++k.cqes;
        int slot = static_cast<int>(wc[i].wr_id);
        if (wc[i].opcode == IBV_WC_RECV) {
          // Receives complete in post order, not command order: the response names its command.
          uint32_t command_slot = 0;
          std::memcpy(&command_slot, ep.response(slot), sizeof command_slot);
          ep.post_recv(ep.response(slot), static_cast<uint64_t>(slot));
          ++k.post_recv_calls;
          slot = static_cast<int>(command_slot);
        }
        if (++halves[static_cast<std::size_t>(slot)] < 2) continue;
        halves[static_cast<std::size_t>(slot)] = 0;
        latency_sum_us +=
            std::chrono::duration<double, std::micro>(Clock::now() - started[static_cast<std::size_t>(slot)]).count();
        ready.push_back(slot);
        if (++done == warm) {
          allocs_at_warm = g_allocations.load();
          done_at_warm = done;
        }
      }
      if (done == static_cast<uint64_t>(ios)) break;
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - begin).count();
  const uint64_t allocs_end = g_allocations.load();
  rdma_disconnect(id);
  double peer_allocs = -1.0;
  if (std::fscanf(from_peer, "%lf", &peer_allocs) != 1) peer_allocs = -1.0;
  int st = 0;
  waitpid(pid, &st, 0);
  double host_allocs = allocations_per_io(allocs_end - allocs_at_warm, done, done_at_warm);
  std::printf(
      "{\"ios\": %llu, \"depth\": %d, \"chain\": %s, \"busy\": %s, \"post_send_calls\": %llu, \"send_wrs\": %llu, "
      "\"post_recv_calls\": %llu, \"poll_calls\": %llu, \"empty_polls\": %llu, \"cqes\": %llu, "
      "\"host_allocs_per_io\": %.3f, \"peer_allocs_per_io\": %.3f, \"iops\": %.0f, \"mean_latency_us\": %.1f}\n",
      static_cast<unsigned long long>(done), depth, chain ? "true" : "false", busy ? "true" : "false",
      static_cast<unsigned long long>(k.post_send_calls), static_cast<unsigned long long>(k.send_wrs),
      static_cast<unsigned long long>(k.post_recv_calls), static_cast<unsigned long long>(k.poll_calls),
      static_cast<unsigned long long>(k.empty_polls), static_cast<unsigned long long>(k.cqes), host_allocs, peer_allocs,
      static_cast<double>(done) / secs, latency_sum_us / static_cast<double>(done));
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int parse_int(const char* s, int lo, int hi, const char* what) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) {
    std::fprintf(stderr, "softverbs_cost: %s must be an integer in [%d, %d], not '%s'\n", what, lo, hi, s);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

// Every heap allocation of the process (softverbs' included) goes through here.
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--serve") == 0) return serve(parse_int(argv[2], 1, kMaxDepth, "depth"));
  int ios = kDefaultIos, depth = kDefaultDepth;
  bool chain = false, busy = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--chain") == 0) {
      chain = true;
    } else if (std::strcmp(argv[i], "--busy") == 0) {
      busy = true;
    } else if (std::strcmp(argv[i], "--ios") == 0 && i + 1 < argc) {
      ios = parse_int(argv[++i], 1, INT_MAX, "--ios");
    } else if (std::strcmp(argv[i], "--depth") == 0 && i + 1 < argc) {
      depth = parse_int(argv[++i], 1, kMaxDepth, "--depth");
    } else {
      std::fprintf(stderr, "usage: softverbs_cost [--ios N] [--depth D] [--chain] [--busy]\n");
      return 2;
    }
  }
  // Under valgrind /proc/self/exe names the tool; readlink reports the program.
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) die("readlink /proc/self/exe");
  return host(self, ios, depth, chain, busy);
}
