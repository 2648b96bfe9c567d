// Queue pairs: creation, state changes, queries, and the error/flush path.
#include <cerrno>
#include <cstring>

#include "core.h"
#include "dataplane.h"
#include "protocol.h"

namespace sv {
namespace {

ibv_wc make_wc(Qp* qp, uint64_t wr_id, ibv_wc_status st, ibv_wc_opcode op) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = st;
  wc.opcode = op;
  wc.qp_num = qp->qp.qp_num;
  return wc;
}

}  // namespace

void flush_recv_queue(Qp* qp) {
  for (std::size_t i = 0; i < qp->rq.size(); ++i) {
    push_cqe(to_cq(qp->qp.recv_cq), make_wc(qp, qp->rq[i].wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
    ++qp->stats->flushed;
  }
  qp->rq.clear();
}

namespace {

// Drops requests and READ data not yet on the wire; a half-sent message is
// finished from a private copy, since the app may reuse its buffers once it sees
// the flush completions (or the QP is gone).
void drop_unsent_requests(Conn* c) {
  c->out.retain([](OutChunk& ch) {
    Op op = static_cast<Op>(ch.hdr.op);
    if (ch.sent == 0 && (is_request(op) || op == Op::kReadResp)) return false;
    ch.materialize();
    return true;
  });
}

}  // namespace

void qp_to_error(Qp* qp, ibv_wc_status first_status) {
  qp->qp.state = IBV_QPS_ERR;
  if (Conn* c = qp->conn) {
    // Nothing more leaves an errored QP.
    drop_unsent_requests(c);
    c->ack_pending = false;
    // The app may free its buffers once it sees the flushes: stop placing data.
    if (c->in.in_payload && c->in.sink != Sink::kCm) c->in.sink = Sink::kDiscard;
  }
  bool first = true;
  for (std::size_t i = 0; i < qp->sq.size(); ++i) {
    const SqEntry& e = qp->sq[i];
    // Error completions are generated even for unsignaled WRs, as on hardware.
    ibv_wc_status st = first ? first_status : IBV_WC_WR_FLUSH_ERR;
    push_cqe(to_cq(qp->qp.send_cq), make_wc(qp, e.wr_id, st, e.opcode));
    ++qp->stats->flushed;
    if (st != IBV_WC_WR_FLUSH_ERR) ++qp->stats->errors;
    first = false;
  }
  qp->sq.clear();
  flush_recv_queue(qp);
}

void detach_conn(Conn* c) {
  if (c->qp && c->qp->conn == c) c->qp->conn = nullptr;
  if (c->id && c->id->conn == c) c->id->conn = nullptr;
  c->qp = nullptr;
  c->id = nullptr;
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  Core& core_ = core();
  std::lock_guard lk(core_.mu);
  ibv_device_attr dev;
  Context* ctx = to_ctx(pd->context);
  if (inherited(ctx)) {
    refuse_inherited("ibv_create_qp");
    return nullptr;
  }
  fill_device_attr(ctx->device, &dev);
  const ibv_qp_cap& cap = attr->cap;
  if (attr->qp_type != IBV_QPT_RC || attr->srq) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (!attr->send_cq || !attr->recv_cq || cap.max_send_wr > static_cast<uint32_t>(dev.max_qp_wr) ||
      cap.max_recv_wr > static_cast<uint32_t>(dev.max_qp_wr) || cap.max_send_sge > static_cast<uint32_t>(dev.max_sge) ||
      cap.max_recv_sge > static_cast<uint32_t>(dev.max_sge) || cap.max_inline_data > kMaxInlineData) {
    errno = EINVAL;
    return nullptr;
  }
  if (core_.faults.should_fail("qp")) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* qp = new Qp;
  std::memset(&qp->qp, 0, sizeof qp->qp);
  qp->qp.context = pd->context;
  qp->qp.qp_context = attr->qp_context;
  qp->qp.pd = pd;
  qp->qp.send_cq = attr->send_cq;
  qp->qp.recv_cq = attr->recv_cq;
  qp->qp.qp_num = core_.next_qpn++;
  qp->qp.handle = qp->qp.qp_num;
  qp->qp.state = IBV_QPS_RESET;
  qp->qp.qp_type = IBV_QPT_RC;
  qp->cap = cap;
  qp->sq_sig_all = attr->sq_sig_all != 0;
  // Every work request slot exists from here on: posting never allocates.
  qp->sq.reset(cap.max_send_wr);
  qp->sq.for_each_slot([&](SqEntry& e) { e.read_sges.reserve(cap.max_send_sge); });
  qp->rq.reset(cap.max_recv_wr);
  qp->rq.for_each_slot([&](RqEntry& r) { r.sges.reserve(cap.max_recv_sge); });
  qp->stats = core_.stats.add_qp(qp->qp.qp_num, ctx->device->dev.name);
  ++to_cq(attr->send_cq)->qp_refs;
  ++to_cq(attr->recv_cq)->qp_refs;
  return &qp->qp;
}

int ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
  std::lock_guard lk(core().mu);
  if (inherited(to_ctx(ibqp->context))) return refuse_inherited("ibv_modify_qp");
  Qp* qp = to_qp(ibqp);
  if (mask & IBV_QP_RNR_RETRY) qp->rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_RETRY_CNT) qp->retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_TIMEOUT) {
    if (attr->timeout > kMaxAckTimeout) return EINVAL;
    qp->timeout = attr->timeout;
  }
  if (mask & IBV_QP_MIN_RNR_TIMER) qp->min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) qp->max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_STATE) {
    switch (attr->qp_state) {
      case IBV_QPS_ERR:
        qp_to_error(qp, IBV_WC_WR_FLUSH_ERR);
        break;
      case IBV_QPS_RESET:
        qp->sq.clear();
        qp->rq.clear();
        qp->qp.state = IBV_QPS_RESET;
        break;
      case IBV_QPS_INIT:
      case IBV_QPS_RTR:
      case IBV_QPS_RTS:
      case IBV_QPS_SQD:
        if (qp->qp.state == IBV_QPS_ERR) return EINVAL;
        qp->qp.state = attr->qp_state;
        break;
      default:
        return EINVAL;
    }
  }
  return 0;
}

int ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  std::lock_guard lk(core().mu);
  Qp* qp = to_qp(ibqp);
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = qp->qp.state;
  attr->cur_qp_state = qp->qp.state;
  attr->path_mtu = IBV_MTU_4096;
  attr->qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  attr->cap = qp->cap;
  attr->port_num = kPortNum;
  attr->rnr_retry = qp->rnr_retry;
  attr->retry_cnt = qp->retry_cnt;
  attr->timeout = qp->timeout;
  attr->min_rnr_timer = qp->min_rnr_timer;
  attr->max_rd_atomic = qp->max_rd_atomic;
  attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
  if (init) {
    std::memset(init, 0, sizeof *init);
    init->qp_context = qp->qp.qp_context;
    init->send_cq = qp->qp.send_cq;
    init->recv_cq = qp->qp.recv_cq;
    init->cap = qp->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = qp->sq_sig_all;
  }
  return 0;
}

int ibv_destroy_qp(ibv_qp* ibqp) {
  std::lock_guard lk(core().mu);
  Qp* qp = to_qp(ibqp);
  if (Conn* c = qp->conn) {
    // Drop everything that still references this QP's buffers; the connection
    // itself belongs to the CM id and lives on until rdma_destroy_id.
    drop_unsent_requests(c);
    c->qp = nullptr;
    // A payload in flight into this QP's memory must not land after destroy.
    if (c->in.in_payload && c->in.sink != Sink::kCm) c->in.sink = Sink::kDiscard;
  }
  --to_cq(qp->qp.send_cq)->qp_refs;
  --to_cq(qp->qp.recv_cq)->qp_refs;
  // A forked child's stats no longer hold its parent's QPs.
  if (!inherited(to_ctx(ibqp->context))) core().stats.retire(qp->stats);
  delete qp;
  // Also written here, not only at exit: forked workers (fio jobs) leave with
  // _exit(), which skips atexit handlers.
  if (!core().cfg.stats_path.empty()) core().stats.dump(core().cfg.stats_path, core().faults.fired_total());
  return 0;
}

}  // extern "C"
