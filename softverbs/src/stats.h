// Per-QP and per-CQ counters, kept after the QP or CQ is destroyed, dumped as
// JSON to SOFTVERBS_STATS at exit or on demand (softverbs_stats_dump).
#pragma once
#include <cstdint>
#include <deque>
#include <string>

namespace sv {

struct QpStats {
  uint32_t qp_num = 0;
  std::string device;
  std::string local;   // "ip:port" of the connection, once connected
  std::string remote;
  uint64_t sends = 0, writes = 0, reads = 0, recvs = 0;        // requests posted / receives completed
  uint64_t writes_in = 0, reads_in = 0, sends_in = 0;          // served as responder
  uint64_t bytes_out = 0, bytes_in = 0;
  uint64_t bytes_staged = 0;  // of bytes_in placed from the staging buffer (copied twice), not read direct
  uint64_t completions = 0, errors = 0, flushed = 0, rnr_parks = 0;
  bool destroyed = false;
};

// What a CQ produced: every entry pushed (successes, errors and flushes, of
// sends and receives alike), and entries dropped because the CQ was full.
struct CqStats {
  uint32_t handle = 0;  // ibv_cq.handle
  int cqe = 0;          // capacity asked for at creation
  uint64_t completions = 0, overruns = 0;
  bool destroyed = false;
};

class Stats {
 public:
  QpStats* add_qp(uint32_t qp_num, const std::string& device);
  CqStats* add_cq(uint32_t handle, int cqe);
  bool empty() const { return qps_.empty() && cqs_.empty(); }
  void clear() {
    qps_.clear();
    cqs_.clear();
  }
  std::string to_json(uint64_t faults_fired) const;
  // Writes the JSON atomically (tmp + rename); "%p" in path becomes the pid.
  bool dump(const std::string& path, uint64_t faults_fired) const;

 private:
  std::deque<QpStats> qps_;  // deque: pointers stay valid as it grows
  std::deque<CqStats> cqs_;
};

}  // namespace sv
