// Work requests of every type, checked byte for byte, plus ordering,
// unsignaled WRs, inline data, several SGEs, CQ overflow and RNR.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"

namespace svt {
namespace {

void fill(std::vector<uint8_t>& b, std::size_t off, std::size_t len, uint8_t seed) {
  for (std::size_t i = 0; i < len; ++i) b[off + i] = static_cast<uint8_t>(seed + i * 7);
}

bool same(const std::vector<uint8_t>& a, std::size_t ao, const std::vector<uint8_t>& b, std::size_t bo,
          std::size_t len) {
  return std::memcmp(a.data() + ao, b.data() + bo, len) == 0;
}

class Data : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(p.connect()); }
  Pair p;
};

TEST_F(Data, SendWithSeveralSgesAndInline) {
  ASSERT_EQ(p.server.post_recv(7, 4096, 8192), 0);
  fill(p.client.buf, 0, 100, 1);
  fill(p.client.buf, 1000, 300, 2);
  ibv_sge sg[2] = {{p.client.addr(0), 100, p.client.mr->lkey}, {p.client.addr(1000), 300, p.client.mr->lkey}};
  ASSERT_EQ(post_sges(p.client.qp(), IBV_WR_SEND, 8, sg, 2), 0);
  auto r = poll_n(p.server.cq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(r[0].byte_len, 400u);
  EXPECT_EQ(r[0].wr_id, 7u);
  EXPECT_EQ(r[0].qp_num, p.server.qp()->qp_num);
  EXPECT_TRUE(same(p.server.buf, 4096, p.client.buf, 0, 100));
  EXPECT_TRUE(same(p.server.buf, 4196, p.client.buf, 1000, 300));
  auto s = poll_n(p.client.cq, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(s[0].wr_id, 8u);
  // Inline: the buffer may change right after post; the peer sees the old bytes.
  ASSERT_EQ(p.server.post_recv(9, 0, 64), 0);
  fill(p.client.buf, 0, 64, 3);
  std::vector<uint8_t> expect(p.client.buf.begin(), p.client.buf.begin() + 64);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 10, 0, 64, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  std::memset(p.client.buf.data(), 0, 64);
  ASSERT_EQ(poll_n(p.server.cq, 1).size(), 1u);
  EXPECT_EQ(std::memcmp(p.server.buf.data(), expect.data(), 64), 0);
  EXPECT_EQ(poll_n(p.client.cq, 1).size(), 1u);
}

TEST_F(Data, RdmaWriteAndReadByteForByte) {
  constexpr uint32_t kLen = 128 * 1024;
  fill(p.client.buf, 0, kLen, 4);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 1, 0, kLen, p.server.addr(8192), p.server.mr->rkey), 0);
  auto w = poll_n(p.client.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(w[0].opcode, IBV_WC_RDMA_WRITE);
  // A WRITE completes only after the peer placed it.
  EXPECT_TRUE(same(p.server.buf, 8192, p.client.buf, 0, kLen));
  fill(p.server.buf, 300000, kLen, 5);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_READ, 2, 200000, kLen, p.server.addr(300000), p.server.mr->rkey), 0);
  auto r = poll_n(p.client.cq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(r[0].byte_len, kLen);
  EXPECT_TRUE(same(p.client.buf, 200000, p.server.buf, 300000, kLen));
  // Nothing surfaces at the passive side's CQ for one-sided operations.
  EXPECT_TRUE(poll_for(p.server.cq, 50).empty());
}

