// Fault-injection rules, each observed through the in-process control API.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"
#include "softverbs/control.h"

namespace svt {
namespace {

class Faults : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(softverbs_fault_clear(), 0); }
  void TearDown() override { softverbs_fault_clear(); }
  void add(const std::string& r) {
    char err[128] = "";
    ASSERT_EQ(softverbs_fault_add(r.c_str(), err, sizeof err), 0) << err;
  }
};

TEST_F(Faults, BadRuleIsRefused) {
  char err[128] = "";
  EXPECT_EQ(softverbs_fault_add("explode,now=1", err, sizeof err), -EINVAL);
  EXPECT_NE(std::string(err).find("explode"), std::string::npos);
}

TEST_F(Faults, NakNthWrite) {
  Pair p;
  ASSERT_TRUE(p.connect());
  add("nak,op=write,nth=2,status=" + std::to_string(IBV_WC_REM_OP_ERR) + ",port=" + std::to_string(p.port));
  uint64_t before = softverbs_faults_fired();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 1u + i, 0, 64, p.server.addr(0), p.server.mr->rkey), 0);
  auto w = poll_n(p.client.cq, 3);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(w[1].status, IBV_WC_REM_OP_ERR);
  EXPECT_EQ(w[2].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(softverbs_faults_fired(), before + 1);
}

TEST_F(Faults, DropAfterMessagesLosesThePeer) {
  Pair p;
  ASSERT_TRUE(p.connect());
  add("drop,after=2");
  // Rules apply to connections set up after they were added.
  Pair q;
  ASSERT_TRUE(q.connect());
  ASSERT_EQ(q.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(q.server.post_recv(2, 0, 64), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(q.client.post(IBV_WR_SEND, 10u + i, 0, 8), 0);
  auto w = poll_n(q.client.cq, 3);
  ASSERT_EQ(w.size(), 3u);
  // Which side's connection the rule hit first decides the exact statuses; at
  // least the last one is an error, and DISCONNECTED arrives once per side.
  EXPECT_NE(w[2].status, IBV_WC_SUCCESS);
  expect_event(q.client.ch, RDMA_CM_EVENT_DISCONNECTED);
  expect_event(q.listener.ch, RDMA_CM_EVENT_DISCONNECTED);
  // The first connection (set up before the rule) is unaffected.
  p.expect_send_works();
}

TEST_F(Faults, DropComesRightAfterTheNthMessageOfABatch) {
  add("drop,after=2");
  Pair p;
  ASSERT_TRUE(p.connect());
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), 64u * i, 64), 0);
  // Four SENDs in one post list go out in one batch; the reset comes after
  // the second, so the last two never reach the server.
  ibv_sge sge[4];
  ibv_send_wr wr[4]{};
  for (int i = 0; i < 4; ++i) {
    sge[i] = {p.client.addr(), 8, p.client.mr->lkey};
    wr[i].wr_id = static_cast<uint64_t>(i);
    wr[i].opcode = IBV_WR_SEND;
    wr[i].sg_list = &sge[i];
    wr[i].num_sge = 1;
    wr[i].send_flags = IBV_SEND_SIGNALED;
    wr[i].next = i < 3 ? &wr[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(p.client.qp(), wr, &bad), 0);
  auto r = poll_n(p.server.cq, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[1].status, IBV_WC_SUCCESS);
  EXPECT_NE(r[2].status, IBV_WC_SUCCESS);
  EXPECT_NE(r[3].status, IBV_WC_SUCCESS);
}

