// Remote access checks (rkey, bounds, access flags, PD) and local protection:
// the right error completion, then flushes, and the responder QP in error.
#include <gtest/gtest.h>
#include <poll.h>

#include "harness.h"

namespace svt {
namespace {

struct BadAccess {
  const char* name;
  ibv_wr_opcode op;
  int kind;  // 0 bad rkey, 1 out of bounds, 2 wrong access, 3 wrong PD
};

class RemoteAccess : public ::testing::TestWithParam<BadAccess> {};

TEST_P(RemoteAccess, FailsWithRemAccessErrThenFlushes) {
  const BadAccess& b = GetParam();
  Pair p;
  ASSERT_TRUE(p.connect());
  uint64_t raddr = p.server.addr(0);
  uint32_t rkey = p.server.mr->rkey;
  ibv_mr* extra = nullptr;
  ibv_pd* other_pd = nullptr;
  switch (b.kind) {
    case 0:
      rkey ^= 0x00ff0000u;
      break;
    case 1:
      raddr = p.server.addr(kBufBytes - 16);
      break;  // 64-byte access crosses the end
    case 2:   // registered for local access only
      extra = ibv_reg_mr(p.server.pd, p.server.buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
      rkey = extra->rkey;
      break;
    case 3:  // remote-accessible, but in another PD than the QP's
      other_pd = ibv_alloc_pd(p.server.id->verbs);
      extra = ibv_reg_mr(other_pd, p.server.buf.data(), 4096,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
      rkey = extra->rkey;
      break;
  }
  ASSERT_EQ(p.server.post_recv(50, 0, 64), 0);
  ASSERT_EQ(p.client.post(b.op, 1, 0, 64, raddr, rkey), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 8), 0);
  auto w = poll_n(p.client.cq, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].wr_id, 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(w[0].status);
  EXPECT_EQ(w[1].wr_id, 2u);
  EXPECT_EQ(w[1].status, IBV_WC_WR_FLUSH_ERR);
  // The responder QP goes to error: its receive flushes and an async event is raised.
  auto r = poll_n(p.server.cq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_WR_FLUSH_ERR);
  pollfd pf{p.server.id->verbs->async_fd, POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, kWaitMs), 1);
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(p.server.id->verbs, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
  ibv_ack_async_event(&ev);
  if (extra) ibv_dereg_mr(extra);
  if (other_pd) ibv_dealloc_pd(other_pd);
}

INSTANTIATE_TEST_SUITE_P(All, RemoteAccess,
                         ::testing::Values(BadAccess{"WriteBadRkey", IBV_WR_RDMA_WRITE, 0},
                                           BadAccess{"WriteOutOfBounds", IBV_WR_RDMA_WRITE, 1},
                                           BadAccess{"WriteNoRemoteAccess", IBV_WR_RDMA_WRITE, 2},
                                           BadAccess{"WriteWrongPd", IBV_WR_RDMA_WRITE, 3},
                                           BadAccess{"ReadBadRkey", IBV_WR_RDMA_READ, 0},
                                           BadAccess{"ReadOutOfBounds", IBV_WR_RDMA_READ, 1},
                                           BadAccess{"ReadNoRemoteAccess", IBV_WR_RDMA_READ, 2},
                                           BadAccess{"ReadWrongPd", IBV_WR_RDMA_READ, 3}),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(LocalAccess, BadLkeyIsLocalProtectionError) {
  Pair p;
  ASSERT_TRUE(p.connect());
  ibv_sge s{p.client.addr(0), 64, p.client.mr->lkey + 1000};
  ASSERT_EQ(post_sges(p.client.qp(), IBV_WR_SEND, 5, &s, 1), 0);
  auto w = poll_n(p.client.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_LOC_PROT_ERR);
}

TEST(LocalAccess, ReceiveTooSmallIsLengthError) {
  Pair p;
  ASSERT_TRUE(p.connect());
  ASSERT_EQ(p.server.post_recv(1, 0, 16), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64), 0);
  auto r = poll_n(p.server.cq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_LOC_LEN_ERR);
  auto w = poll_n(p.client.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_INV_REQ_ERR);
}

TEST(LocalAccess, ModifyToErrorFlushesEverythingOutstanding) {
  Pair p;
  ASSERT_TRUE(p.connect());
  // Unsignaled SENDs parked at the peer (no receives) are outstanding.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.client.post(IBV_WR_SEND, 100u + i, 0, 8, 0, 0, 0), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(p.client.post_recv(200u + i, 0, 8), 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(p.client.qp(), &a, IBV_QP_STATE), 0);
  auto w = poll_n(p.client.cq, 7);
  ASSERT_EQ(w.size(), 7u);
  for (const ibv_wc& c : w) EXPECT_EQ(c.status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_TRUE(poll_for(p.client.cq, 50).empty());
}

}  // namespace
}  // namespace svt
