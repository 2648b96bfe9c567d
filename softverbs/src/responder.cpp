// Responder side of the data path: post_recv, and placing incoming SENDs,
// WRITEs and READ requests after checking rkey, bounds, access and PD.
// A connection's stream is handled strictly in order, so a WRITE's data is in
// memory before a later SEND's receive completion is queued.
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core.h"
#include "dataplane.h"
#include "memory.h"
#include "protocol.h"

namespace sv {
namespace {

void send_nak(Conn* c, uint32_t msn, int status) {
  dp_flush_ack(c);
  OutChunk& ch = core().engine.queue(c);
  ch.hdr.op = static_cast<uint8_t>(Op::kNak);
  ch.hdr.msn = msn;
  ch.hdr.status = static_cast<uint8_t>(status);
}

// A remote access violation moves the responder QP to error, as on hardware.
void responder_error(Qp* qp) {
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_QP_ACCESS_ERR;
  ev.element.qp = &qp->qp;
  post_async_event(to_ctx(qp->qp.context), ev);
  ++qp->stats->errors;
  qp_to_error(qp, IBV_WC_WR_FLUSH_ERR);
}

bool needs_recv(Op op) { return op == Op::kSend || op == Op::kSendInv || op == Op::kSendImm || op == Op::kWriteImm; }

void rnr_expire(uint64_t serial) {
  Conn* c = core().engine.find(serial);
  if (!c || !c->in.parked) return;
  c->rnr_timer = 0;
  ++c->rnr_tries;
  core().engine.unpark(c);
}

// No receive posted: park (retry forever) or, after the requester's retry
// budget, fail the request with RNR_RETRY_EXC_ERR.
bool handle_rnr(Conn* c, Qp* qp) {
  bool strict = core().cfg.strict_rnr;
  bool forever = c->peer_rnr_retry == kRnrRetryInfinite && !strict;
  if (!forever && (strict || c->rnr_tries > c->peer_rnr_retry)) {
    c->rnr_tries = 0;
    return false;
  }
  c->in.parked = true;
  ++qp->stats->rnr_parks;
  if (!forever) {
    uint64_t s = c->serial;
    c->rnr_timer = core().engine.add_timer(kRnrRetryIntervalMs, [s] { rnr_expire(s); });
  }
  core().engine.update_events(c);
  return true;
}

}  // namespace

int dp_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard lk(core().mu);
  Qp* qp = to_qp(ibqp);
  if (inherited(to_ctx(ibqp->context))) {
    *bad = wr;
    return refuse_inherited("ibv_post_recv");
  }
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->cap.max_recv_sge || qp->qp.state == IBV_QPS_RESET) {
      *bad = wr;
      return EINVAL;
    }
    if (qp->rq.size() >= qp->cap.max_recv_wr) {
      *bad = wr;
      return ENOMEM;
    }
    RqEntry& r = qp->rq.push_back();  // a slot sized at creation: no allocation
    r.wr_id = wr->wr_id;
    r.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
  }
  if (qp->qp.state == IBV_QPS_ERR)
    flush_recv_queue(qp);
  else if (qp->conn && qp->conn->in.parked)
    core().engine.unpark(qp->conn);
  return 0;
}

