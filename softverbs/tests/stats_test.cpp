// Per-CQ counters in the stats dump: every completion a CQ produced (what a
// test counts to check "one CQE per I/O"), and the entries an overrun dropped;
// per QP, the payload bytes that went through the receive staging buffer.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"
#include "softverbs/control.h"

namespace svt {
namespace {

std::string stats_json() {
  std::string path = ::testing::TempDir() + "sv_stats_" + std::to_string(getpid()) + ".json";
  if (softverbs_stats_dump(path.c_str()) != 0) return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

// A numeric field of the "qps" entry for qp in the stats dump, or -1 if absent.
long long qp_counter(ibv_qp* qp, const std::string& field) {
  const std::string js = stats_json();
  const std::size_t at = js.find("{\"qp_num\": " + std::to_string(qp->qp_num) + ",");
  if (at == std::string::npos) return -1;
  const std::size_t end = js.find('}', at);
  const std::size_t key = js.find("\"" + field + "\": ", at);
  if (key == std::string::npos || key > end) return -1;
  return std::atoll(js.c_str() + key + field.size() + 4);
}

// The "cqs" entry of the stats dump for cq, as "completions=N overruns=M", or "" if absent.
std::string cq_counters(ibv_cq* cq) {
  const std::string js = stats_json();
  const std::size_t at = js.find("{\"handle\": " + std::to_string(cq->handle) + ",");
  if (at == std::string::npos) return "";
  unsigned long long completions = 0, overruns = 0;
  if (std::sscanf(js.c_str() + at, "{\"handle\": %*u, \"cqe\": %*d, \"completions\": %llu, \"overruns\": %llu",
                  &completions, &overruns) != 2)
    return "";
  return "completions=" + std::to_string(completions) + " overruns=" + std::to_string(overruns);
}

// Sums the numbers following "key": in js[from, to).
uint64_t sum(const std::string& js, std::size_t from, std::size_t to, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  uint64_t total = 0;
  for (std::size_t at = js.find(needle, from); at < to; at = js.find(needle, at + 1))
    total += std::strtoull(js.c_str() + at + needle.size(), nullptr, 10);
  return total;
}

std::size_t count(const std::string& js, std::size_t from, std::size_t to, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = js.find(needle, from); at < to; at = js.find(needle, at + 1)) ++n;
  return n;
}

// What a dump holds, records listed and folded together.
struct Totals {
  uint64_t qps = 0, qp_flushed = 0, cqs = 0, cq_completions = 0;
  std::size_t listed_destroyed_qps = 0, listed_destroyed_cqs = 0;
  bool folded = false;
};

Totals totals(const std::string& js) {
  const std::size_t qps = js.find("\"qps\": [");
  const std::size_t cqs = js.find("\"cqs\": [", qps);
  const std::size_t folded = std::min(js.find("\"folded\": {", cqs), js.size());
  const std::size_t cq_totals = std::min(js.find("\"cq_totals\": {", folded), js.size());
  Totals t;
  t.qps = count(js, qps, cqs, "\"qp_num\": ") + sum(js, folded, cq_totals, "qps");
  t.qp_flushed = sum(js, qps, cqs, "flushed") + sum(js, folded, cq_totals, "flushed");
  t.cqs = count(js, cqs, folded, "\"handle\": ") + sum(js, folded, cq_totals, "cqs");
  t.cq_completions = sum(js, cqs, folded, "completions") + sum(js, cq_totals, js.size(), "completions");
  t.listed_destroyed_qps = count(js, qps, cqs, "\"destroyed\": true");
  t.listed_destroyed_cqs = count(js, cqs, folded, "\"destroyed\": true");
  t.folded = folded < js.size();
  return t;
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

// What an NVMe-oF target sends for large reads, many in one post list: RDMA
// WRITEs of 128 KiB, each followed by a 16-byte response SEND.  The receiver
// reads large payloads from the socket straight into memory; only the first
// read's batch and a small read-ahead after each payload may pass through the
// staging buffer (copied twice).  Before the read-ahead was bounded, half of
// each payload did.
TEST(QpStats, LargeWritePayloadsBypassStaging) {
  Pair p;
  ASSERT_TRUE(p.connect());
  constexpr uint32_t kLen = 128 * 1024;
  constexpr int kPerList = 6;  // 768 KiB of data per post list
  constexpr int kLists = 4;
  constexpr uint32_t kResp = 16;
  constexpr std::size_t kRespOff = kPerList * kLen;  // responses after the data, in both buffers
  for (std::size_t i = 0; i < kPerList * kLen; ++i) p.client.buf[i] = static_cast<uint8_t>(i * 13 + i / 4096);
  for (int list = 0; list < kLists; ++list) {
    for (int i = 0; i < kPerList; ++i)
      ASSERT_EQ(p.server.post_recv(static_cast<uint64_t>(i), kRespOff + static_cast<std::size_t>(i) * kResp, kResp), 0);
    ibv_sge sge[2 * kPerList];
    ibv_send_wr wr[2 * kPerList]{};
    for (int i = 0; i < kPerList; ++i) {
      const std::size_t off = static_cast<std::size_t>(i) * kLen;
      sge[2 * i] = {p.client.addr(off), kLen, p.client.mr->lkey};
      sge[2 * i + 1] = {p.client.addr(kRespOff), kResp, p.client.mr->lkey};
      wr[2 * i].opcode = IBV_WR_RDMA_WRITE;
      wr[2 * i].wr.rdma.remote_addr = p.server.addr(off);
      wr[2 * i].wr.rdma.rkey = p.server.mr->rkey;
      wr[2 * i + 1].opcode = IBV_WR_SEND;
      wr[2 * i + 1].send_flags = IBV_SEND_SIGNALED;
      for (int k : {2 * i, 2 * i + 1}) {
        wr[k].sg_list = &sge[k];
        wr[k].num_sge = 1;
        wr[k].next = k + 1 < 2 * kPerList ? &wr[k + 1] : nullptr;
      }
    }
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(p.client.qp(), wr, &bad), 0);
    ASSERT_EQ(poll_n(p.server.cq, kPerList).size(), static_cast<std::size_t>(kPerList));
    ASSERT_EQ(poll_n(p.client.cq, kPerList).size(), static_cast<std::size_t>(kPerList));
  }
  EXPECT_EQ(std::memcmp(p.server.buf.data(), p.client.buf.data(), kPerList * kLen), 0);
  const long long total = static_cast<long long>(kLists) * kPerList * (kLen + kResp);
  EXPECT_EQ(qp_counter(p.server.qp(), "bytes_in"), total);
  const long long staged = qp_counter(p.server.qp(), "bytes_staged");
  ASSERT_GE(staged, 0);
  // The first read's batch (the staging buffer, 64 KiB) plus 1/32 of the data.
  EXPECT_LE(staged, 64 * 1024 + total / 32) << "of " << total << " bytes";
}

// A process that creates and destroys QPs and CQs forever (a service that
// reconnects, one fio job after another) keeps only the newest 256 destroyed
// records of each kind; older ones are folded into totals, so no count is lost.
TEST(Stats, DestroyedRecordsAreBoundedAndFoldedIntoTotals) {
  ASSERT_NE(std::getenv("SOFTVERBS_STATS"), nullptr) << "records are kept only with SOFTVERBS_STATS set";
  constexpr uint64_t kCycles = 300;
  ibv_device** list = ibv_get_device_list(nullptr);
  ASSERT_NE(list, nullptr);
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  const Totals before = totals(stats_json());
  for (uint64_t i = 0; i < kCycles; ++i) {
    ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &qa);
    ASSERT_NE(qp, nullptr);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
    // A SEND on an errored QP completes at once, flushed: one count on each object.
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = i;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    ASSERT_EQ(poll_n(cq, 1).size(), 1u);
    ASSERT_EQ(ibv_destroy_qp(qp), 0);
    ASSERT_EQ(ibv_destroy_cq(cq), 0);
  }
  const std::string js = stats_json();
  const Totals after = totals(js);
  EXPECT_LE(after.listed_destroyed_qps, 256u) << js.size() << " bytes of stats";
  EXPECT_LE(after.listed_destroyed_cqs, 256u);
  EXPECT_TRUE(after.folded) << js.substr(js.size() > 400 ? js.size() - 400 : 0);
  EXPECT_EQ(after.qps - before.qps, kCycles);
  EXPECT_EQ(after.qp_flushed - before.qp_flushed, kCycles);
  EXPECT_EQ(after.cqs - before.cqs, kCycles);
  EXPECT_EQ(after.cq_completions - before.cq_completions, kCycles);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
}

}  // namespace
}  // namespace svt
