// Fault-injection rules: SOFTVERBS_FAULTS="rule;rule" at start, or
// softverbs_fault_add() at run time.  A rule is "action[,key=value]...":
//   drop,after=N[,port=P][,times=K] reset the connection after N data messages sent;
//                                   with times=K, only the first K connections that get
//                                   there (reconnects then run clean)
//   delay,ms=X[,port=P]             hold every outbound message X ms
//   nak,op=write|read|any[,nth=N][,status=S][,port=P]
//                                   answer the Nth incoming WRITE/READ with NAK status S
//   corrupt,op=write|send|any[,nth=N][,byte=K][,port=P]
//                                   flip byte K of the Nth outgoing WRITE/SEND payload
//   reject[,reason=R][,port=P]      auto-reject CONNECT_REQUESTs (active side: REJECTED R)
//   ignore[,port=P]                 silently drop CONNECT_REQUESTs (active side: UNREACHABLE)
//   fail,obj=pd|mr|cq|qp[,count=N]  the next N creations fail with ENOMEM
//   cap[,max_qp_wr=N][,max_cqe=N][,max_sge=N]   lower the device limits
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rdma.h"

namespace sv {

struct Conn;

enum class FaultAction { kDrop, kDelay, kNak, kCorrupt, kReject, kIgnore, kFail, kCap };

struct FaultRule {
  FaultAction action;
  int port = -1;  // RDMA port matched against either end; -1 = any
  int64_t after = 1;
  int ms = 0;
  int op = 0;  // nak: 0 any, 1 write, 2 read; corrupt: 0 any, 1 write, 3 send
  int64_t byte = 0;
  int64_t nth = 1;
  int status = IBV_WC_REM_ACCESS_ERR;
  int reason = 28;
  std::string obj;
  int64_t count = 1;
  // drop: resets left to make over every connection (shared with them: a
  // rule cleared while they live still counts); null = no limit.
  std::shared_ptr<int64_t> drops_left;
  int max_qp_wr = -1;
  int max_cqe = -1;
  int max_sge = -1;
  uint64_t seen = 0;   // matching events counted (nak: Nth)
  uint64_t fired = 0;  // how often the rule took effect
};

class Faults {
 public:
  // Parses and appends rules; on error returns false and leaves the set unchanged.
  bool add(const std::string& spec, std::string* err);
  void clear() { rules_.clear(); }
  // Installs drop/delay settings on a connection that just came up.
  void apply_conn(Conn* c, int port_offset);
  // Consumes one "fail,obj=..." credit.
  bool should_fail(const char* obj);
  // Responder side: does the incoming request get a NAK?  Sets *status.
  bool nak(Conn* c, bool is_write, int port_offset, int* status);
  // Requester side: corrupt this outgoing payload?  Sets *byte (index to flip).
  bool corrupt(Conn* c, bool is_write, int port_offset, int64_t* byte);
  // Passive side: 0 = deliver, 1 = reject with *reason, 2 = ignore.
  int on_connect_request(Conn* c, int port_offset, int* reason);
  void cap(ibv_device_attr* a) const;
  uint64_t fired_total() const;

 private:
  static bool matches(const FaultRule& r, const Conn* c, int port_offset);
  std::vector<FaultRule> rules_;
};

}  // namespace sv
