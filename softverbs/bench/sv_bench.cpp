// softverbs benchmark (a program, not a test): cross-process RDMA WRITE and
// READ bandwidth at 4 KiB and 128 KiB, and messages/s for 64-byte SENDs.
//
//   softverbs-run build/softverbs/bench/softverbs_bench
//
// The last row (depth 1) is the round-trip latency of one SEND and its ACK.
// The process re-executes itself as the passive peer ("--serve"), so the two
// ends are separate processes with separate progress engines, as in a real
// initiator/target pair.  Completions are awaited through completion channels
// rather than busy polling, which leaves the cores to the two engines.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_peer.hpp"

extern char** environ;

namespace {

using softverbs_bench::die;
using softverbs_bench::next_event;
using softverbs_bench::wait_for_completions;

constexpr int kWaitMs = 10000;
constexpr std::size_t kBufBytes = 64u << 20;
constexpr int kDepth = 32;       // outstanding WRs per run
constexpr int kRecvDepth = 256;  // receives the peer keeps posted for the SEND run
constexpr uint32_t kSendBytes = 64;
constexpr double kRunSeconds = 1.5;  // each measurement runs about this long

struct PeerInfo {
  uint64_t addr;
  uint32_t rkey;
  uint32_t len;
};

struct Endpoint {
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBufBytes);
  ibv_pd* pd = nullptr;
  ibv_comp_channel* comp = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  rdma_cm_id* id = nullptr;

  void setup(rdma_cm_id* on) {
    id = on;
    pd = ibv_alloc_pd(id->verbs);
    comp = ibv_create_comp_channel(id->verbs);
    cq = ibv_create_cq(id->verbs, 2 * kRecvDepth, nullptr, comp, 0);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = kDepth;
    a.cap.max_recv_wr = kRecvDepth;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    if (!pd || !comp || !cq || !mr || rdma_create_qp(id, pd, &a)) die("resources");
  }
  // Waits for at least one completion (bounded) and returns how many arrived.
  int wait(ibv_wc* wc, int max) {
    for (;;) {
      int n = ibv_poll_cq(cq, max, wc);
      if (n) return n;
      ibv_req_notify_cq(cq, 0);
      n = ibv_poll_cq(cq, max, wc);  // closes the race with the arm
      if (n) return n;
      pollfd p{comp->fd, POLLIN, 0};
      if (poll(&p, 1, kWaitMs) != 1) die("completion wait timed out");
      ibv_cq* c = nullptr;
      void* ctx = nullptr;
      ibv_get_cq_event(comp, &c, &ctx);
      ibv_ack_cq_events(c, 1);
    }
  }
  void post_recv(uint64_t slot) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data()) + slot * kSendBytes, kSendBytes, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(id->qp, &wr, &bad)) die("post_recv");
  }
};

int serve() {
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
  if (next_event(kWaitMs, ch, &id) != RDMA_CM_EVENT_CONNECT_REQUEST) die("no request");
  Endpoint ep;
  ep.setup(id);
  for (int i = 0; i < kRecvDepth; ++i) ep.post_recv(static_cast<uint64_t>(i));
  PeerInfo info{reinterpret_cast<uintptr_t>(ep.buf.data()), ep.mr->rkey, static_cast<uint32_t>(kBufBytes)};
  rdma_conn_param cp{};
  cp.private_data = &info;
  cp.private_data_len = sizeof info;
  cp.responder_resources = cp.initiator_depth = 16;
  cp.rnr_retry_count = 7;
  if (rdma_accept(id, &cp)) die("accept");
  if (next_event(kWaitMs, ch) != RDMA_CM_EVENT_ESTABLISHED) die("not established");
  // Repost receives as SENDs arrive, until the client disconnects.
  ibv_wc wc[64];
  bool armed = false;
  for (;;) {
    int n = ibv_poll_cq(ep.cq, 64, wc);
    for (int i = 0; i < n; ++i)
      if (wc[i].status == IBV_WC_SUCCESS) ep.post_recv(wc[i].wr_id);
    if (n > 0) {
      armed = false;
      continue;
    }
    if (!wait_for_completions(ep.cq, ep.comp, ch, armed, kWaitMs, "peer idle too long")) break;
  }
  return 0;
}

