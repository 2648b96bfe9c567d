// Per-QP and per-CQ counters, dumped as JSON to SOFTVERBS_STATS at exit or on
// demand (softverbs_stats_dump).  Records are kept only when SOFTVERBS_STATS is
// set; otherwise every object counts into a sink that is never reported, so the
// data path does not test whether stats are on, and a process that creates and
// destroys objects forever (a service reconnecting, fio jobs) keeps nothing.
//
// A destroyed object's record stays for the dump, but only the newest
// kKeptDestroyed of them: older ones are folded into totals, which the dump
// reports apart, so the dump and its cost stay bounded too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace sv {

struct QpStats {
  uint32_t qp_num = 0;
  std::string device;
  std::string local;  // "ip:port" of the connection, once connected
  std::string remote;
  uint64_t sends = 0, writes = 0, reads = 0, recvs = 0;  // requests posted / receives completed
  uint64_t writes_in = 0, reads_in = 0, sends_in = 0;    // served as responder
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
  static constexpr std::size_t kKeptDestroyed = 256;  // per kind

  // Decided once, before the first object is created.
  void keep_records(bool keep) { keep_ = keep; }
  bool keeps_records() const { return keep_; }
  // Never null: the object's record, or the sink when no records are kept.
  QpStats* add_qp(uint32_t qp_num, const std::string& device);
  CqStats* add_cq(uint32_t handle, int cqe);
  // The object is gone; the pointer add_* returned is not used again.
  void retire(QpStats* s);
  void retire(CqStats* s);
  bool empty() const { return qps_.empty() && cqs_.empty() && folded_qps_ == 0 && folded_cqs_ == 0; }
  // A forked child: the parent's objects are not its to report.
  void clear();
  std::string to_json(uint64_t faults_fired) const;
  // Writes the JSON atomically (tmp + rename); "%p" in path becomes the pid.
  bool dump(const std::string& path, uint64_t faults_fired) const;

 private:
  bool keep_ = false;
  // By qp_num and handle, which grow with every object: the dump lists records
  // in creation order, and pointers stay valid while others come and go.
  std::map<uint32_t, QpStats> qps_;
  std::map<uint32_t, CqStats> cqs_;
  std::deque<uint32_t> destroyed_qps_, destroyed_cqs_;  // oldest first
  QpStats folded_qp_;                                   // counters of the records folded away
  CqStats folded_cq_;
  uint64_t folded_qps_ = 0, folded_cqs_ = 0;
  QpStats qp_sink_;
  CqStats cq_sink_;
};

}  // namespace sv