TEST_F(Faults, DropTimesLimitsTheResets) {
  add("drop,after=2,times=1");
  Pair p;
  ASSERT_TRUE(p.connect());
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(p.server.post_recv(2, 0, 64), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(p.client.post(IBV_WR_SEND, 10u + i, 0, 8), 0);
  auto w = poll_n(p.client.cq, 3);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[2].status, IBV_WC_SUCCESS);
  expect_event(p.client.ch, RDMA_CM_EVENT_DISCONNECTED);
  // The one reset is spent: a later connection gets past two messages.
  Pair q;
  ASSERT_TRUE(q.connect());
  for (int i = 0; i < 4; ++i) ASSERT_EQ(q.server.post_recv(static_cast<uint64_t>(i), 64u * i, 64), 0);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(q.client.post(IBV_WR_SEND, static_cast<uint64_t>(i), 0, 8), 0);
  auto r = poll_n(q.server.cq, 4);
  ASSERT_EQ(r.size(), 4u);
  for (const auto& wc : r) EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  auto sent = poll_n(q.client.cq, 4);
  ASSERT_EQ(sent.size(), 4u);
  for (const auto& wc : sent) EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  char err[128] = "";
  EXPECT_EQ(softverbs_fault_add("nak,times=1", err, sizeof err), -EINVAL);
}

TEST_F(Faults, DelayStillDeliversInOrder) {
  add("delay,ms=20");
  Pair p;
  ASSERT_TRUE(p.connect());
  uint64_t fired = softverbs_faults_fired();
  EXPECT_GE(fired, 1u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), 64u * i, 64), 0);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.client.post(IBV_WR_SEND, static_cast<uint64_t>(i), 0, 8), 0);
  auto r = poll_n(p.server.cq, 4);
  ASSERT_EQ(r.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r[i].wr_id, static_cast<uint64_t>(i));
}

