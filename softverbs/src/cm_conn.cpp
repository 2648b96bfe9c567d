// RDMA-CM connection establishment and teardown, carried in-band on the QP's
// TCP stream: REQ -> REP -> RTU, REJ, DREQ.  Also the engine's CM hooks.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "cm_api.h"
#include "core.h"
#include "protocol.h"

namespace sv {
namespace {

int fail(int err) {
  errno = err;
  return -1;
}

void send_cm(Conn* c, Op op, const CmPayload* cm, uint32_t imm = 0) {
  OutChunk ch;
  ch.hdr.op = static_cast<uint8_t>(op);
  ch.hdr.imm = imm;
  if (cm) {
    std::size_t len = offsetof(CmPayload, private_data) + cm->private_len;
    ch.hdr.len = static_cast<uint32_t>(len);
    const auto* p = reinterpret_cast<const uint8_t*>(cm);
    ch.owned.assign(p, p + len);
  }
  core().engine.send(c, std::move(ch));
}

CmPayload make_payload(const rdma_conn_param* p, const Qp* qp, std::size_t max_private) {
  CmPayload cm{};
  if (p) {
    cm.initiator_depth = p->initiator_depth;
    cm.responder_resources = p->responder_resources;
    cm.retry_count = p->retry_count;
    cm.rnr_retry_count = p->rnr_retry_count;
    cm.private_len = static_cast<uint32_t>(std::min<std::size_t>(p->private_data_len, max_private));
    if (p->private_data) std::memcpy(cm.private_data, p->private_data, cm.private_len);
  } else {
    cm.rnr_retry_count = kRnrRetryInfinite;
  }
  cm.qp_num = qp ? qp->qp.qp_num : 0;
  return cm;
}

void note_addresses(Conn* c) {
  if (!c->qp || !core().stats.keeps_records()) return;  // the sink has no addresses
  c->qp->stats->local = addr_str(c->local);
  c->qp->stats->remote = addr_str(c->peer);
}

void link_qp(Conn* c, Id* id, uint8_t rnr_retry) {
  if (!id->id.qp) return;
  Qp* qp = to_qp(id->id.qp);
  c->qp = qp;
  qp->conn = c;
  qp->rnr_retry = rnr_retry;
  if (id->ack_timeout >= 0) qp->timeout = static_cast<uint8_t>(id->ack_timeout);
  note_addresses(c);
}

void connect_failed(Id* id, int err) {
  if (id->connect_timer) core().engine.cancel_timer(id->connect_timer);
  id->connect_timer = 0;
  id->state = IdState::kError;
  if (err == ECONNREFUSED)
    post_cm_event(id, RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId, nullptr, 0);
  else
    post_cm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, nullptr, 0);
}

void connect_timeout(uint64_t serial) {
  Core& c = core();
  auto it = c.ids.find(serial);
  if (it == c.ids.end()) return;
  Id* id = it->second;
  id->connect_timer = 0;
  if (id->state != IdState::kConnecting) return;
  if (Conn* x = id->conn) c.engine.close(x);
  connect_failed(id, ETIMEDOUT);
}

void on_req(Conn* c) {
  Core& core_ = core();
  int reason = 0;
  int action = core_.faults.on_connect_request(c, core_.cfg.port_offset, &reason);
  if (action == 1) {
    send_cm(c, Op::kCmRej, nullptr, static_cast<uint32_t>(reason));
    core_.engine.close_after_flush(c);
    return;
  }
  if (action == 2) {  // silently dropped: the active side times out
    c->state = ConnState::kClosing;
    return;
  }
  Id* parent = c->listener;
  // A REQ or REP out of place is a protocol error: on_conn_lost tells the
  // application (DISCONNECTED, QP in error) instead of closing silently.
  if (!parent || c->state != ConnState::kAwaitReq) return on_conn_lost(c, EPROTO);
  Id* child = new_id(parent->chan, parent->id.context, parent->id.ps);
  child->dev = c->dev;
  child->id.verbs = &open_context(c->dev)->v.context;
  child->id.port_num = kPortNum;
  child->id.route.addr.src_storage = c->local;
  sa_set_port(child->id.route.addr.src_storage, rdma_port_of(sa_port(c->local)));
  child->id.route.addr.dst_storage = c->peer;
  child->listen_parent = parent;
  child->conn = c;
  child->peer = c->in.cm;
  child->state = IdState::kConnectRequest;
  c->id = child;
  c->peer_rnr_retry = c->in.cm.rnr_retry_count;
  c->state = ConnState::kAwaitAccept;
  // The passive side sees the depths from its own point of view.
  CmPayload shown = c->in.cm;
  shown.responder_resources = c->in.cm.initiator_depth;
  shown.initiator_depth = c->in.cm.responder_resources;
  post_cm_event(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &shown, kConnectPrivateMax);
}

void on_rep(Conn* c) {
  Id* id = c->id;
  if (!id || c->state != ConnState::kAwaitRep) return on_conn_lost(c, EPROTO);
  if (id->connect_timer) core().engine.cancel_timer(id->connect_timer);
  id->connect_timer = 0;
  id->peer = c->in.cm;
  c->peer_rnr_retry = c->in.cm.rnr_retry_count;
  if (c->qp && c->qp->qp.state != IBV_QPS_ERR) c->qp->qp.state = IBV_QPS_RTS;
  send_cm(c, Op::kCmRtu, nullptr);
  c->state = ConnState::kEstablished;
  id->state = IdState::kConnected;
  core().faults.apply_conn(c, core().cfg.port_offset);
  post_cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, &c->in.cm, kAcceptPrivateMax);
}

