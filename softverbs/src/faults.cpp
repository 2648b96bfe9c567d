#include "faults.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <sstream>

#include "config.h"
#include "conn.h"
#include "sockaddr.h"

namespace sv {
namespace {

bool parse_int(const std::string& v, int64_t* out) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 0);
  if (v.empty() || *end != '\0') return false;
  *out = x;
  return true;
}

bool parse_rule(const std::string& text, FaultRule* r, std::string* err) {
  std::stringstream ss(text);
  std::string tok;
  std::getline(ss, tok, ',');
  static const std::pair<const char*, FaultAction> kActions[] = {
      {"drop", FaultAction::kDrop},       {"delay", FaultAction::kDelay},   {"nak", FaultAction::kNak},
      {"corrupt", FaultAction::kCorrupt}, {"reject", FaultAction::kReject}, {"ignore", FaultAction::kIgnore},
      {"fail", FaultAction::kFail},       {"cap", FaultAction::kCap}};
  bool found = false;
  for (const auto& [name, act] : kActions)
    if (tok == name) r->action = act, found = true;
  if (!found) return *err = "unknown action '" + tok + "'", false;
  while (std::getline(ss, tok, ',')) {
    auto eq = tok.find('=');
    if (eq == std::string::npos) return *err = "expected key=value, got '" + tok + "'", false;
    std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
    int64_t n = 0;
    bool num = parse_int(v, &n);
    if (k == "obj")
      r->obj = v;
    else if (k == "op")
      r->op = v == "write" ? 1 : v == "read" ? 2 : v == "send" ? 3 : v == "any" ? 0 : -1;
    else if (!num)
      return *err = "bad number in '" + tok + "'", false;
    else if (k == "port")
      r->port = static_cast<int>(n);
    else if (k == "after")
      r->after = n;
    else if (k == "ms")
      r->ms = static_cast<int>(n);
    else if (k == "nth")
      r->nth = n;
    else if (k == "status")
      r->status = static_cast<int>(n);
    else if (k == "reason")
      r->reason = static_cast<int>(n);
    else if (k == "count")
      r->count = n;
    else if (k == "times" && n < 0)
      return *err = "times must not be negative", false;
    else if (k == "times")
      r->drops_left = std::make_shared<int64_t>(n);
    else if (k == "byte")
      r->byte = n;
    else if (k == "max_qp_wr")
      r->max_qp_wr = static_cast<int>(n);
    else if (k == "max_cqe")
      r->max_cqe = static_cast<int>(n);
    else if (k == "max_sge")
      r->max_sge = static_cast<int>(n);
    else
      return *err = "unknown key '" + k + "'", false;
  }
  if (r->drops_left && r->action != FaultAction::kDrop) return *err = "times is for drop rules", false;
  if (r->op < 0) return *err = "op must be write, read, send or any", false;
  if (r->action == FaultAction::kFail && r->obj != "pd" && r->obj != "mr" && r->obj != "cq" && r->obj != "qp")
    return *err = "fail needs obj=pd|mr|cq|qp", false;
  return true;
}

int port_of(const sockaddr_storage& a, int offset) { return sa_port(a) - offset; }

}  // namespace

bool Faults::add(const std::string& spec, std::string* err) {
  std::vector<FaultRule> parsed;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    FaultRule r;
    if (!parse_rule(item, &r, err)) return false;
    parsed.push_back(r);
  }
  rules_.insert(rules_.end(), parsed.begin(), parsed.end());
  return true;
}

bool Faults::matches(const FaultRule& r, const Conn* c, int off) {
  return r.port < 0 || (c && (port_of(c->local, off) == r.port || port_of(c->peer, off) == r.port));
}

void Faults::apply_conn(Conn* c, int off) {
  for (FaultRule& r : rules_) {
    if (!matches(r, c, off)) continue;
    if (r.action == FaultAction::kDrop) {
      c->faults.drop_after_msgs = r.after;
      c->faults.drops_left = r.drops_left;
      ++r.fired;
    } else if (r.action == FaultAction::kDelay) {
      c->faults.delay_ms = r.ms;
      ++r.fired;
    }
  }
}

bool ConnFaults::drop_now() {
  if (++msgs_sent != static_cast<uint64_t>(drop_after_msgs)) return false;
  if (!drops_left) return true;
  if (*drops_left <= 0) return false;
  --*drops_left;
  return true;
}

int64_t ConnFaults::drop_armed_at() const {
  if (drop_after_msgs <= static_cast<int64_t>(msgs_sent) || (drops_left && *drops_left <= 0)) return -1;
  return drop_after_msgs;
}

bool Faults::should_fail(const char* obj) {
  for (FaultRule& r : rules_) {
    if (r.action == FaultAction::kFail && r.obj == obj && r.count > 0) {
      --r.count;
      ++r.fired;
      debug_log("fault: failing %s creation", obj);
      return true;
    }
  }
  return false;
}

bool Faults::nak(Conn* c, bool is_write, int off, int* status) {
  for (FaultRule& r : rules_) {
    if (r.action != FaultAction::kNak || !matches(r, c, off)) continue;
    if (r.op != 0 && r.op != (is_write ? 1 : 2)) continue;
    if (static_cast<int64_t>(++r.seen) != r.nth) continue;
    ++r.fired;
    *status = r.status;
    return true;
  }
  return false;
}

bool Faults::corrupt(Conn* c, bool is_write, int off, int64_t* byte) {
  for (FaultRule& r : rules_) {
    if (r.action != FaultAction::kCorrupt || !matches(r, c, off)) continue;
    if (r.op != 0 && r.op != (is_write ? 1 : 3)) continue;
    if (static_cast<int64_t>(++r.seen) != r.nth) continue;
    ++r.fired;
    *byte = r.byte;
    return true;
  }
  return false;
}

int Faults::on_connect_request(Conn* c, int off, int* reason) {
  for (FaultRule& r : rules_) {
    if (!matches(r, c, off)) continue;
    if (r.action == FaultAction::kReject) {
      ++r.fired;
      *reason = r.reason;
      return 1;
    }
    if (r.action == FaultAction::kIgnore) {
      ++r.fired;
      return 2;
    }
  }
  return 0;
}

void Faults::cap(ibv_device_attr* a) const {
  for (const FaultRule& r : rules_) {
    if (r.action != FaultAction::kCap) continue;
    if (r.max_qp_wr >= 0 && r.max_qp_wr < a->max_qp_wr) a->max_qp_wr = r.max_qp_wr;
    if (r.max_cqe >= 0 && r.max_cqe < a->max_cqe) a->max_cqe = r.max_cqe;
    if (r.max_sge >= 0 && r.max_sge < a->max_sge) a->max_sge = a->max_sge_rd = r.max_sge;
  }
}

uint64_t Faults::fired_total() const {
  uint64_t n = 0;
  for (const FaultRule& r : rules_) n += r.fired;
  return n;
}

}  // namespace sv
