// RDMA-CM ids: creation, addresses, listening, QPs and teardown.
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cm_api.h"
#include "core.h"

namespace sv {
namespace {

int fail(int err) {
  errno = err;
  return -1;
}

// A non-blocking, close-on-exec TCP socket bound to `local` (port 0: ephemeral).
Fd bound_socket(const sockaddr_storage& local, int* err) {
  const auto* a = reinterpret_cast<const sockaddr*>(&local);
  Fd fd(::socket(a->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (a->sa_family == AF_INET6) setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (!fd.valid() || ::bind(fd.get(), a, sa_len(a)) != 0) {
    *err = errno;
    return Fd();
  }
  return fd;
}

sockaddr_storage local_of(int fd) {
  sockaddr_storage s{};
  socklen_t len = sizeof s;
  getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len);
  return s;
}

int local_tcp_port(int fd) { return sa_port(local_of(fd)); }

int bind_locked(Id* id, const sockaddr* addr) {
  Core& c = core();
  if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) return fail(EAFNOSUPPORT);
  if (!id->bound.empty()) return fail(EINVAL);
  const int family = addr->sa_family;
  const bool any = sa_is_any(addr);
  // Never the real wildcard: one socket per device (:: also listens on each
  // device's IPv4 address, as an RDMA-CM IPv6 wildcard does).
  std::vector<std::pair<Device*, sockaddr_storage>> locals;
  if (any) {
    for (auto& d : c.devices) locals.emplace_back(d.get(), device_addr(d.get(), AF_INET, 0));
    if (family == AF_INET6) {
      sockaddr_in6 loopback{};
      loopback.sin6_family = AF_INET6;
      loopback.sin6_addr = in6addr_loopback;
      Device* lo6 = device_by_addr(reinterpret_cast<const sockaddr*>(&loopback));
      locals.emplace_back(lo6, device_addr(lo6, AF_INET6, 0));
    }
  } else {
    Device* d = is_allowed_addr(addr) ? device_by_addr(addr) : nullptr;
    if (!d) return fail(EADDRNOTAVAIL);
    locals.emplace_back(d, sa_with_port(addr, 0));
  }
  int port = sa_port(addr);
  int tcp = port ? tcp_port(port) : 0;
  for (auto& [d, local] : locals) {
    int err = 0;
    sa_set_port(local, tcp);
    Fd fd = bound_socket(local, &err);
    if (!fd.valid()) {
      id->bound.clear();
      return fail(err);
    }
    if (tcp == 0) tcp = local_tcp_port(fd.get());
    id->bound.emplace_back(d, std::move(fd));
  }
  id->id.route.addr.src_storage = sa_with_port(addr, rdma_port_of(tcp));
  if (locals.size() == 1 && !any) {
    id->dev = locals[0].first;
    id->id.verbs = &open_context(locals[0].first)->v.context;
  }
  id->id.port_num = kPortNum;
  id->state = IdState::kBound;
  return 0;
}

}  // namespace

int tcp_port(int rdma_port) { return rdma_port + core().cfg.port_offset; }
int rdma_port_of(int tcp) { return tcp >= core().cfg.port_offset ? tcp - core().cfg.port_offset : tcp; }

std::string addr_str(const sockaddr_storage& a) {
  char ip[INET6_ADDRSTRLEN] = "";
  const std::string port = std::to_string(rdma_port_of(sa_port(a)));
  if (a.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + port;
  }
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + port;
}

Id* new_id(EventChannel* ch, void* context, rdma_port_space ps) {
  Core& c = core();
  auto* id = new Id;
  std::memset(&id->id, 0, sizeof id->id);
  id->serial = c.next_id_serial++;
  id->chan = ch;
  id->id.channel = &ch->ch;
  id->id.context = context;
  id->id.ps = ps;
  id->id.qp_type = IBV_QPT_RC;
  c.ids[id->serial] = id;
  return id;
}

}  // namespace sv

using namespace sv;