double run(Endpoint& ep, const PeerInfo& peer, ibv_wr_opcode op, uint32_t size, int depth, uint64_t* ops_done) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(kRunSeconds);
  uint64_t posted = 0, done = 0;
  int inflight = 0;
  std::size_t span = std::min<std::size_t>(kBufBytes, peer.len) / size;
  bool stop = false;
  ibv_wc wc[kDepth];
  while (!stop || inflight > 0) {
    while (!stop && inflight < depth) {
      std::size_t off = (posted % span) * size;
      ibv_sge s{reinterpret_cast<uintptr_t>(ep.buf.data()) + off, size, ep.mr->lkey};
      ibv_send_wr wr{};
      wr.opcode = op;
      wr.sg_list = &s;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = peer.addr + off;
      wr.wr.rdma.rkey = peer.rkey;
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(ep.id->qp, &wr, &bad)) die("post_send");
      ++posted;
      ++inflight;
    }
    int n = ep.wait(wc, kDepth);
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) die(ibv_wc_status_str(wc[i].status));
    inflight -= n;
    done += static_cast<uint64_t>(n);
    stop = Clock::now() >= deadline;
  }
  *ops_done = done;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int bench(const char* self) {
  int out[2];
  if (pipe(out)) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  char serve_arg[] = "--serve";
  char* argv[] = {const_cast<char*>(self), serve_arg, nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, self, &fa, nullptr, argv, environ)) die("spawn");
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  unsigned port = 0;
  if (!f || std::fscanf(f, "%u", &port) != 1) die("peer did not start");
  std::fclose(f);

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
  Endpoint ep;
  ep.setup(id);
  rdma_conn_param cp{};
  cp.responder_resources = cp.initiator_depth = 16;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp)) die("connect");
  PeerInfo peer{};
  if (next_event(kWaitMs, ch, nullptr, &peer) != RDMA_CM_EVENT_ESTABLISHED) die("not established");

  std::printf("softverbs cross-process benchmark (queue depth %d, ~%.1f s per row)\n", kDepth, kRunSeconds);
  std::printf("%-12s %10s %6s %12s %12s %10s\n", "operation", "size", "depth", "MB/s", "ops/s", "us/op");
  struct Row {
    const char* name;
    ibv_wr_opcode op;
    uint32_t size;
    int depth;
  };
  const Row rows[] = {
      {"RDMA_WRITE", IBV_WR_RDMA_WRITE, 4096, kDepth}, {"RDMA_WRITE", IBV_WR_RDMA_WRITE, 128 * 1024, kDepth},
      {"RDMA_READ", IBV_WR_RDMA_READ, 4096, kDepth},   {"RDMA_READ", IBV_WR_RDMA_READ, 128 * 1024, kDepth},
      {"SEND", IBV_WR_SEND, kSendBytes, kDepth},       {"SEND", IBV_WR_SEND, kSendBytes, 1}};
  for (const Row& r : rows) {
    uint64_t ops = 0;
    double secs = run(ep, peer, r.op, r.size, r.depth, &ops);
    std::printf("%-12s %9u B %6d %12.1f %12.0f %10.1f\n", r.name, r.size, r.depth,
                static_cast<double>(ops) * r.size / secs / 1e6, static_cast<double>(ops) / secs,
                secs * 1e6 / static_cast<double>(ops));
    std::fflush(stdout);
  }
  rdma_disconnect(id);
  int st = 0;
  waitpid(pid, &st, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--serve") == 0) return serve();
  return bench("/proc/self/exe");
}
