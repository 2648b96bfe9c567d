// Cross-process conformance: the peer (sv_peer) is a separate process with its
// own softverbs instance; the fabric between them is loopback TCP.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"
#include "peer.h"

extern char** environ;

namespace svt {
namespace {

std::string sibling(const char* name) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(".");
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

// A running sv_peer; killed (and reaped) on destruction so nothing leaks.
class PeerProcess {
 public:
  // extra_env: "NAME=value" entries added to the inherited environment (replacing
  // its entry of that name).
  explicit PeerProcess(const std::string& mode, std::vector<std::string> extra_env = {}) {
    // sv_peer is built next to this test binary (SV_PEER overrides).
    std::string exe = std::getenv("SV_PEER") ? std::getenv("SV_PEER") : sibling("sv_peer");
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('=') + 1);
      bool replaced = false;
      for (const std::string& x : extra_env) replaced = replaced || x.rfind(name, 0) == 0;
      if (!replaced) env.push_back(entry);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string m = mode;
    char* argv[] = {exe.data(), m.data(), nullptr};
    if (posix_spawn(&pid_, exe.c_str(), &fa, nullptr, argv, envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    unsigned p = 0;
    if (f && std::fscanf(f, "%u", &p) == 1) port_ = static_cast<uint16_t>(p);
    if (f) std::fclose(f);
  }
  ~PeerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  uint16_t port() const { return port_; }
  void kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Waits (bounded) for a clean exit; returns the exit code or -1.
  int wait_exit(int timeout_ms = kWaitMs) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      usleep(10 * 1000);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// The active side against a peer process.
struct Client {
  Side s;
  PeerInfo peer{};
  CmEvent est;
  bool connect(uint16_t port, rdma_cm_event_type want = RDMA_CM_EVENT_ESTABLISHED) {
    s.ch = rdma_create_event_channel();
    EXPECT_EQ(rdma_create_id(s.ch, &s.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in d = loopback("127.0.0.1", port);
    EXPECT_EQ(rdma_resolve_addr(s.id, nullptr, reinterpret_cast<sockaddr*>(&d), kWaitMs), 0);
    expect_event(s.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    EXPECT_EQ(rdma_resolve_route(s.id, kWaitMs), 0);
    expect_event(s.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    s.setup_qp(s.id);
    const char hello[kPdataLen] = "nvme-of-style connect request";
    rdma_conn_param cp{};
    cp.private_data = hello;
    cp.private_data_len = kPdataLen;
    cp.responder_resources = cp.initiator_depth = 4;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    EXPECT_EQ(rdma_connect(s.id, &cp), 0);
    est = expect_event(s.ch, want);
    if (est.type != want) return false;
    if (want == RDMA_CM_EVENT_ESTABLISHED && est.pdata.size() >= sizeof peer)
      std::memcpy(&peer, est.pdata.data(), sizeof peer);
    return true;
  }
  // Sends a command capsule and waits for the reply capsule.
  Capsule call(Capsule c) {
    constexpr std::size_t kCmd = kBufBytes - 128, kReply = kBufBytes - 64;
    EXPECT_EQ(s.post_recv(77, kReply, sizeof(Capsule)), 0);
    std::memcpy(s.buf.data() + kCmd, &c, sizeof c);
    EXPECT_EQ(s.post(IBV_WR_SEND, 78, kCmd, sizeof c), 0);
    Capsule r{};
    r.status = 99;
    auto wc = poll_n(s.cq, 2);
    EXPECT_EQ(wc.size(), 2u);
    for (const ibv_wc& w : wc) {
      EXPECT_EQ(w.status, IBV_WC_SUCCESS) << ibv_wc_status_str(w.status);
      if (w.opcode == IBV_WC_RECV) std::memcpy(&r, s.buf.data() + kReply, sizeof r);
    }
    return r;
  }
};

TEST(CrossProcess, AllWorkRequestTypesByteForByte) {
  PeerProcess peer("serve");
  ASSERT_NE(peer.port(), 0) << "sv_peer did not start";
  Client c;
  ASSERT_TRUE(c.connect(peer.port()));
  ASSERT_EQ(c.peer.len, 8u * 1024 * 1024 - 4096);
  for (uint32_t len : {64u, 4096u, 128u * 1024}) {
    // WRITE into the peer, the peer verifies.
    for (uint32_t i = 0; i < len; ++i) c.s.buf[i] = pattern(len, i);
    ASSERT_EQ(c.s.post(IBV_WR_RDMA_WRITE, 1, 0, len, c.peer.addr + 4096, c.peer.rkey), 0);
    ASSERT_EQ(poll_n(c.s.cq, 1).size(), 1u);
    Capsule v{};
    v.op = static_cast<uint32_t>(PeerOp::kVerify);
    v.len = len;
    v.seed = len;
    v.offset = 4096;
    EXPECT_EQ(c.call(v).status, 0u) << "peer saw different bytes, len " << len;
    // READ them back.
    ASSERT_EQ(c.s.post(IBV_WR_RDMA_READ, 2, 300000, len, c.peer.addr + 4096, c.peer.rkey), 0);
    auto r = poll_n(c.s.cq, 1);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(std::memcmp(c.s.buf.data() + 300000, c.s.buf.data(), len), 0);
    // The peer WRITEs into us then SENDs: data visible at the RECV completion.
    Capsule wb{};
    wb.op = static_cast<uint32_t>(PeerOp::kWriteBack);
    wb.len = len;
    wb.seed = len + 1;
    wb.offset = 8192;
    wb.raddr = c.s.addr(500000);
    wb.rkey = c.s.mr->rkey;
    EXPECT_EQ(c.call(wb).status, 0u);
    bool ok = true;
    for (uint32_t i = 0; i < len; ++i) ok = ok && c.s.buf[500000 + i] == pattern(len + 1, i);
    EXPECT_TRUE(ok) << "WRITE data not visible at RECV completion, len " << len;
    // The peer READs from us.
    for (uint32_t i = 0; i < len; ++i) c.s.buf[600000 + i] = pattern(len + 2, i);
    Capsule rd{};
    rd.op = static_cast<uint32_t>(PeerOp::kReadFrom);
    rd.len = len;
    rd.seed = len + 2;
    rd.offset = 1 << 20;
    rd.raddr = c.s.addr(600000);
    rd.rkey = c.s.mr->rkey;
    EXPECT_EQ(c.call(rd).status, 0u);
  }
  ASSERT_EQ(rdma_disconnect(c.s.id), 0);
  expect_event(c.s.ch, RDMA_CM_EVENT_DISCONNECTED);
  EXPECT_EQ(peer.wait_exit(), 0);
}

TEST(CrossProcess, RejectWithPrivateData) {
  PeerProcess peer("reject");
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port(), RDMA_CM_EVENT_REJECTED));
  EXPECT_EQ(c.est.status, 28);
  ASSERT_GE(c.est.pdata.size(), 4u);
  EXPECT_EQ(std::memcmp(c.est.pdata.data(), "nope", 4), 0);
}

TEST(CrossProcess, PeerKilledMidTransfer) {
  PeerProcess peer("stall");
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port()));
  // The peer posts no receives: these SENDs stay in flight (RNR, retry forever).
  constexpr int kInFlight = 8;
  for (int i = 0; i < kInFlight; ++i) ASSERT_EQ(c.s.post(IBV_WR_SEND, static_cast<uint64_t>(i), 0, 64), 0);
  EXPECT_TRUE(poll_for(c.s.cq, 100).empty());
  peer.kill9();
  auto wc = poll_n(c.s.cq, kInFlight);
  ASSERT_EQ(wc.size(), static_cast<std::size_t>(kInFlight));
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  for (int i = 1; i < kInFlight; ++i) EXPECT_EQ(wc[i].status, IBV_WC_WR_FLUSH_ERR);
  expect_event(c.s.ch, RDMA_CM_EVENT_DISCONNECTED);
  expect_event(c.s.ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
  EXPECT_FALSE(get_event(c.s.ch, 200).has_value()) << "DISCONNECTED must be reported exactly once";
}

// Transport retry emulation: a request the peer never acknowledges fails with
// RETRY_EXC_ERR once (retry_cnt + 1) x 4.096 us x 2^timeout has passed, with the
// ACK timeout set through rdma_set_option (as NVMe-oF hosts do) and visible in
// ibv_query_qp. (The stall peer posts no receives: its SENDs stay unacknowledged.)
TEST(CrossProcess, AckTimeoutBoundsAnUnacknowledgedRequest) {
  PeerProcess peer("stall");
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port()));
  uint8_t timeout = 13;  // 33.5 ms per try, 268 ms with 7 retries
  ASSERT_EQ(rdma_set_option(c.s.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof timeout), 0);
  uint16_t wrong_size = 13;
  EXPECT_NE(rdma_set_option(c.s.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &wrong_size, sizeof wrong_size), 0);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(c.s.qp(), &attr, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &init), 0);
  EXPECT_EQ(attr.timeout, 13);
  EXPECT_EQ(attr.retry_cnt, 7);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(c.s.post(IBV_WR_SEND, 1, 0, 64), 0);
  ASSERT_EQ(c.s.post(IBV_WR_SEND, 2, 0, 64), 0);
  EXPECT_TRUE(poll_for(c.s.cq, 150).empty()) << "failed before the retry window ran out";
  auto wc = poll_n(c.s.cq, 2);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_GE(took, std::chrono::milliseconds(268));
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  expect_event(c.s.ch, RDMA_CM_EVENT_DISCONNECTED);
}

// Canary, second half: the peer really ran on softverbs and wrote its counters.
TEST(CrossProcess, StatsFileShowsWhatHappened) {
  std::string path = ::testing::TempDir() + "sv_stats_" + std::to_string(getpid()) + ".json";
  std::remove(path.c_str());
  {
    PeerProcess peer("serve", {"SOFTVERBS_STATS=" + path});
    ASSERT_NE(peer.port(), 0);
    Client c;
    ASSERT_TRUE(c.connect(peer.port()));
    Capsule rd{};
    rd.op = static_cast<uint32_t>(PeerOp::kReadFrom);
    rd.len = 4096;
    rd.offset = 0;
    rd.raddr = c.s.addr(0);
    rd.rkey = c.s.mr->rkey;
    for (uint32_t i = 0; i < 4096; ++i) c.s.buf[i] = pattern(0, i);
    EXPECT_EQ(c.call(rd).status, 0u);
    ASSERT_EQ(rdma_disconnect(c.s.id), 0);
    EXPECT_EQ(peer.wait_exit(), 0);
  }
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << "no stats file at " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string js = ss.str();
  EXPECT_NE(js.find("\"device\": \"softrdma0\""), std::string::npos) << js;
  EXPECT_NE(js.find("\"reads\": 1,"), std::string::npos) << "the peer used RDMA READ: " << js;
  EXPECT_NE(js.find("\"sends_in\": 1,"), std::string::npos) << js;
  std::remove(path.c_str());
}

// Faults configured through the environment at start (SOFTVERBS_FAULTS).
TEST(CrossProcess, FaultsFromEnvironment) {
  PeerProcess peer("serve", {"SOFTVERBS_FAULTS=reject,reason=28"});
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port(), RDMA_CM_EVENT_REJECTED));
  EXPECT_EQ(c.est.status, 28);
}