void on_rej(Conn* c) {
  Id* id = c->id;
  detach_conn(c);
  core().engine.close(c);
  if (!id) return;
  if (id->connect_timer) core().engine.cancel_timer(id->connect_timer);
  id->connect_timer = 0;
  id->state = IdState::kError;
  CmPayload cm = c->in.cm;
  cm.private_len = std::min<uint32_t>(cm.private_len, kRejectPrivateMax);
  post_cm_event(id, RDMA_CM_EVENT_REJECTED, static_cast<int>(c->in.hdr.imm), &cm, kRejectPrivateMax);
}

void on_dreq(Conn* c) {
  Id* id = c->id;
  if (c->qp && c->qp->qp.state != IBV_QPS_ERR) qp_to_error(c->qp, IBV_WC_WR_FLUSH_ERR);
  if (id && id->state == IdState::kConnected && !id->disconnect_reported)
    report_disconnected(id);
  else if (id && id->state == IdState::kAccepting)
    post_cm_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, nullptr, 0);
  core().engine.close_after_flush(c);
}

}  // namespace

void report_disconnected(Id* id) {
  id->disconnect_reported = true;
  id->state = IdState::kDisconnected;
  post_cm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, nullptr, 0);
  if (!id->id.qp) return;
  uint64_t serial = id->serial;
  core().engine.add_timer(kTimewaitMs, [serial] {
    auto it = core().ids.find(serial);
    if (it != core().ids.end()) post_cm_event(it->second, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, nullptr, 0);
  });
}

void cm_on_tcp_connected(Conn* c) {
  socklen_t len = sizeof c->local;
  getsockname(c->fd.get(), reinterpret_cast<sockaddr*>(&c->local), &len);
  c->state = ConnState::kAwaitRep;
  note_addresses(c);
}

void cm_on_tcp_failed(Conn* c, int err) {
  Id* id = c->id;
  core().engine.close(c);
  if (id) connect_failed(id, err);
}

void cm_on_accepted(Conn* c, Listener* l) {
  c->listener = l->id;
  Device* d = device_by_addr(reinterpret_cast<const sockaddr*>(&c->local));
  c->dev = d ? d : l->dev;
  c->state = ConnState::kAwaitReq;
}

void cm_on_message(Conn* c) {
  switch (static_cast<Op>(c->in.hdr.op)) {
    case Op::kCmReq:
      return on_req(c);
    case Op::kCmRep:
      return on_rep(c);
    case Op::kCmRtu:
      if (c->state == ConnState::kAwaitRtu && c->id) {
        c->state = ConnState::kEstablished;
        c->id->state = IdState::kConnected;
        post_cm_event(c->id, RDMA_CM_EVENT_ESTABLISHED, 0, nullptr, 0);
      }
      return;
    case Op::kCmRej:
      return on_rej(c);
    case Op::kCmDreq:
      return on_dreq(c);
    default:
      return;
  }
}

void on_conn_lost(Conn* c, int err) {
  if (c->dead) return;
  Id* id = c->id;
  Qp* qp = c->qp;
  debug_log("connection %llu lost (state %d): %s", static_cast<unsigned long long>(c->serial),
            static_cast<int>(c->state), err ? std::strerror(err) : "EOF");
  switch (c->state) {
    case ConnState::kConnecting:
    case ConnState::kAwaitRep:
      core().engine.close(c);
      if (id) connect_failed(id, err == ECONNREFUSED ? err : ETIMEDOUT);
      return;
    case ConnState::kAwaitRtu:
      if (id) post_cm_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, nullptr, 0);
      break;
    case ConnState::kEstablished:
    case ConnState::kClosing:
      // The first WR still in flight fails as if retries ran out; the rest flush.
      if (qp && qp->qp.state != IBV_QPS_ERR)
        qp_to_error(qp, c->state == ConnState::kClosing ? IBV_WC_WR_FLUSH_ERR : IBV_WC_RETRY_EXC_ERR);
      if (id && id->state == IdState::kConnected && !id->disconnect_reported) report_disconnected(id);
      break;
    default:
      break;
  }
  core().engine.close(c);
}

}  // namespace sv