extern "C" {

int sv_rdma_create_id(rdma_event_channel* ch, rdma_cm_id** out, void* context, rdma_port_space ps) {
  if (!ch || !out) return fail(EINVAL);
  if (ps != RDMA_PS_TCP) return fail(EPROTONOSUPPORT);  // RC only
  std::lock_guard lk(core().mu);
  if (inherited(reinterpret_cast<EventChannel*>(ch))) return cm_refuse_inherited("rdma_create_id");
  *out = &new_id(reinterpret_cast<EventChannel*>(ch), context, ps)->id;
  return 0;
}

int sv_rdma_bind_addr(rdma_cm_id* cid, sockaddr* addr) {
  std::lock_guard lk(core().mu);
  if (inherited(to_id(cid)->chan)) return cm_refuse_inherited("rdma_bind_addr");
  return bind_locked(to_id(cid), addr);
}

int sv_rdma_resolve_addr(rdma_cm_id* cid, sockaddr* src, sockaddr* dst, int) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_resolve_addr");
  if (!dst) return fail(EINVAL);
  bool src_any = !src || ((src->sa_family == AF_INET || src->sa_family == AF_INET6) && sa_is_any(src));
  // The loopback-only policy: anything else never resolves.
  if (!is_allowed_addr(dst) || (!src_any && !is_allowed_addr(src))) {
    post_cm_event(id, RDMA_CM_EVENT_ADDR_ERROR, -EADDRNOTAVAIL, nullptr, 0);
    return 0;
  }
  if (!src_any && id->bound.empty() && bind_locked(id, src) != 0) {
    post_cm_event(id, RDMA_CM_EVENT_ADDR_ERROR, -errno, nullptr, 0);
    return 0;
  }
  // A source of the other family cannot reach it (RDMA-CM: no route).
  const bool bound_elsewhere = !id->bound.empty() && id->id.route.addr.src_addr.sa_family != dst->sa_family;
  if (bound_elsewhere || (!src_any && src->sa_family != dst->sa_family)) {
    post_cm_event(id, RDMA_CM_EVENT_ADDR_ERROR, -EAFNOSUPPORT, nullptr, 0);
    return 0;
  }
  Device* dev = id->dev;
  if (!dev) dev = device_by_addr(dst);
  if (!dev) dev = c.devices.front().get();
  // A wildcard-bound id keeps only the socket of the device (and family) it will use.
  const int family = dst->sa_family;
  std::erase_if(id->bound, [dev, family](const auto& b) {
    return b.first != dev || local_of(b.second.get()).ss_family != family;
  });
  id->dev = dev;
  id->id.verbs = &open_context(dev)->v.context;
  id->id.port_num = kPortNum;
  if (id->bound.empty()) {
    id->id.route.addr.src_storage = device_addr(dev, dst->sa_family, 0);
  } else if (src_any) {
    id->id.route.addr.src_storage = device_addr(dev, dst->sa_family, sa_port(id->id.route.addr.src_storage));
  }
  id->id.route.addr.dst_storage = sa_with_port(dst, sa_port(dst));
  id->state = IdState::kAddrResolved;
  post_cm_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, nullptr, 0);
  return 0;
}

int sv_rdma_resolve_route(rdma_cm_id* cid, int) {
  std::lock_guard lk(core().mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_resolve_route");
  if (id->state != IdState::kAddrResolved) return fail(EINVAL);
  id->state = IdState::kRouteResolved;
  post_cm_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, nullptr, 0);
  return 0;
}

int sv_rdma_listen(rdma_cm_id* cid, int backlog) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  Id* id = to_id(cid);
  if (inherited(id->chan)) return cm_refuse_inherited("rdma_listen");
  if (id->state != IdState::kBound) return fail(EINVAL);
  for (auto& [dev, fd] : id->bound) {
    if (::listen(fd.get(), backlog > 0 ? backlog : kListenBacklog) != 0) return -1;
    id->listeners.push_back(c.engine.add_listener(std::move(fd), id, dev));
  }
  id->bound.clear();
  id->state = IdState::kListening;
  return 0;
}

__be16 sv_rdma_get_src_port(rdma_cm_id* cid) { return cid->route.addr.src_sin.sin_port; }
__be16 sv_rdma_get_dst_port(rdma_cm_id* cid) { return cid->route.addr.dst_sin.sin_port; }

ibv_context** sv_rdma_get_devices(int* n) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  auto** list = static_cast<ibv_context**>(std::calloc(c.devices.size() + 1, sizeof(ibv_context*)));
  if (!list) return nullptr;
  for (std::size_t i = 0; i < c.devices.size(); ++i) list[i] = &open_context(c.devices[i].get())->v.context;
  if (n) *n = static_cast<int>(c.devices.size());
  return list;
}

void sv_rdma_free_devices(ibv_context** list) { std::free(list); }

// The ACK timeout goes to the id's QP (now, or when it connects) and drives the
// transport retry emulation; other options (TOS, REUSEADDR, AFONLY) have no
// effect on loopback TCP.
int sv_rdma_set_option(rdma_cm_id* cid, int level, int name, void* val, size_t len) {
  if (level != RDMA_OPTION_ID || name != RDMA_OPTION_ID_ACK_TIMEOUT) return 0;
  if (!val || len != sizeof(uint8_t)) return fail(EINVAL);
  const uint8_t timeout = *static_cast<const uint8_t*>(val);
  if (timeout > kMaxAckTimeout) return fail(EINVAL);
  std::lock_guard lk(core().mu);
  Id* id = to_id(cid);
  id->ack_timeout = timeout;
  if (id->id.qp) to_qp(id->id.qp)->timeout = timeout;
  return 0;
}

