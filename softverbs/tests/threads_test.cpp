// In-process with two application threads: a "target" thread serves requests
// (RDMA WRITE chained before the response SEND) while the main thread acts as
// the initiator.  Run under TSan this checks softverbs' own synchronisation and
// the visibility guarantee across threads.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "harness.h"

namespace svt {
namespace {

constexpr int kRounds = 300;
constexpr uint32_t kMaxLen = 64 * 1024;
constexpr std::size_t kReqOff = 900000, kRespOff = 900064, kDataOff = 0;

// Waits for one completion through the completion channel (bounded).
bool wait_one(Side& s, ibv_wc* wc) {
  for (int tries = 0; tries < 2; ++tries) {
    if (ibv_poll_cq(s.cq, 1, wc) == 1) return true;
    ibv_req_notify_cq(s.cq, 0);
    if (ibv_poll_cq(s.cq, 1, wc) == 1) return true;
    pollfd p{s.comp->fd, POLLIN, 0};
    if (poll(&p, 1, kWaitMs) != 1) return false;
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(s.comp, &cq, &ctx) != 0) return false;
    ibv_ack_cq_events(cq, 1);
  }
  return ibv_poll_cq(s.cq, 1, wc) == 1;
}

TEST(Threads, TargetThreadAndInitiatorThread) {
  Pair p;
  ASSERT_TRUE(p.connect());
  std::atomic<int> target_errors{0};
  ASSERT_EQ(p.server.post_recv(0, kReqOff, 64), 0);
  std::thread target([&] {
    for (int i = 0; i < kRounds; ++i) {
      ibv_wc wc{};
      // Skip our own send completions; stop at the next request.
      do {
        if (!wait_one(p.server, &wc) || wc.status != IBV_WC_SUCCESS) {
          ++target_errors;
          return;
        }
      } while (wc.opcode != IBV_WC_RECV);
      uint32_t len = 0;
      std::memcpy(&len, p.server.buf.data() + kReqOff, sizeof len);
      if (p.server.post_recv(0, kReqOff, 64) != 0) ++target_errors;
      for (uint32_t k = 0; k < len; ++k) p.server.buf[kDataOff + k] = static_cast<uint8_t>(i + k);
      if (p.server.post_write_then_send(kDataOff, len, p.client.addr(kDataOff), p.client.mr->rkey, kRespOff, 64) != 0) {
        ++target_errors;
      }
    }
  });
  int bad_rounds = 0;
  for (int i = 0; i < kRounds && target_errors == 0; ++i) {
    uint32_t len = 1 + static_cast<uint32_t>(i) * 211u % kMaxLen;
    ASSERT_EQ(p.client.post_recv(static_cast<uint64_t>(i), kRespOff, 64), 0);
    std::memcpy(p.client.buf.data() + kReqOff, &len, sizeof len);
    ASSERT_EQ(p.client.post(IBV_WR_SEND, 0, kReqOff, 64, 0, 0, 0), 0);
    ibv_wc wc{};
    ASSERT_TRUE(wait_one(p.client, &wc)) << "round " << i;
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IBV_WC_RECV);
    for (uint32_t k = 0; k < len; ++k)
      if (p.client.buf[kDataOff + k] != static_cast<uint8_t>(i + k)) {
        ++bad_rounds;
        break;
      }
  }
  target.join();
  EXPECT_EQ(target_errors.load(), 0);
  EXPECT_EQ(bad_rounds, 0) << "WRITE data not visible at the response's RECV completion";
}

}  // namespace
}  // namespace svt