TEST_F(Data, ImmediateAndInvalidate) {
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(p.server.post_recv(2, 64, 64), 0);
  ASSERT_EQ(p.server.post_recv(3, 128, 64), 0);
  ibv_sge s{p.client.addr(0), 16, p.client.mr->lkey};
  ibv_send_wr wr[3] = {};
  wr[0].opcode = IBV_WR_SEND_WITH_IMM;
  wr[0].imm_data = htonl(0x1234);
  wr[1].opcode = IBV_WR_SEND_WITH_INV;
  wr[1].invalidate_rkey = 0x4242;
  wr[2].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr[2].imm_data = htonl(0x5678);
  wr[2].wr.rdma.remote_addr = p.server.addr(4096);
  wr[2].wr.rdma.rkey = p.server.mr->rkey;
  for (int i = 0; i < 3; ++i) {
    wr[i].wr_id = 10u + static_cast<unsigned>(i);
    wr[i].sg_list = &s;
    wr[i].num_sge = 1;
    wr[i].send_flags = IBV_SEND_SIGNALED;
    wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
  }
  fill(p.client.buf, 0, 16, 9);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(p.client.qp(), wr, &bad), 0);
  auto r = poll_n(p.server.cq, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(r[0].imm_data, htonl(0x1234));
  EXPECT_TRUE(r[1].wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(r[1].invalidated_rkey, 0x4242u);
  EXPECT_EQ(r[2].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(r[2].imm_data, htonl(0x5678));
  EXPECT_TRUE(same(p.server.buf, 4096, p.client.buf, 0, 16));
  EXPECT_EQ(poll_n(p.client.cq, 3).size(), 3u);
}

// NVMe-oF: the target's WRITE data must be visible before the RECV completion
// of the response SEND posted after it, in one post list.
TEST_F(Data, WriteThenSendVisibility) {
  constexpr int kRounds = 200;
  for (int i = 0; i < kRounds; ++i) {
    uint32_t len = 512u + static_cast<uint32_t>(i) * 997u % 60000u;
    ASSERT_EQ(p.client.post_recv(static_cast<uint64_t>(i), 900000, 64), 0);
    fill(p.server.buf, 0, len, static_cast<uint8_t>(i));
    fill(p.server.buf, 800000, 64, static_cast<uint8_t>(i + 1));
    ASSERT_EQ(p.server.post_write_then_send(0, len, p.client.addr(0), p.client.mr->rkey, 800000, 64), 0);
    auto r = poll_n(p.client.cq, 1);
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].status, IBV_WC_SUCCESS);
    ASSERT_TRUE(same(p.client.buf, 0, p.server.buf, 0, len)) << "round " << i;
    ASSERT_EQ(poll_n(p.server.cq, 1).size(), 1u);  // only the signaled SEND
  }
}

TEST_F(Data, UnsignaledWrsRetireSilentlyAndFreeSlots) {
  // Many more WRs than the send queue holds: unsignaled ones must free slots.
  constexpr int kTotal = 5 * kQueueDepth;
  int signaled = 0;
  for (int i = 0; i < kTotal; ++i) {
    bool sig = (i % 16) == 15;
    int rc = p.client.post(IBV_WR_RDMA_WRITE, static_cast<uint64_t>(i), 0, 256, p.server.addr(0), p.server.mr->rkey,
                           sig ? IBV_SEND_SIGNALED : 0);
    ASSERT_EQ(rc, 0) << "WR " << i;
    if (sig) {
      ++signaled;
      auto w = poll_n(p.client.cq, 1);
      ASSERT_EQ(w.size(), 1u);
      EXPECT_EQ(w[0].wr_id, static_cast<uint64_t>(i));
    }
  }
  EXPECT_TRUE(poll_for(p.client.cq, 50).empty());
  EXPECT_EQ(signaled, kTotal / 16);
}

TEST_F(Data, SendQueueFullReturnsEnomem) {
  // No receives posted and rnr_retry 7: SENDs park at the peer and stay outstanding.
  int rc = 0;
  int n = 0;
  for (; n < kQueueDepth + 1; ++n) {
    rc = p.client.post(IBV_WR_SEND, static_cast<uint64_t>(n), 0, 8);
    if (rc) break;
  }
  EXPECT_EQ(rc, ENOMEM);
  EXPECT_EQ(n, kQueueDepth);
  // Posting receives releases them, in order.
  for (int i = 0; i < kQueueDepth; ++i) ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), 64u * i, 64), 0);
  auto r = poll_n(p.server.cq, kQueueDepth);
  ASSERT_EQ(r.size(), static_cast<std::size_t>(kQueueDepth));
  auto s = poll_n(p.client.cq, kQueueDepth);
  ASSERT_EQ(s.size(), static_cast<std::size_t>(kQueueDepth));
  for (int i = 0; i < kQueueDepth; ++i) EXPECT_EQ(s[i].wr_id, static_cast<uint64_t>(i));
}