void dp_on_header(Conn* c) {
  InParser& in = c->in;
  Op op = static_cast<Op>(in.hdr.op);
  in.sink = Sink::kNone;
  in.targets.clear();
  in.device_targets = false;
  in.tgt_idx = in.tgt_off = 0;
  in.remaining = in.hdr.len;
  in.status = IBV_WC_SUCCESS;
  if (is_cm(op)) {
    if (in.hdr.len > sizeof(CmPayload)) {
      on_conn_lost(c, EPROTO);
      return;
    }
    in.cm = CmPayload{};
    in.sink = Sink::kCm;
    in.add_target({reinterpret_cast<uintptr_t>(&in.cm), in.hdr.len, {}});
    return;
  }
  if (op == Op::kReadResp) return req_on_read_resp_header(c);
  if (!is_request(op)) return;  // ACK / NAK carry no payload
  Qp* qp = c->qp;
  in.sink = Sink::kDiscard;
  if (!qp) return;  // QP destroyed under a live connection: drop silently
  if (qp->qp.state == IBV_QPS_ERR) {
    // An errored responder never answers; the requester's retries run out.
    in.status = IBV_WC_RETRY_EXC_ERR;
    return;
  }
  if (op == Op::kWrite || op == Op::kWriteImm || op == Op::kReadReq) {
    bool w = op != Op::kReadReq;
    int st = 0;
    if (core().faults.nak(c, w, core().cfg.port_offset, &st)) {
      in.status = static_cast<uint32_t>(st);
      return;
    }
    if (op == Op::kReadReq) return;  // checked when the request completes
    Span dst{};
    bool ok = remote_span(qp, in.hdr.rkey, in.hdr.raddr, in.hdr.len, IBV_ACCESS_REMOTE_WRITE, &dst);
    if (!ok && in.hdr.len > 0) {
      in.status = IBV_WC_REM_ACCESS_ERR;
      return;
    }
    if (in.hdr.len) in.add_target(dst);
    in.sink = Sink::kWrite;
    if (op == Op::kWrite) return;
  }
  if (needs_recv(op)) {
    if (qp->rq.empty()) {
      if (handle_rnr(c, qp)) return;
      in.status = IBV_WC_RNR_RETRY_EXC_ERR;
      in.sink = Sink::kDiscard;
      return;
    }
    c->rnr_tries = 0;
    // Copied, not moved: both keep their buffers (cur_recv has kMaxSge reserved).
    c->cur_recv.wr_id = qp->rq.front().wr_id;
    c->cur_recv.sges.assign(qp->rq.front().sges.begin(), qp->rq.front().sges.end());
    qp->rq.pop_front();
    if (op == Op::kWriteImm) return;  // payload already targets the WRITE address
    uint64_t cap = 0;
    bool ok = true;
    const std::vector<ibv_sge>& sges = c->cur_recv.sges;
    std::array<const Mr*, kMaxSge> mrs{};  // each SGE's MR, looked up once
    for (std::size_t i = 0; i < sges.size(); ++i) {
      if (sges[i].length) mrs[i] = local_mr(qp, sges[i], IBV_ACCESS_LOCAL_WRITE);
      ok = ok && (sges[i].length == 0 || mrs[i]);
      cap += sges[i].length;
    }
    if (!ok || cap < in.hdr.len) {
      in.status = ok ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR;
      return;
    }
    in.sink = Sink::kRecv;
    uint32_t left = in.hdr.len;
    for (std::size_t i = 0; i < sges.size() && left; ++i) {
      uint32_t k = std::min(left, sges[i].length);
      if (k) in.add_target({sges[i].addr, k, mrs[i]->gpu});
      left -= k;
    }
  }
}

namespace {

void complete_recv(Conn* c, Qp* qp, Op op, ibv_wc_status st) {
  ibv_wc wc{};
  wc.wr_id = c->cur_recv.wr_id;
  wc.status = st;
  wc.opcode = op == Op::kWriteImm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
  wc.byte_len = op == Op::kWriteImm ? 0 : c->in.hdr.len;
  wc.qp_num = qp->qp.qp_num;
  if (op == Op::kSendImm || op == Op::kWriteImm) {
    wc.wc_flags |= IBV_WC_WITH_IMM;
    wc.imm_data = c->in.hdr.imm;
  } else if (op == Op::kSendInv) {
    wc.wc_flags |= IBV_WC_WITH_INV;
    wc.invalidated_rkey = c->in.hdr.imm;
  }
  push_cqe(to_cq(qp->qp.recv_cq), wc);
  ++qp->stats->recvs;
  ++qp->stats->completions;
}

// Remote status for the requester when the responder's own receive failed.
int remote_status(uint32_t local) {
  switch (local) {
    case IBV_WC_LOC_LEN_ERR:
      return IBV_WC_REM_INV_REQ_ERR;
    case IBV_WC_LOC_PROT_ERR:
      return IBV_WC_REM_OP_ERR;
    default:
      return static_cast<int>(local);
  }
}

void serve_read(Conn* c, Qp* qp) {
  const WireHdr& h = c->in.hdr;
  Span src{};
  bool ok = remote_span(qp, h.rkey, h.raddr, h.rd_len, IBV_ACCESS_REMOTE_READ, &src);
  if (!ok && h.rd_len > 0) {
    send_nak(c, h.msn, IBV_WC_REM_ACCESS_ERR);
    responder_error(qp);
    return;
  }
  std::vector<uint8_t> device_copy;
  if (h.rd_len && src.gpu.device()) {
    // GPU memory cannot be handed to the socket: copy it out now, as the HCA would read it now.
    device_copy.resize(h.rd_len);
    if (!read_span(src, device_copy.data())) {
      send_nak(c, h.msn, IBV_WC_REM_OP_ERR);
      responder_error(qp);
      return;
    }
  }
  dp_flush_ack(c);  // keep ACKs ahead of the response, in msn order
  c->recv_msn = h.msn;
  ++qp->stats->reads_in;
  qp->stats->bytes_out += h.rd_len;
  OutChunk& ch = core().engine.queue(c);
  ch.hdr.op = static_cast<uint8_t>(Op::kReadResp);
  ch.hdr.msn = h.msn;
  ch.hdr.len = h.rd_len;
  if (!device_copy.empty())
    ch.owned.swap(device_copy);
  else if (h.rd_len)
    ch.ext.push_back({reinterpret_cast<void*>(static_cast<uintptr_t>(src.addr)), h.rd_len});
}

}  // namespace