using namespace sv;

extern "C" {

int sv_rdma_connect(rdma_cm_id* cid, rdma_conn_param* p) {
  Core& core_ = core();
  std::lock_guard lk(core_.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_connect");
  if (!id->dev || (id->state != IdState::kAddrResolved && id->state != IdState::kRouteResolved)) return fail(EINVAL);
  if (p && p->private_data_len > kConnectPrivateMax) return fail(EINVAL);
  int fd = -1;
  int err = 0;
  if (!id->bound.empty()) {
    fd = id->bound.front().second.release();
    id->bound.clear();
  } else {
    const sockaddr_storage src = sa_with_port(&id->id.route.addr.src_addr, 0);
    const auto* from = reinterpret_cast<const sockaddr*>(&src);
    fd = ::socket(from->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::bind(fd, from, sa_len(from)) != 0) {
      err = errno;
      if (fd >= 0) ::close(fd);
      return fail(err);
    }
  }
  const sockaddr_storage dst =
      sa_with_port(&id->id.route.addr.dst_addr, tcp_port(sa_port(id->id.route.addr.dst_storage)));
  id->state = IdState::kConnecting;
  Conn* c = core_.engine.connect(id->dev, fd, dst, &err);
  if (!c) {
    connect_failed(id, err);
    return 0;
  }
  c->id = id;
  id->conn = c;
  sa_set_port(id->id.route.addr.src_storage, rdma_port_of(sa_port(c->local)));
  link_qp(c, id, p ? p->rnr_retry_count : kRnrRetryInfinite);
  CmPayload cm = make_payload(p, c->qp, kConnectPrivateMax);
  send_cm(c, Op::kCmReq, &cm);
  uint64_t serial = id->serial;
  id->connect_timer = core_.engine.add_timer(core_.cfg.cm_timeout_ms, [serial] { connect_timeout(serial); });
  return 0;
}

int sv_rdma_accept(rdma_cm_id* cid, rdma_conn_param* p) {
  Core& core_ = core();
  std::lock_guard lk(core_.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_accept");
  Conn* c = id->conn;
  if (!c || c->state != ConnState::kAwaitAccept) return fail(c ? EINVAL : ECONNRESET);
  if (p && p->private_data_len > kAcceptPrivateMax) return fail(EINVAL);
  link_qp(c, id, p ? p->rnr_retry_count : kRnrRetryInfinite);
  if (c->qp && c->qp->qp.state != IBV_QPS_ERR) c->qp->qp.state = IBV_QPS_RTS;
  CmPayload cm = make_payload(p, c->qp, kAcceptPrivateMax);
  send_cm(c, Op::kCmRep, &cm);
  c->state = ConnState::kAwaitRtu;
  id->state = IdState::kAccepting;
  core_.faults.apply_conn(c, core_.cfg.port_offset);
  return 0;
}

int sv_rdma_reject(rdma_cm_id* cid, const void* pdata, uint8_t len) {
  Core& core_ = core();
  std::lock_guard lk(core_.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_reject");
  Conn* c = id->conn;
  if (!c || c->state != ConnState::kAwaitAccept) return fail(EINVAL);
  if (len > kRejectPrivateMax) return fail(EINVAL);
  CmPayload cm{};
  cm.private_len = len;
  if (pdata) std::memcpy(cm.private_data, pdata, len);
  send_cm(c, Op::kCmRej, &cm, kRejConsumerDefined);
  detach_conn(c);
  core_.engine.close_after_flush(c);
  id->state = IdState::kError;
  return 0;
}

int sv_rdma_disconnect(rdma_cm_id* cid) {
  Core& core_ = core();
  std::lock_guard lk(core_.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_disconnect");
  Conn* c = id->conn;
  if (!c) return id->disconnect_reported ? 0 : fail(EINVAL);
  if (c->state == ConnState::kClosing) return 0;
  if (c->state != ConnState::kEstablished && c->state != ConnState::kAwaitRtu) {
    core_.engine.close(c);
    return 0;
  }
  // Flush first: nothing posted after the disconnect may still go out.
  if (c->qp && c->qp->qp.state != IBV_QPS_ERR) qp_to_error(c->qp, IBV_WC_WR_FLUSH_ERR);
  send_cm(c, Op::kCmDreq, nullptr);
  core_.engine.close_after_flush(c);
  if (!id->disconnect_reported) report_disconnected(id);
  return 0;
}

}  // extern "C"
