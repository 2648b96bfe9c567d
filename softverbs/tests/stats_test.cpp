// Per-CQ counters in the stats dump: every completion a CQ produced (what a
// test counts to check "one CQE per I/O"), and the entries an overrun dropped.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"
#include "softverbs/control.h"

namespace svt {
namespace {

// The "cqs" entry of the stats dump for cq, as "completions=N overruns=M", or "" if absent.
std::string cq_counters(ibv_cq* cq) {
  std::string path = ::testing::TempDir() + "sv_cqstats_" + std::to_string(getpid()) + ".json";
  if (softverbs_stats_dump(path.c_str()) != 0) return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(path.c_str());
  const std::string js = ss.str();
  const std::size_t at = js.find("{\"handle\": " + std::to_string(cq->handle) + ",");
  if (at == std::string::npos) return "";
  unsigned long long completions = 0, overruns = 0;
  if (std::sscanf(js.c_str() + at, "{\"handle\": %*u, \"cqe\": %*d, \"completions\": %llu, \"overruns\": %llu",
                  &completions, &overruns) != 2)
    return "";
  return "completions=" + std::to_string(completions) + " overruns=" + std::to_string(overruns);
}

TEST(CqStats, CountEveryCompletionTheCqProduced) {
  Pair p;
  ASSERT_TRUE(p.connect());
  EXPECT_EQ(cq_counters(p.client.cq), "completions=0 overruns=0");
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), 4096u * i, 64), 0);
  // Three SENDs (one unsignaled), an unsignaled WRITE and a READ: three CQEs
  // on the client's CQ, three receive completions on the server's.
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 1, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64, 0, 0, 0), 0);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 3, 0, 64, p.server.addr(65536), p.server.mr->rkey, 0), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 4, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_READ, 5, 128, 64, p.server.addr(65536), p.server.mr->rkey), 0);
  ASSERT_EQ(poll_n(p.client.cq, 3).size(), 3u);
  ASSERT_EQ(poll_n(p.server.cq, 3).size(), 3u);
  EXPECT_TRUE(poll_for(p.client.cq, 50).empty());
  EXPECT_EQ(cq_counters(p.client.cq), "completions=3 overruns=0");
  EXPECT_EQ(cq_counters(p.server.cq), "completions=3 overruns=0");
  // Flushes count too: the receive still posted completes with WR_FLUSH_ERR.
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(p.server.qp(), &attr, IBV_QP_STATE), 0);
  auto flushed = poll_n(p.server.cq, 1);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(cq_counters(p.server.cq), "completions=4 overruns=0");
}

TEST(CqStats, OverrunDropsAreCountedApart) {
  Pair p;
  ASSERT_TRUE(p.connect());
  // The device context is shared with earlier tests: drop their async events.
  pollfd pf{p.client.id->verbs->async_fd, POLLIN, 0};
  while (poll(&pf, 1, 0) == 1) {
    ibv_async_event old{};
    ASSERT_EQ(ibv_get_async_event(p.client.id->verbs, &old), 0);
    ibv_ack_async_event(&old);
  }
  // Unpolled signaled WRITEs until the CQ (2 * kQueueDepth entries) overflows.
  bool reported = false;
  for (int i = 0; i < 1000 && !reported; ++i) {
    (void)p.client.post(IBV_WR_RDMA_WRITE, 1, 0, 8, p.server.addr(0), p.server.mr->rkey);  // ENOMEM while full
    reported = poll(&pf, 1, 5) == 1;
  }
  ASSERT_TRUE(reported);
  const std::string counters = cq_counters(p.client.cq);
  EXPECT_EQ(counters.rfind("completions=" + std::to_string(p.client.cq->cqe) + " overruns=", 0), 0u) << counters;
  EXPECT_EQ(counters.find("overruns=0"), std::string::npos) << counters;
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(p.client.id->verbs, &ev), 0);
  EXPECT_EQ(ev.element.cq, p.client.cq);
  ibv_ack_async_event(&ev);
}

}  // namespace
}  // namespace svt