int sv_rdma_create_qp(rdma_cm_id* cid, ibv_pd* pd, ibv_qp_init_attr* attr) {
  Id* id = to_id(cid);
  if (!cid->verbs || !attr) return fail(EINVAL);
  if (!pd) {
    Context* ctx = to_ctx(cid->verbs);
    if (!ctx->default_pd) ctx->default_pd = ibv_alloc_pd(cid->verbs);
    pd = ctx->default_pd;
    if (!pd) return -1;
  }
  if (pd->context != cid->verbs) return fail(EINVAL);
  std::vector<ibv_cq*> made;
  int depth = static_cast<int>(std::max(attr->cap.max_send_wr + attr->cap.max_recv_wr, 1u));
  for (ibv_cq** cq : {&attr->send_cq, &attr->recv_cq}) {
    if (*cq) continue;
    *cq = ibv_create_cq(cid->verbs, depth, nullptr, nullptr, 0);
    if (!*cq) return -1;
    made.push_back(*cq);
  }
  ibv_qp* qp = ibv_create_qp(pd, attr);
  if (!qp) {
    for (ibv_cq* cq : made) ibv_destroy_cq(cq);
    return -1;
  }
  std::lock_guard lk(core().mu);
  qp->state = IBV_QPS_INIT;
  cid->qp = qp;
  cid->pd = pd;
  cid->send_cq = attr->send_cq;
  cid->recv_cq = attr->recv_cq;
  id->own_cqs = std::move(made);
  return 0;
}

void sv_rdma_destroy_qp(rdma_cm_id* cid) {
  Id* id = to_id(cid);
  if (!cid->qp) return;
  ibv_destroy_qp(cid->qp);
  std::vector<ibv_cq*> own;
  {
    std::lock_guard lk(core().mu);
    cid->qp = nullptr;
    own.swap(id->own_cqs);
  }
  for (ibv_cq* cq : own) ibv_destroy_cq(cq);
}

int sv_rdma_destroy_id(rdma_cm_id* cid) {
  Core& c = core();
  std::unique_lock lk(c.mu);
  Id* id = to_id(cid);
  // librdmacm blocks until every event of the id was acked; we bound the wait.
  if (!c.acked_cv.wait_for(lk, std::chrono::milliseconds(kDestroyIdWaitMs), [id] { return id->unacked <= 0; }))
    std::fprintf(stderr, "softverbs: rdma_destroy_id(%p): %d events never acked; destroying anyway\n",
                 static_cast<void*>(cid), id->unacked);
  for (uint64_t l : id->listeners) c.engine.remove_listener(l);
  for (Conn* x : c.engine.all_conns()) {
    if (x->listener != id) continue;
    x->listener = nullptr;
    if (!x->id) c.engine.close(x);  // REQ not yet turned into a child id
  }
  for (auto& [s, other] : c.ids)
    if (other->listen_parent == id) other->listen_parent = nullptr;
  if (id->connect_timer) c.engine.cancel_timer(id->connect_timer);
  if (Conn* x = id->conn) {
    x->id = nullptr;
    id->conn = nullptr;
    if (x->state == ConnState::kEstablished || x->state == ConnState::kAwaitRtu) {
      // Like the kernel CM, destroying a connected id sends a DREQ.
      OutChunk ch;
      ch.hdr.op = static_cast<uint8_t>(Op::kCmDreq);
      c.engine.send(x, std::move(ch));
      if (x->qp && x->qp->qp.state != IBV_QPS_ERR) qp_to_error(x->qp, IBV_WC_WR_FLUSH_ERR);
      c.engine.close_after_flush(x);
    } else if (x->state != ConnState::kClosing) {
      c.engine.close(x);
    }
  }
  // Events never fetched go with the id, and so do their bytes in the pipe, so
  // a poll() on the channel does not report events that no longer exist.
  std::size_t dropped = std::erase_if(id->chan->q, [id](Event* e) {
    if (e->ev.id != &id->id) return false;
    delete e;
    return true;
  });
  int avail = 0;
  ioctl(id->chan->ch.fd, FIONREAD, &avail);
  for (std::size_t i = 0; i < dropped && avail > 0; ++i, --avail) {
    char b;
    (void)!::read(id->chan->ch.fd, &b, 1);
  }
  c.ids.erase(id->serial);
  delete id;
  return 0;
}

}  // extern "C"
