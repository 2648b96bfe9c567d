#include "harness.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace svt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollPause = std::chrono::microseconds(50);

int ms_left(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return d > 0 ? static_cast<int>(d) : 0;
}

}  // namespace

std::optional<CmEvent> get_event(rdma_event_channel* ch, int timeout_ms) {
  pollfd p{ch->fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return std::nullopt;
  CmEvent e;
  e.type = ev->event;
  e.status = ev->status;
  e.id = ev->id;
  e.listen_id = ev->listen_id;
  const rdma_conn_param& c = ev->param.conn;
  if (c.private_data) {
    auto* d = static_cast<const uint8_t*>(c.private_data);
    e.pdata.assign(d, d + c.private_data_len);
  }
  e.responder_resources = c.responder_resources;
  e.initiator_depth = c.initiator_depth;
  rdma_ack_cm_event(ev);
  return e;
}

CmEvent expect_event(rdma_event_channel* ch, rdma_cm_event_type type, int timeout_ms) {
  auto e = get_event(ch, timeout_ms);
  EXPECT_TRUE(e.has_value()) << "no CM event within " << timeout_ms << " ms, wanted " << rdma_event_str(type);
  if (!e) {
    CmEvent none;
    none.type = RDMA_CM_EVENT_DEVICE_REMOVAL;  // never expected by a test
    return none;
  }
  EXPECT_EQ(e->type, type) << "got " << rdma_event_str(e->type) << " wanted " << rdma_event_str(type);
  return *e;
}

std::vector<ibv_wc> poll_n(ibv_cq* cq, std::size_t n, int timeout_ms) {
  std::vector<ibv_wc> out;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < n && ms_left(deadline) > 0) {
    ibv_wc wc[16];
    int got = ibv_poll_cq(cq, 16, wc);
    EXPECT_GE(got, 0);
    if (got <= 0) {
      std::this_thread::sleep_for(kPollPause);
      continue;
    }
    out.insert(out.end(), wc, wc + got);
  }
  return out;
}

std::vector<ibv_wc> poll_for(ibv_cq* cq, int ms) {
  std::vector<ibv_wc> out;
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (ms_left(deadline) > 0) {
    ibv_wc wc[16];
    int got = ibv_poll_cq(cq, 16, wc);
    if (got > 0)
      out.insert(out.end(), wc, wc + got);
    else
      std::this_thread::sleep_for(kPollPause);
  }
  return out;
}

sockaddr_in loopback(const char* ip, uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  inet_pton(AF_INET, ip, &s.sin_addr);
  return s;
}

sockaddr_storage inet_address(const char* ip, uint16_t port) {
  sockaddr_storage s{};
  if (std::strchr(ip, ':') != nullptr) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&s);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, ip, &in6->sin6_addr);
  } else {
    *reinterpret_cast<sockaddr_in*>(&s) = loopback(ip, port);
  }
  return s;
}

Side::Side() : buf(kBufBytes) {}

Side::~Side() {
  if (id && id->qp) rdma_destroy_qp(id);
  if (mr) ibv_dereg_mr(mr);
  if (cq) ibv_destroy_cq(cq);
  if (comp) ibv_destroy_comp_channel(comp);
  if (pd) ibv_dealloc_pd(pd);
  if (id) rdma_destroy_id(id);
  if (ch) rdma_destroy_event_channel(ch);
}

void Side::setup_qp(rdma_cm_id* on, unsigned access) {
  id = on;
  pd = ibv_alloc_pd(id->verbs);
  ASSERT_NE(pd, nullptr);
  comp = ibv_create_comp_channel(id->verbs);
  cq = ibv_create_cq(id->verbs, 2 * kQueueDepth, this, comp, 0);
  ASSERT_NE(cq, nullptr);
  mr = ibv_reg_mr(pd, buf.data(), buf.size(), static_cast<int>(access));  // runtime access: reg_mr_iova2 route
  ASSERT_NE(mr, nullptr);
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = kQueueDepth;
  a.cap.max_recv_wr = kQueueDepth;
  a.cap.max_send_sge = 4;
  a.cap.max_recv_sge = 4;
  a.cap.max_inline_data = 64;
  ASSERT_EQ(rdma_create_qp(id, pd, &a), 0);
}

int post_sges(ibv_qp* qp, ibv_wr_opcode op, uint64_t wr_id, ibv_sge* sges, int n, uint64_t raddr, uint32_t rkey,
              unsigned flags) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = sges;
  wr.num_sge = n;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

int post_recv_sges(ibv_qp* qp, uint64_t wr_id, ibv_sge* sges, int n) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sges;
  wr.num_sge = n;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