TEST_F(Faults, RejectAndIgnoreConnectRequests) {
  add("reject,reason=28");
  {
    Pair p;
    PairOptions o;
    o.accept = false;
    // The listener never sees the request; the client is rejected.
    p.listener.ch = rdma_create_event_channel();
    p.client.ch = rdma_create_event_channel();
    ASSERT_EQ(rdma_create_id(p.listener.ch, &p.listener.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in a = loopback("127.0.0.1", 0);
    ASSERT_EQ(rdma_bind_addr(p.listener.id, reinterpret_cast<sockaddr*>(&a)), 0);
    ASSERT_EQ(rdma_listen(p.listener.id, 4), 0);
    ASSERT_EQ(rdma_create_id(p.client.ch, &p.client.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in d = loopback("127.0.0.1", ntohs(rdma_get_src_port(p.listener.id)));
    ASSERT_EQ(rdma_resolve_addr(p.client.id, nullptr, reinterpret_cast<sockaddr*>(&d), kWaitMs), 0);
    expect_event(p.client.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(rdma_resolve_route(p.client.id, kWaitMs), 0);
    expect_event(p.client.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    p.client.setup_qp(p.client.id);
    rdma_conn_param cp{};
    ASSERT_EQ(rdma_connect(p.client.id, &cp), 0);
    CmEvent e = expect_event(p.client.ch, RDMA_CM_EVENT_REJECTED);
    EXPECT_EQ(e.status, 28);
    EXPECT_FALSE(get_event(p.listener.ch, 100).has_value());
  }
  softverbs_fault_clear();
  add("ignore");
  {
    Pair p;
    p.listener.ch = rdma_create_event_channel();
    p.client.ch = rdma_create_event_channel();
    ASSERT_EQ(rdma_create_id(p.listener.ch, &p.listener.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in a = loopback("127.0.0.1", 0);
    ASSERT_EQ(rdma_bind_addr(p.listener.id, reinterpret_cast<sockaddr*>(&a)), 0);
    ASSERT_EQ(rdma_listen(p.listener.id, 4), 0);
    ASSERT_EQ(rdma_create_id(p.client.ch, &p.client.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in d = loopback("127.0.0.1", ntohs(rdma_get_src_port(p.listener.id)));
    ASSERT_EQ(rdma_resolve_addr(p.client.id, nullptr, reinterpret_cast<sockaddr*>(&d), kWaitMs), 0);
    expect_event(p.client.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(rdma_resolve_route(p.client.id, kWaitMs), 0);
    expect_event(p.client.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    rdma_conn_param cp{};
    ASSERT_EQ(rdma_connect(p.client.id, &cp), 0);
    // Bounded by SOFTVERBS_CM_TIMEOUT_MS (default 3 s, below kWaitMs).
    expect_event(p.client.ch, RDMA_CM_EVENT_UNREACHABLE);
    EXPECT_FALSE(get_event(p.listener.ch, 50).has_value());
  }
}

TEST_F(Faults, FailCreationAndCapLimits) {
  ibv_device** list = ibv_get_device_list(nullptr);
  ibv_context* ctx = ibv_open_device(list[0]);
  add("fail,obj=mr,count=1;fail,obj=cq;cap,max_qp_wr=16,max_cqe=32,max_sge=2");
  ibv_pd* pd = ibv_alloc_pd(ctx);
  std::vector<uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);  // only one failure
  EXPECT_NE(mr, nullptr);
  EXPECT_EQ(ibv_create_cq(ctx, 8, nullptr, nullptr, 0), nullptr);
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_EQ(a.max_qp_wr, 16);
  EXPECT_EQ(a.max_cqe, 32);
  EXPECT_EQ(a.max_sge, 2);
  EXPECT_EQ(ibv_create_cq(ctx, 64, nullptr, nullptr, 0), nullptr);  // above the capped max_cqe
  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = 17;
  qa.cap.max_recv_wr = 1;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  EXPECT_EQ(ibv_create_qp(pd, &qa), nullptr);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
}

TEST_F(Faults, StatsOnDemandCountFaultsAndOperations) {
  Pair p;
  ASSERT_TRUE(p.connect());
  add("nak,op=read,nth=1");
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_READ, 1, 0, 64, p.server.addr(0), p.server.mr->rkey), 0);
  auto w = poll_n(p.client.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_ACCESS_ERR);
  std::string path = ::testing::TempDir() + "sv_ondemand_" + std::to_string(getpid()) + ".json";
  ASSERT_EQ(softverbs_stats_dump(path.c_str()), 0);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string js = ss.str();
  std::string qpn = "\"qp_num\": " + std::to_string(p.client.qp()->qp_num) + ",";
  EXPECT_NE(js.find(qpn), std::string::npos) << js;
  EXPECT_EQ(js.find("\"faults_fired\": 0,"), std::string::npos) << js;
  std::remove(path.c_str());
}

TEST_F(Faults, DropNowLosesAnEstablishedConnection) {
  Pair p;
  ASSERT_TRUE(p.connect());
  Pair other;
  ASSERT_TRUE(other.connect());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(p.client.post(IBV_WR_SEND, static_cast<uint64_t>(i), 0, 8), 0);  // parked
  EXPECT_EQ(softverbs_drop_connections(p.port), 2);  // both ends live in this process
  auto w = poll_n(p.client.cq, 3);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(w[2].status, IBV_WC_WR_FLUSH_ERR);
  expect_event(p.client.ch, RDMA_CM_EVENT_DISCONNECTED);
  expect_event(p.listener.ch, RDMA_CM_EVENT_DISCONNECTED);
  // A connection on another port is untouched.
  other.expect_send_works();
}

TEST_F(Faults, CorruptNthSendPayload) {
  Pair p;
  ASSERT_TRUE(p.connect());
  add("corrupt,op=send,nth=2,byte=5,port=" + std::to_string(p.port));
  for (int i = 0; i < 2; ++i) ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), 1000u * i, 64), 0);
  for (int i = 0; i < 64; ++i) p.client.buf[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(p.client.post(IBV_WR_SEND, static_cast<uint64_t>(i), 0, 64), 0);
  ASSERT_EQ(poll_n(p.server.cq, 2).size(), 2u);
  EXPECT_EQ(std::memcmp(p.server.buf.data(), p.client.buf.data(), 64), 0);  // first intact
  EXPECT_EQ(p.server.buf[1005], static_cast<uint8_t>(5 ^ 0xff));            // second flipped
  EXPECT_EQ(p.client.buf[5], 5);                                            // sender's buffer untouched
}

}  // namespace
}  // namespace svt
