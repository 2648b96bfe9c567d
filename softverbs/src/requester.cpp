// Requester side of the data path: post_send, and retiring send-queue entries
// strictly in post order when the responder ACKs, NAKs or answers a READ.
#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "core.h"
#include "dataplane.h"
#include "memory.h"
#include "protocol.h"

namespace sv {
namespace {

constexpr uint8_t kCorruptMask = 0xff;  // fault "corrupt": every bit of the byte flips

struct OpInfo {
  Op wire;
  ibv_wc_opcode wc;
};

bool map_opcode(ibv_wr_opcode op, OpInfo* out) {
  switch (op) {
    case IBV_WR_SEND:
      *out = {Op::kSend, IBV_WC_SEND};
      return true;
    case IBV_WR_SEND_WITH_IMM:
      *out = {Op::kSendImm, IBV_WC_SEND};
      return true;
    case IBV_WR_SEND_WITH_INV:
      *out = {Op::kSendInv, IBV_WC_SEND};
      return true;
    case IBV_WR_RDMA_WRITE:
      *out = {Op::kWrite, IBV_WC_RDMA_WRITE};
      return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      *out = {Op::kWriteImm, IBV_WC_RDMA_WRITE};
      return true;
    case IBV_WR_RDMA_READ:
      *out = {Op::kReadReq, IBV_WC_RDMA_READ};
      return true;
    default:
      return false;
  }
}

void complete(Qp* qp, const SqEntry& e, ibv_wc_status st) {
  if (!e.signaled && st == IBV_WC_SUCCESS) return;  // unsignaled: retire silently
  ibv_wc wc{};
  wc.wr_id = e.wr_id;
  wc.status = st;
  wc.opcode = e.opcode;
  wc.byte_len = e.byte_len;
  wc.qp_num = qp->qp.qp_num;
  push_cqe(to_cq(qp->qp.send_cq), wc);
  ++qp->stats->completions;
}

// Retires entries acknowledged by a cumulative ACK up to msn (READs excluded:
// they finish only with their data).
void retire_acked(Qp* qp, uint32_t msn, bool inclusive) {
  while (!qp->sq.empty()) {
    const SqEntry& e = qp->sq.front();
    if (e.is_read || (inclusive ? e.msn > msn : e.msn >= msn)) break;
    complete(qp, e, IBV_WC_SUCCESS);
    qp->sq.pop_front();
  }
}

// Puts one WR on an errored QP: it completes at once with a flush error.
void flush_one(Qp* qp, const ibv_send_wr* wr, ibv_wc_opcode op) {
  SqEntry e;
  e.wr_id = wr->wr_id;
  e.opcode = op;
  e.signaled = true;
  complete(qp, e, IBV_WC_WR_FLUSH_ERR);
  ++qp->stats->flushed;
}

// SEND/WRITE payload with an SGE in GPU memory: the whole payload is copied
// out at post time (the socket cannot read device memory); the application may
// not change the buffer before the completion anyway.
bool gather_from_device(const ibv_send_wr* wr, const std::array<const Mr*, kMaxSge>& mrs, OutChunk* ch) {
  for (int i = 0; i < wr->num_sge; ++i) {
    const ibv_sge& s = wr->sg_list[i];
    if (s.length == 0) continue;
    std::size_t at = ch->owned.size();
    ch->owned.resize(at + s.length);
    if (!read_span(local_span(mrs[static_cast<std::size_t>(i)], s), ch->owned.data() + at)) return false;
  }
  return true;
}

// The retry window of the QP in ms (0: wait forever).
int64_t retry_window_ms(const Qp* qp) {
  if (qp->timeout == 0) return 0;
  const int64_t try_ns = kAckTimeoutUnitNs << qp->timeout;
  return (qp->retry_cnt + 1) * try_ns / 1000000;
}

void check_acks(uint64_t serial);

// While requests are outstanding, a timer looks every 1/kAckChecksPerWindow of
// the retry window whether the peer acknowledged anything since the last look.
void watch_acks(Conn* c) {
  if (c->ack_timer || !c->qp) return;
  const int64_t window = retry_window_ms(c->qp);
  if (window == 0) return;
  const int64_t interval = std::max<int64_t>(1, window / kAckChecksPerWindow);
  const uint64_t serial = c->serial;
  c->ack_timer = core().engine.add_timer(static_cast<int>(std::min<int64_t>(interval, INT32_MAX)),
                                         [serial] { check_acks(serial); });
}

void check_acks(uint64_t serial) {
  Conn* c = core().engine.find(serial);
  if (!c) return;
  c->ack_timer = 0;
  Qp* qp = c->qp;
  if (!qp || qp->qp.state == IBV_QPS_ERR || qp->sq.empty()) {
    c->quiet_checks = 0;
    return;  // nothing outstanding: the next post re-arms
  }
  if (c->acks != c->acks_at_check) {
    c->acks_at_check = c->acks;
    c->quiet_checks = 0;
  } else if (++c->quiet_checks >= kAckChecksPerWindow) {
    debug_log("qp %u: no ACK within the retry window (%lld ms): retry exceeded", qp->qp.qp_num,
              static_cast<long long>(retry_window_ms(qp)));
    on_conn_lost(c, ETIMEDOUT);  // first WR RETRY_EXC_ERR, the rest flushed, DISCONNECTED
    return;
  }
  watch_acks(c);
}

int post_one(Qp* qp, ibv_send_wr* wr) {
  OpInfo op;
  if (!map_opcode(wr->opcode, &op) || wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge)
    return EINVAL;
  if (qp->qp.state == IBV_QPS_ERR) {
    flush_one(qp, wr, op.wc);
    return 0;
  }
  if (qp->qp.state != IBV_QPS_RTS) return EINVAL;
  if (qp->sq.size() >= qp->cap.max_send_wr) return ENOMEM;
  uint64_t total = 0;
  for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
  bool is_read = op.wire == Op::kReadReq;
  bool inl = (wr->send_flags & IBV_SEND_INLINE) && !is_read;
  if (inl && total > qp->cap.max_inline_data) return EINVAL;
  if (total > kMaxMsgSize) return EINVAL;

  const uint32_t msn = qp->next_msn++;
  // Fills the WR's slot of the send queue (sized at creation: no allocation).
  auto add_entry = [&]() -> SqEntry& {
    SqEntry& e = qp->sq.push_back();
    e.wr_id = wr->wr_id;
    e.opcode = op.wc;
    e.msn = msn;
    e.byte_len = static_cast<uint32_t>(total);
    e.signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    e.is_read = is_read;
    e.read_sges.clear();
    return e;
  };
  // The MR of each SGE; inline data is copied from the SGE addresses without a key check.
  std::array<const Mr*, kMaxSge> mrs{};
  bool local_ok = true;
  bool from_device = false;
  if (!inl)
    for (int i = 0; i < wr->num_sge; ++i) {
      const ibv_sge& s = wr->sg_list[i];
      if (s.length == 0) continue;
      const Mr* m = local_mr(qp, s, is_read ? IBV_ACCESS_LOCAL_WRITE : 0);
      mrs[static_cast<std::size_t>(i)] = m;
      local_ok = local_ok && m;
      from_device = from_device || (m && m->gpu.device());
    }
  // The message is built in place in the connection's output ring; the post
  // call writes it (with the rest of its list) when it returns.
  OutChunk* ch = local_ok && qp->conn ? &core().engine.queue(qp->conn) : nullptr;
  if (local_ok && from_device && !is_read) {
    OutChunk unsent;  // without a connection the copy still decides the status
    local_ok = gather_from_device(wr, mrs, ch ? ch : &unsent);
    if (!local_ok && ch) core().engine.unqueue_last(qp->conn);
  }
  if (!local_ok || !qp->conn) {
    add_entry();
    qp_to_error(qp, local_ok ? IBV_WC_RETRY_EXC_ERR : IBV_WC_LOC_PROT_ERR);
    return 0;
  }
  ch->hdr.op = static_cast<uint8_t>(op.wire);
  ch->hdr.msn = msn;
  ch->hdr.rkey = wr->wr.rdma.rkey;
  ch->hdr.raddr = wr->wr.rdma.remote_addr;
  if (wr->opcode == IBV_WR_SEND_WITH_INV)
    ch->hdr.imm = wr->invalidate_rkey;
  else if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
    ch->hdr.imm = wr->imm_data;
  if (op.wire == Op::kSend || op.wire == Op::kSendImm || op.wire == Op::kSendInv) {
    ch->hdr.rkey = 0;
    ch->hdr.raddr = 0;
  }
  if (is_read) {
    ch->hdr.rd_len = static_cast<uint32_t>(total);
  } else {
    ch->hdr.len = static_cast<uint32_t>(total);
    for (int i = 0; i < wr->num_sge && !from_device; ++i) {
      const ibv_sge& s = wr->sg_list[i];
      if (s.length == 0) continue;
      auto* p = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(s.addr));
      // Inline data is copied now; otherwise the HCA reads app memory until the ACK.
      if (inl)
        ch->owned.insert(ch->owned.end(), p, p + s.length);
      else
        ch->ext.push_back({p, s.length});
    }
  }
  int64_t flip = 0;
  if (!is_read && total > 0 &&
      core().faults.corrupt(qp->conn, op.wc == IBV_WC_RDMA_WRITE, core().cfg.port_offset, &flip)) {
    ch->materialize();  // corrupt a private copy, never the application's buffer
    ch->owned[static_cast<std::size_t>(flip) % ch->owned.size()] ^= kCorruptMask;
  }
  QpStats* st = qp->stats;
  if (is_read)
    ++st->reads;
  else if (op.wc == IBV_WC_RDMA_WRITE)
    ++st->writes;
  else
    ++st->sends;
  if (!is_read) st->bytes_out += total;
  if (qp->sq.empty()) ++qp->conn->acks;  // a new wait starts now, not at the last ACK
  SqEntry& e = add_entry();
  if (is_read) e.read_sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
  watch_acks(qp->conn);
  return 0;
}

}  // namespace