void dp_on_message(Conn* c) {
  InParser& in = c->in;
  Op op = static_cast<Op>(in.hdr.op);
  switch (op) {
    case Op::kAck:
      return req_on_ack(c);
    case Op::kNak:
      return req_on_nak(c);
    case Op::kReadResp:
      return req_on_read_resp(c);
    default:
      break;
  }
  if (is_cm(op)) return cm_on_message(c);
  Qp* qp = c->qp;
  if (!qp || !is_request(op)) return;
  if (in.status != IBV_WC_SUCCESS) {
    // REM_OP_ERR here: the payload could not be copied into GPU memory.
    bool remote_access = in.status == IBV_WC_REM_ACCESS_ERR || in.status == IBV_WC_REM_OP_ERR;
    bool local_recv = in.status == IBV_WC_LOC_LEN_ERR || in.status == IBV_WC_LOC_PROT_ERR;
    if (in.status == IBV_WC_RETRY_EXC_ERR) {
      if (in.hdr.msn == c->recv_msn + 1) send_nak(c, in.hdr.msn, IBV_WC_RETRY_EXC_ERR);
      c->recv_msn = in.hdr.msn;
      return;
    }
    send_nak(c, in.hdr.msn, remote_status(in.status));
    if (local_recv) complete_recv(c, qp, op, static_cast<ibv_wc_status>(in.status));
    // A WRITE_IMM fails after taking its receive: it is flushed with the rest.
    if (op == Op::kWriteImm && in.status == IBV_WC_REM_OP_ERR) complete_recv(c, qp, op, IBV_WC_WR_FLUSH_ERR);
    if (remote_access || local_recv) responder_error(qp);
    c->recv_msn = in.hdr.msn;
    return;
  }
  if (op == Op::kReadReq) return serve_read(c, qp);
  qp->stats->bytes_in += in.hdr.len;
  if (op == Op::kWrite || op == Op::kWriteImm)
    ++qp->stats->writes_in;
  else
    ++qp->stats->sends_in;
  if (needs_recv(op)) complete_recv(c, qp, op, IBV_WC_SUCCESS);
  c->recv_msn = in.hdr.msn;
  c->ack_pending = true;
}

uint32_t dp_device_copy_failure(Sink sink) {
  switch (sink) {
    case Sink::kWrite:
      return IBV_WC_REM_OP_ERR;  // the responder's fault: NAK, responder QP to error
    case Sink::kRecv:
      return IBV_WC_LOC_PROT_ERR;
    case Sink::kReadResp:
      return IBV_WC_LOC_PROT_ERR;
    default:
      return IBV_WC_GENERAL_ERR;
  }
}

void dp_flush_ack(Conn* c) {
  if (!c->ack_pending || c->dead) return;
  c->ack_pending = false;
  OutChunk& ch = core().engine.queue(c);
  ch.hdr.op = static_cast<uint8_t>(Op::kAck);
  ch.hdr.msn = c->recv_msn;
}

}  // namespace sv