// One command over a SOFTVERBS_CTL socket; returns the reply line.
std::string control(const std::string& path, const std::string& cmd) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string line = cmd + "\n";
    (void)!write(fd, line.data(), line.size());
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) reply.assign(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return reply;
}

// Runtime faults from outside the process: the control socket drops the
// peer's connection mid-run; the client sees the loss.
TEST(CrossProcess, ControlSocketDropsConnection) {
  std::string sock = ::testing::TempDir() + "sv_ctl_" + std::to_string(getpid()) + ".sock";
  PeerProcess peer("serve", {"SOFTVERBS_CTL=" + sock});
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port()));
  EXPECT_EQ(control(sock, "fault bogus").rfind("error", 0), 0u);
  EXPECT_EQ(control(sock, "drop -1"), "ok 1\n");
  expect_event(c.s.ch, RDMA_CM_EVENT_DISCONNECTED);
  EXPECT_EQ(c.s.post(IBV_WR_SEND, 1, 0, 8), 0);
  auto w = poll_n(c.s.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_WR_FLUSH_ERR);
  std::remove(sock.c_str());
}

// Without SOFTVERBS_STATS (unset or empty) no record is kept, so a process that
// connects and closes forever does not grow; an on-demand dump says so.
TEST(CrossProcess, WithoutStatsNothingIsRecorded) {
  const std::string tag = std::to_string(getpid());
  const std::string sock = ::testing::TempDir() + "sv_ctl_nostats_" + tag + ".sock";
  const std::string path = ::testing::TempDir() + "sv_nostats_" + tag + ".json";
  PeerProcess peer("serve", {"SOFTVERBS_STATS=", "SOFTVERBS_CTL=" + sock});
  ASSERT_NE(peer.port(), 0);
  Client c;
  ASSERT_TRUE(c.connect(peer.port()));
  Capsule rd{};  // the peer's data path runs, and counts into nothing
  rd.op = static_cast<uint32_t>(PeerOp::kReadFrom);
  rd.len = 4096;
  rd.raddr = c.s.addr(0);
  rd.rkey = c.s.mr->rkey;
  for (uint32_t i = 0; i < rd.len; ++i) c.s.buf[i] = pattern(0, i);  // what the peer checks
  EXPECT_EQ(c.call(rd).status, 0u);
  EXPECT_EQ(control(sock, "stats " + path).rfind("ok", 0), 0u);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string js = ss.str();
  EXPECT_NE(js.find("\"recording\": false"), std::string::npos) << js;
  EXPECT_EQ(js.find("\"qp_num\""), std::string::npos) << js;
  EXPECT_EQ(js.find("\"handle\""), std::string::npos) << js;
  std::remove(path.c_str());
  std::remove(sock.c_str());
}

}  // namespace
}  // namespace svt