int dp_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::lock_guard lk(core().mu);
  Qp* qp = to_qp(ibqp);
  if (inherited(to_ctx(ibqp->context))) {
    *bad = wr;
    return refuse_inherited("ibv_post_send");
  }
  int rc = 0;
  for (; wr; wr = wr->next) {
    // A long list goes out in bounded batches rather than all at the end.
    if (qp->conn && qp->conn->out.size() >= kOutBatchMessages) core().engine.flush(qp->conn);
    rc = post_one(qp, wr);
    if (rc) {
      *bad = wr;
      break;
    }
  }
  // The flush point of the requester: the whole list leaves in one sendmsg
  // (as long as the socket takes it), and a single WR leaves at once.
  if (qp->conn) core().engine.flush(qp->conn);
  return rc;
}

void req_on_ack(Conn* c) {
  ++c->acks;
  if (c->qp) retire_acked(c->qp, c->in.hdr.msn, true);
}

void req_on_nak(Conn* c) {
  ++c->acks;
  Qp* qp = c->qp;
  if (!qp || qp->qp.state == IBV_QPS_ERR) return;
  retire_acked(qp, c->in.hdr.msn, false);
  debug_log("qp %u: NAK msn %u status %u", qp->qp.qp_num, c->in.hdr.msn, c->in.hdr.status);
  qp_to_error(qp, static_cast<ibv_wc_status>(c->in.hdr.status));
}