int Side::post_recv(uint64_t wr_id, std::size_t off, uint32_t len) {
  ibv_sge s{addr(off), len, mr->lkey};
  return post_recv_sges(qp(), wr_id, &s, 1);
}

int Side::post(ibv_wr_opcode op, uint64_t wr_id, std::size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
               unsigned flags) {
  ibv_sge s{addr(off), len, mr->lkey};
  return post_sges(qp(), op, wr_id, &s, len ? 1 : 0, raddr, rkey, flags);
}

int Side::post_write_then_send(std::size_t data_off, uint32_t len, uint64_t raddr, uint32_t rkey, std::size_t resp_off,
                               uint32_t resp_len) {
  ibv_sge data{addr(data_off), len, mr->lkey};
  ibv_sge resp{addr(resp_off), resp_len, mr->lkey};
  ibv_send_wr w{}, s{};
  w.opcode = IBV_WR_RDMA_WRITE;
  w.sg_list = &data;
  w.num_sge = 1;
  w.wr.rdma.remote_addr = raddr;
  w.wr.rdma.rkey = rkey;
  w.next = &s;
  s.opcode = IBV_WR_SEND;
  s.sg_list = &resp;
  s.num_sge = 1;
  s.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp(), &w, &bad);
}

void Pair::expect_send_works() {
  ASSERT_EQ(server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(client.post(IBV_WR_SEND, 2, 0, 8), 0);
  auto ok = poll_n(client.cq, 1);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].status, IBV_WC_SUCCESS);
}

bool Pair::connect(const PairOptions& o) {
  listener.ch = rdma_create_event_channel();
  client.ch = rdma_create_event_channel();
  if (!listener.ch || !client.ch) return false;
  EXPECT_EQ(rdma_create_id(listener.ch, &listener.id, this, RDMA_PS_TCP), 0);
  sockaddr_storage a = inet_address(o.server_ip, 0);
  EXPECT_EQ(rdma_bind_addr(listener.id, reinterpret_cast<sockaddr*>(&a)), 0);
  EXPECT_EQ(rdma_listen(listener.id, 8), 0);
  port = ntohs(rdma_get_src_port(listener.id));
  EXPECT_NE(port, 0);

  EXPECT_EQ(rdma_create_id(client.ch, &client.id, this, RDMA_PS_TCP), 0);
  sockaddr_storage dst = inet_address(o.server_ip, port);
  sockaddr_storage src = inet_address(o.client_src ? o.client_src : "0.0.0.0", 0);
  EXPECT_EQ(rdma_resolve_addr(client.id, o.client_src ? reinterpret_cast<sockaddr*>(&src) : nullptr,
                              reinterpret_cast<sockaddr*>(&dst), kWaitMs),
            0);
  expect_event(client.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(rdma_resolve_route(client.id, kWaitMs), 0);
  expect_event(client.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  client.setup_qp(client.id);
  if (::testing::Test::HasFatalFailure()) return false;

  uint8_t pdata[kPdataLen];
  for (uint8_t i = 0; i < kPdataLen; ++i) pdata[i] = static_cast<uint8_t>(0xA0 + i);
  rdma_conn_param cp{};
  cp.private_data = pdata;
  cp.private_data_len = kPdataLen;
  cp.responder_resources = 3;
  cp.initiator_depth = 5;
  cp.retry_count = 7;
  cp.rnr_retry_count = o.rnr_retry;
  EXPECT_EQ(rdma_connect(client.id, &cp), 0);

  request = expect_event(listener.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
  if (request.type != RDMA_CM_EVENT_CONNECT_REQUEST) return false;
  server.setup_qp(request.id);
  if (::testing::Test::HasFatalFailure()) return false;
  if (!o.accept) return true;
  uint8_t rep[kPdataLen];
  for (uint8_t i = 0; i < kPdataLen; ++i) rep[i] = static_cast<uint8_t>(0x50 + i);
  rdma_conn_param ap{};
  ap.private_data = rep;
  ap.private_data_len = kPdataLen;
  ap.responder_resources = request.responder_resources;
  ap.initiator_depth = request.initiator_depth;
  ap.rnr_retry_count = o.rnr_retry;
  EXPECT_EQ(rdma_accept(server.id, &ap), 0);
  established = expect_event(client.ch, RDMA_CM_EVENT_ESTABLISHED);
  expect_event(listener.ch, RDMA_CM_EVENT_ESTABLISHED);
  return established.type == RDMA_CM_EVENT_ESTABLISHED && !::testing::Test::HasFailure();
}

}  // namespace svt
