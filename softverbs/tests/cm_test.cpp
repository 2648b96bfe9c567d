// Connection management: happy path with private data, reject, no listener,
// disconnect semantics, addresses, destroy with pending events.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "harness.h"

namespace svt {
namespace {

TEST(Cm, ConnectWithPrivateDataBothWays) {
  Pair p;
  ASSERT_TRUE(p.connect());
  // CONNECT_REQUEST: private data zero-padded to the IB limit, depths swapped.
  ASSERT_EQ(p.request.pdata.size(), 56u);
  for (uint8_t i = 0; i < kPdataLen; ++i) EXPECT_EQ(p.request.pdata[i], 0xA0 + i);
  for (std::size_t i = kPdataLen; i < 56; ++i) EXPECT_EQ(p.request.pdata[i], 0);
  EXPECT_EQ(p.request.responder_resources, 5);  // client's initiator_depth
  EXPECT_EQ(p.request.initiator_depth, 3);      // client's responder_resources
  EXPECT_EQ(p.request.listen_id, p.listener.id);
  // ESTABLISHED at the active side carries the accept's private data, padded to 196.
  ASSERT_EQ(p.established.pdata.size(), 196u);
  for (uint8_t i = 0; i < kPdataLen; ++i) EXPECT_EQ(p.established.pdata[i], 0x50 + i);
  // Contexts are shared per device, as librdmacm does.
  ibv_device** list = ibv_get_device_list(nullptr);
  ASSERT_NE(list, nullptr);
  ibv_context* ctx = ibv_open_device(list[0]);
  EXPECT_EQ(ctx, p.client.id->verbs);
  EXPECT_EQ(ctx, p.server.id->verbs);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  EXPECT_EQ(ntohs(rdma_get_dst_port(p.client.id)), p.port);
  EXPECT_EQ(ntohs(rdma_get_src_port(p.server.id)), p.port);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(p.client.qp(), &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(qi.send_cq, p.client.cq);
}

TEST(Cm, RejectCarriesPrivateDataAndConsumerStatus) {
  Pair p;
  PairOptions o;
  o.accept = false;
  ASSERT_TRUE(p.connect(o));
  const uint8_t why[4] = {0xde, 0xad, 0xbe, 0xef};
  ASSERT_EQ(rdma_reject(p.server.id, why, sizeof why), 0);
  CmEvent e = expect_event(p.client.ch, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(e.status, 28);
  ASSERT_GE(e.pdata.size(), 4u);
  EXPECT_EQ(std::memcmp(e.pdata.data(), why, 4), 0);
  // Over-long private data is refused.
  uint8_t big[200] = {};
  EXPECT_NE(rdma_reject(p.server.id, big, 149), 0);
}

TEST(Cm, NoListenerIsRejectedWithStatus8) {
  Side c;
  c.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(c.ch, &c.id, nullptr, RDMA_PS_TCP), 0);
  // Bind a port, close it, and dial it: nothing listens there.
  Side probe;
  probe.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(probe.ch, &probe.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in a = loopback("127.0.0.1", 0);
  ASSERT_EQ(rdma_bind_addr(probe.id, reinterpret_cast<sockaddr*>(&a)), 0);
  uint16_t port = ntohs(rdma_get_src_port(probe.id));
  rdma_destroy_id(probe.id);
  probe.id = nullptr;
  sockaddr_in dst = loopback("127.0.0.1", port);
  ASSERT_EQ(rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
  expect_event(c.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(c.id, kWaitMs), 0);
  expect_event(c.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  c.setup_qp(c.id);
  rdma_conn_param cp{};
  ASSERT_EQ(rdma_connect(c.id, &cp), 0);
  CmEvent e = expect_event(c.ch, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(e.status, 8);
}

TEST(Cm, NonLoopbackAddressIsRefused) {
  Side c;
  c.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(c.ch, &c.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback("192.0.2.1", 4420);
  ASSERT_EQ(rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
  expect_event(c.ch, RDMA_CM_EVENT_ADDR_ERROR);
  sockaddr_in bad = loopback("10.0.0.1", 0);
  Side d;
  d.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(d.ch, &d.id, nullptr, RDMA_PS_TCP), 0);
  EXPECT_NE(rdma_bind_addr(d.id, reinterpret_cast<sockaddr*>(&bad)), 0);
}

TEST(Cm, DisconnectReportedOnceOnBothSidesAndFlushes) {
  Pair p;
  ASSERT_TRUE(p.connect());
  ASSERT_EQ(p.server.post_recv(11, 0, 64), 0);
  ASSERT_EQ(p.server.post_recv(12, 64, 64), 0);
  ASSERT_EQ(rdma_disconnect(p.client.id), 0);
  expect_event(p.client.ch, RDMA_CM_EVENT_DISCONNECTED);
  expect_event(p.listener.ch, RDMA_CM_EVENT_DISCONNECTED);
  // Outstanding receives flush with WR_FLUSH_ERR.
  auto wc = poll_n(p.server.cq, 2);
  ASSERT_EQ(wc.size(), 2u);
  for (const ibv_wc& w : wc) {
    EXPECT_EQ(w.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(w.opcode, IBV_WC_RECV);
  }
  EXPECT_EQ(wc[0].wr_id, 11u);
  // A second disconnect is harmless and reports nothing new; TIMEWAIT_EXIT follows.
  EXPECT_EQ(rdma_disconnect(p.server.id), 0);
  expect_event(p.client.ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
  expect_event(p.listener.ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
  EXPECT_FALSE(get_event(p.client.ch, 200).has_value());
  EXPECT_FALSE(get_event(p.listener.ch, 200).has_value());
  // Posting on the errored QP completes with a flush, and post returns 0.
  EXPECT_EQ(p.client.post(IBV_WR_SEND, 99, 0, 8), 0);
  auto f = poll_n(p.client.cq, 1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(f[0].wr_id, 99u);
}

TEST(Cm, DestroyIdWithPendingEventsDoesNotHang) {
  Pair p;
  ASSERT_TRUE(p.connect());
  ASSERT_EQ(rdma_disconnect(p.client.id), 0);
  // The server's DISCONNECTED (and later TIMEWAIT_EXIT) stay queued, never fetched.
  rdma_destroy_qp(p.server.id);
  EXPECT_EQ(rdma_destroy_id(p.server.id), 0);
  p.server.id = nullptr;
  // The channel stays usable and never yields an event of the destroyed id.
  auto e = get_event(p.listener.ch, 200);
  EXPECT_FALSE(e.has_value());
}

TEST(Cm, TwoDevicesAndSourceBinding) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_EQ(n, 2) << "the suite runs with SOFTVERBS_DEVICES naming two devices";
  std::string d1 = ibv_get_device_name(list[1]);
  ibv_free_device_list(list);
  Pair p;
  PairOptions o;
  o.server_ip = "127.0.0.2";
  o.client_src = "127.0.0.2";
  ASSERT_TRUE(p.connect(o));
  EXPECT_EQ(std::string(ibv_get_device_name(p.client.id->verbs->device)), d1);
  EXPECT_EQ(std::string(ibv_get_device_name(p.server.id->verbs->device)), d1);
  auto* peer = reinterpret_cast<sockaddr_in*>(rdma_get_peer_addr(p.server.id));
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &peer->sin_addr, ip, sizeof ip);
  EXPECT_STREQ(ip, "127.0.0.2");
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(p.server.id->verbs, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[10], 0xff);
  EXPECT_EQ(gid.raw[15], 2);
  // Data flows over the second device too.
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  std::memset(p.client.buf.data(), 0x5a, 64);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64), 0);
  EXPECT_EQ(poll_n(p.server.cq, 1).size(), 1u);
  EXPECT_EQ(p.server.buf[63], 0x5a);
}

}  // namespace
}  // namespace svt

namespace svt {
namespace {

// rdma_create_qp(id, NULL, attr) with NULL CQs: librdmacm uses the device's
// default PD and creates the CQs itself.
TEST(Cm, CreateQpWithDefaultPdAndOwnCqs) {
  Side c;
  c.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(c.ch, &c.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = loopback("127.0.0.1", 4420);
  ASSERT_EQ(rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
  expect_event(c.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  ibv_qp_init_attr a{};
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  ASSERT_EQ(rdma_create_qp(c.id, nullptr, &a), 0);
  ASSERT_NE(c.id->qp, nullptr);
  EXPECT_NE(c.id->qp->pd, nullptr);
  EXPECT_NE(c.id->send_cq, nullptr);
  EXPECT_EQ(c.id->qp->send_cq, c.id->send_cq);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(c.id->qp, &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_INIT);
  rdma_destroy_qp(c.id);
  EXPECT_EQ(c.id->qp, nullptr);
}

}  // namespace
}  // namespace svt