// READ_RESP header: the data goes straight into the READ's local SGEs.
void req_on_read_resp_header(Conn* c) {
  InParser& in = c->in;
  Qp* qp = c->qp;
  ++c->acks;
  in.sink = Sink::kDiscard;
  if (!qp || qp->qp.state == IBV_QPS_ERR) return;
  retire_acked(qp, in.hdr.msn, false);
  if (qp->sq.empty() || qp->sq.front().msn != in.hdr.msn || !qp->sq.front().is_read) return;
  in.sink = Sink::kReadResp;
  for (const ibv_sge& s : qp->sq.front().read_sges) {
    if (!s.length) continue;
    // Checked at post; an MR deregistered since then fails the READ instead of writing freed memory.
    const Mr* m = local_mr(qp, s, IBV_ACCESS_LOCAL_WRITE);
    if (!m) {
      in.status = IBV_WC_LOC_PROT_ERR;
      return;
    }
    in.add_target(local_span(m, s));
  }
}

void req_on_read_resp(Conn* c) {
  Qp* qp = c->qp;
  if (!qp || c->in.sink != Sink::kReadResp || qp->sq.empty()) return;
  if (c->in.status != IBV_WC_SUCCESS) {
    qp_to_error(qp, static_cast<ibv_wc_status>(c->in.status));
    return;
  }
  qp->stats->bytes_in += c->in.hdr.len;
  complete(qp, qp->sq.front(), IBV_WC_SUCCESS);
  qp->sq.pop_front();
}

}  // namespace sv
