// Peer process for the cross-process tests: a small "target" on softverbs.
//   sv_peer serve   listen on 127.0.0.1:0, print the port, accept, serve capsules
//   sv_peer stall   like serve but never posts receives (senders park on RNR)
//   sv_peer reject  reject the first request with 4 bytes of private data
// Every wait is bounded; any failure exits non-zero.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "peer.h"

namespace {

using namespace svt;
constexpr int kWaitMs = 10000;
constexpr uint32_t kBuf = 8u << 20;
constexpr int kDepth = 32;
constexpr std::size_t kCapsuleArea = kBuf - kDepth * 2 * sizeof(Capsule);

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "sv_peer: %s (errno %d)\n", what, errno);
  std::exit(2);
}

rdma_cm_event* next_event(rdma_event_channel* ch) {
  pollfd p{ch->fd, POLLIN, 0};
  if (poll(&p, 1, kWaitMs) != 1) die("no CM event");
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev)) die("rdma_get_cm_event");
  return ev;
}

bool poll_one(ibv_cq* cq, ibv_wc* wc) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  while (std::chrono::steady_clock::now() < end) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n > 0) return true;
    if (n < 0) return false;
    std::this_thread::yield();
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "serve";
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* listen_id = nullptr;
  if (!ch || rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP)) die("create id");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (rdma_bind_addr(listen_id, reinterpret_cast<sockaddr*>(&a)) || rdma_listen(listen_id, 4)) die("listen");
  std::printf("%u\n", ntohs(rdma_get_src_port(listen_id)));
  std::fflush(stdout);

  rdma_cm_event* ev = next_event(ch);
  if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) die("expected CONNECT_REQUEST");
  rdma_cm_id* id = ev->id;
  rdma_ack_cm_event(ev);
  if (mode == "reject") {
    const char why[4] = {'n', 'o', 'p', 'e'};
    if (rdma_reject(id, why, sizeof why)) die("reject");
    usleep(200 * 1000);  // let the REJ leave before exit
    rdma_destroy_id(id);
    rdma_destroy_id(listen_id);
    rdma_destroy_event_channel(ch);
    return 0;
  }
  std::vector<uint8_t> buf(kBuf);
  ibv_pd* pd = ibv_alloc_pd(id->verbs);
  ibv_cq* cq = ibv_create_cq(id->verbs, 4 * kDepth, nullptr, nullptr, 0);
  ibv_mr* mr =
      ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = kDepth;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (!pd || !cq || !mr || rdma_create_qp(id, pd, &qa)) die("resources");
  auto* caps = reinterpret_cast<Capsule*>(buf.data() + kCapsuleArea);  // kDepth recv + kDepth send slots
  auto post_recv = [&](int slot) {
    ibv_sge s{reinterpret_cast<uintptr_t>(&caps[slot]), sizeof(Capsule), mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(slot);
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(id->qp, &wr, &bad)) die("post_recv");
  };
  if (mode != "stall")
    for (int i = 0; i < kDepth; ++i) post_recv(i);
  PeerInfo info{reinterpret_cast<uintptr_t>(buf.data()), mr->rkey, static_cast<uint32_t>(kCapsuleArea), {}};
  rdma_conn_param cp{};
  cp.private_data = &info;
  cp.private_data_len = sizeof info;
  cp.responder_resources = cp.initiator_depth = 4;
  cp.rnr_retry_count = 7;
  if (rdma_accept(id, &cp)) die("accept");
  ev = next_event(ch);
  if (ev->event != RDMA_CM_EVENT_ESTABLISHED) die("expected ESTABLISHED");
  rdma_ack_cm_event(ev);

  for (;;) {
    ibv_wc wc{};
    if (mode == "stall") {
      pause();  // the test kills us
      continue;
    }
    // Wait for a command; a DISCONNECTED means the test is done.
    pollfd pf{ch->fd, POLLIN, 0};
    bool got = false;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
    while (!got && std::chrono::steady_clock::now() < end) {
      got = ibv_poll_cq(cq, 1, &wc) > 0;
      if (!got && poll(&pf, 1, 0) == 1) {
        ev = next_event(ch);
        bool disc = ev->event == RDMA_CM_EVENT_DISCONNECTED;
        rdma_ack_cm_event(ev);
        if (disc) goto done;
      }
      if (!got) std::this_thread::yield();
    }
    if (!got) die("no command");
    if (wc.status != IBV_WC_SUCCESS) {
      if (wc.status == IBV_WC_WR_FLUSH_ERR) continue;
      die(ibv_wc_status_str(wc.status));
    }
    if (wc.opcode != IBV_WC_RECV) continue;  // our own signaled SEND
    int slot = static_cast<int>(wc.wr_id);
    Capsule cmd = caps[slot];
    post_recv(slot);
    Capsule& reply = caps[kDepth + slot];
    reply = cmd;
    reply.status = 0;
    ibv_sge data{reinterpret_cast<uintptr_t>(buf.data() + cmd.offset), cmd.len, mr->lkey};
    ibv_sge rs{reinterpret_cast<uintptr_t>(&reply), sizeof reply, mr->lkey};
    ibv_send_wr w{}, s{};
    s.opcode = IBV_WR_SEND;
    s.sg_list = &rs;
    s.num_sge = 1;
    s.send_flags = IBV_SEND_SIGNALED;
    s.wr_id = 1000;
    ibv_send_wr* bad = nullptr;
    switch (static_cast<PeerOp>(cmd.op)) {
      case PeerOp::kVerify:
        for (uint64_t i = 0; i < cmd.len; ++i)
          if (buf[cmd.offset + i] != pattern(cmd.seed, i)) reply.status = 1;
        break;
      case PeerOp::kWriteBack:
        for (uint64_t i = 0; i < cmd.len; ++i) buf[cmd.offset + i] = pattern(cmd.seed, i);
        w.opcode = IBV_WR_RDMA_WRITE;
        w.sg_list = &data;
        w.num_sge = 1;
        w.wr.rdma.remote_addr = cmd.raddr;
        w.wr.rdma.rkey = cmd.rkey;
        w.next = &s;  // WRITE chained before the response SEND, as an NVMe-oF target does
        if (ibv_post_send(id->qp, &w, &bad)) die("post write");
        continue;
      case PeerOp::kReadFrom: {
        w.opcode = IBV_WR_RDMA_READ;
        w.sg_list = &data;
        w.num_sge = 1;
        w.wr.rdma.remote_addr = cmd.raddr;
        w.wr.rdma.rkey = cmd.rkey;
        w.send_flags = IBV_SEND_SIGNALED;
        w.wr_id = 2000;
        if (ibv_post_send(id->qp, &w, &bad)) die("post read");
        ibv_wc rc{};
        bool ok = poll_one(cq, &rc);
        while (ok && rc.wr_id == 1000) ok = poll_one(cq, &rc);  // an earlier reply's completion
        if (!ok || rc.status != IBV_WC_SUCCESS) reply.status = 2;
        for (uint64_t i = 0; i < cmd.len && reply.status == 0; ++i)
          if (buf[cmd.offset + i] != pattern(cmd.seed, i)) reply.status = 1;
        break;
      }
      case PeerOp::kQuit:
        break;
    }
    if (ibv_post_send(id->qp, &s, &bad)) die("post send");
  }
done:
  rdma_destroy_qp(id);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
  return 0;
}