// What a host that sleeps between polls relies on: a non-blocking channel fd
// reports "nothing yet" with EAGAIN, poll() wakes for the first completion after
// arming, and arming is one-shot (the next completion raises no event until
// the CQ is armed again).
TEST_F(Data, CompletionChannelNonBlockingAndOneShot) {
  const int fd = p.client.comp->fd;
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(p.client.comp, &cq, &ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(ibv_req_notify_cq(p.client.cq, 0), 0);
  pollfd pf{fd, POLLIN, 0};
  EXPECT_EQ(poll(&pf, 1, 50), 0) << "an event without a completion";
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64), 0);
  ASSERT_EQ(poll(&pf, 1, kWaitMs), 1);
  ASSERT_EQ(ibv_get_cq_event(p.client.comp, &cq, &ctx), 0);
  EXPECT_EQ(cq, p.client.cq);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll_n(p.client.cq, 1).size(), 1u);
  // Not re-armed: a second completion lands in the CQ without an event.
  ASSERT_EQ(p.server.post_recv(3, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 4, 0, 64), 0);
  EXPECT_EQ(poll_n(p.client.cq, 1).size(), 1u);
  EXPECT_EQ(poll(&pf, 1, 50), 0) << "an event although the CQ was not re-armed";
  EXPECT_EQ(ibv_get_cq_event(p.client.comp, &cq, &ctx), -1);
}

// A CQ destroyed with its event still unread in the channel: the event is
// dropped, as the kernel drops it (a host tearing queues down for a reconnect
// reads its channel afterwards; it must not get the dead CQ back).
TEST_F(Data, EventOfADestroyedCqIsDropped) {
  const int fd = p.client.comp->fd;
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  ASSERT_EQ(ibv_req_notify_cq(p.client.cq, 0), 0);
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64), 0);
  pollfd pf{fd, POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, kWaitMs), 1) << "no event to leave unread";
  rdma_destroy_qp(p.client.id);
  ASSERT_EQ(ibv_destroy_cq(p.client.cq), 0);
  p.client.cq = nullptr;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(p.client.comp, &cq, &ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(Data, CompletionChannelWakesPoller) {
  ASSERT_EQ(ibv_req_notify_cq(p.server.cq, 0), 0);
  ASSERT_EQ(p.server.post_recv(1, 0, 64), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 64), 0);
  pollfd pf{p.server.comp->fd, POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, kWaitMs), 1);
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(p.server.comp, &cq, &ctx), 0);
  EXPECT_EQ(cq, p.server.cq);
  EXPECT_EQ(ctx, &p.server);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll_n(p.server.cq, 1).size(), 1u);
}

// The TCP connections carrying the QPs must not be paced: BBR (some systems'
// default) paces on a timer, which cost a third of the large-read bandwidth on
// loopback. Only a system whose default is not cubic can catch a regression
// here; elsewhere every socket is cubic anyway.
TEST_F(Data, ConnectionsUseCubicNotAPacingCongestionControl) {
  std::ifstream available("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::string names;
  std::getline(available, names);
  if (names.find("cubic") == std::string::npos) GTEST_SKIP() << "this kernel has no cubic: " << names;
  std::ifstream default_cc("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string system_default;
  std::getline(default_cc, system_default);
  SCOPED_TRACE("the system's default congestion control: " + system_default);
  int connections = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    int type = 0;
    int listening = 0;
    int protocol = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof protocol;
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 || protocol != IPPROTO_TCP) continue;
    len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening != 0) continue;
    char name[16] = {};
    len = sizeof name;
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0) << std::strerror(errno);
    EXPECT_STREQ(name, "cubic") << "fd " << fd;
    ++connections;
  }
  EXPECT_GE(connections, 2) << "both ends of the pair's connection";
}

TEST(DataRnr, FiniteRetryFailsWithRnrRetryExceeded) {
  Pair p;
  PairOptions o;
  o.rnr_retry = 1;
  ASSERT_TRUE(p.connect(o));
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 1, 0, 8), 0);
  ASSERT_EQ(p.client.post(IBV_WR_SEND, 2, 0, 8), 0);
  auto w = poll_n(p.client.cq, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(w[1].status, IBV_WC_WR_FLUSH_ERR);
}

TEST(DataCq, OverflowRaisesCqErrorEvent) {
  Pair p;
  ASSERT_TRUE(p.connect());
  // The CQ holds 2 * kQueueDepth entries; keep producing completions without
  // polling until the overrun is reported (bounded: ~1000 short waits).
  pollfd pf{p.client.id->verbs->async_fd, POLLIN, 0};
  bool reported = false;
  for (int i = 0; i < 1000 && !reported; ++i) {
    (void)p.client.post(IBV_WR_RDMA_WRITE, 1, 0, 8, p.server.addr(0), p.server.mr->rkey);  // ENOMEM while full
    reported = poll(&pf, 1, 5) == 1;
  }
  ASSERT_TRUE(reported);
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(p.client.id->verbs, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(ev.element.cq, p.client.cq);
  ibv_ack_async_event(&ev);
}

}  // namespace
}  // namespace svt
