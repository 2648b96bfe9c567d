// Devices, contexts, queries, protection domains and memory regions.
#include <arpa/inet.h>
#include <endian.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core.h"
#include "dataplane.h"

namespace sv {
namespace {

constexpr uint64_t kGuidPrefix = 0x5356'0000'0000'0000ULL;  // "SV" + IPv4 address
constexpr uint16_t kDefaultPkey = 0xffff;
constexpr uint32_t kPortCapFlags = IBV_PORT_CM_SUP;

int eopnotsupp_bind_mw(ibv_qp*, ibv_mw*, ibv_mw_bind*) { return EOPNOTSUPP; }
int eopnotsupp_dealloc_mw(ibv_mw*) { return EOPNOTSUPP; }
int eopnotsupp_srq_recv(ibv_srq*, ibv_recv_wr*, ibv_recv_wr** bad) {
  *bad = nullptr;
  return EOPNOTSUPP;
}

int query_port_ex(ibv_context*, uint8_t port, ibv_port_attr* attr, size_t size);

void fill_port_attr(ibv_port_attr* a) {
  std::memset(a, 0, sizeof *a);
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 1;
  a->port_cap_flags = kPortCapFlags;
  a->max_msg_sz = kMaxMsgSize;
  a->pkey_tbl_len = 1;
  a->active_width = 2;   // 4x
  a->active_speed = 32;  // EDR
  a->phys_state = 5;     // LinkUp
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int query_port_ex(ibv_context*, uint8_t port, ibv_port_attr* attr, size_t size) {
  if (port != kPortNum) return EINVAL;
  ibv_port_attr a;
  fill_port_attr(&a);
  std::memcpy(attr, &a, std::min(size, sizeof a));
  return 0;
}

void at_exit() {
  Core& c = core();
  c.engine.stop_and_join();
  std::lock_guard lk(c.mu);
  // Only a process that used the device writes stats, so a parent that merely
  // forked workers (fio) does not overwrite the file its child wrote.
  if (!c.cfg.stats_path.empty() && !c.stats.empty()) c.stats.dump(c.cfg.stats_path, c.faults.fired_total());
}

void fork_prepare() { core().mu.lock(); }
void fork_parent() { core().mu.unlock(); }
void fork_child() {
  Core& c = core();
  c.mu.unlock();
  std::lock_guard lk(c.mu);
  ++c.fork_generation;
  c.engine.abandon_after_fork();
  c.stats.clear();  // the parent's QPs are not this process's to report
}

Core* make_core() {
  auto* c = new Core;
  c->cfg = load_config();
  c->stats.keep_records(!c->cfg.stats_path.empty());
  c->next_key = static_cast<uint32_t>(getpid() & 0xffff) << 8;
  int idx = 0;
  for (const DeviceSpec& s : c->cfg.devices) {
    auto d = std::make_unique<Device>();
    std::memset(&d->dev, 0, sizeof d->dev);
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d->dev.name, sizeof d->dev.name, "%s", s.name.c_str());
    std::snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", idx);
    std::snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/sys/class/infiniband_verbs/uverbs%d", idx);
    std::snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/sys/class/infiniband/%s", s.name.c_str());
    d->ip = s.ip;
    d->guid = kGuidPrefix | ntohl(s.ip);
    d->index = idx++;
    d->ctx = nullptr;
    c->devices.push_back(std::move(d));
  }
  std::string err;
  if (!c->cfg.faults.empty() && !c->faults.add(c->cfg.faults, &err)) fatal("SOFTVERBS_FAULTS: %s", err.c_str());
  if (!c->cfg.control_path.empty()) open_control_socket(c->engine, c->cfg.control_path);
  std::atexit(at_exit);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  return c;
}

}  // namespace

Core& core() {
  static Core* c = make_core();
  return *c;
}

Device* device_by_ip(in_addr_t ip) {
  for (auto& d : core().devices)
    if (d->ip == ip) return d.get();
  return nullptr;
}

Device* device_by_addr(const sockaddr* a) {
  if (a->sa_family == AF_INET) return device_by_ip(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr);
  if (a->sa_family != AF_INET6 || !IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr))
    return nullptr;
  Device* d = device_by_ip(htonl(INADDR_LOOPBACK));
  return d ? d : core().devices.front().get();
}

sockaddr_storage device_addr(const Device* d, int family, int port) {
  sockaddr_storage s{};
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&s);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&s);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = d->ip;
  }
  sa_set_port(s, port);
  return s;
}

namespace {

Context* new_context(Device* d) {
  auto* c = new Context;
  std::memset(&c->v, 0, sizeof c->v);
  c->device = d;
  c->fork_generation = core().fork_generation;
  if (!c->async_pipe.open()) fatal("cannot create async event pipe");
  c->v.sz = sizeof(verbs_context);
  c->v.query_port = query_port_ex;
  ibv_context& ctx = c->v.context;
  ctx.device = &d->dev;
  ctx.cmd_fd = -1;
  ctx.async_fd = c->async_pipe.rd.get();
  ctx.num_comp_vectors = 1;
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.ops.post_send = dp_post_send;
  ctx.ops.post_recv = dp_post_recv;
  ctx.ops.poll_cq = dp_poll_cq;
  ctx.ops.req_notify_cq = dp_req_notify_cq;
  ctx.ops.bind_mw = eopnotsupp_bind_mw;
  ctx.ops.dealloc_mw = eopnotsupp_dealloc_mw;
  ctx.ops.post_srq_recv = eopnotsupp_srq_recv;
  return c;
}

}  // namespace

Context* open_context(Device* d) {
  if (!d->ctx) d->ctx = new_context(d);
  return d->ctx;
}

int refuse_inherited(const char* call) {
  static bool said = false;
  if (!said) {
    said = true;
    std::fprintf(stderr,
                 "softverbs[%d]: %s on a device context or CM channel opened before fork: EACCES, as the kernel "
                 "refuses a forked child the files its parent opened (open RDMA resources after fork)\n",
                 static_cast<int>(getpid()), call);
  }
  errno = EACCES;
  return EACCES;
}

void fill_device_attr(Device* d, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "softverbs-1.0");
  a->node_guid = htobe64(d->guid);
  a->sys_image_guid = htobe64(d->guid);
  a->max_mr_size = kMaxMrSize;
  a->page_size_cap = kPageSizeCap;
  a->vendor_id = kVendorId;
  a->hw_ver = 1;
  a->max_qp = kMaxQp;
  a->max_qp_wr = kMaxQpWr;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = kMaxCq;
  a->max_cqe = kMaxCqe;
  a->max_mr = kMaxMr;
  a->max_pd = kMaxPd;
  a->max_qp_rd_atom = kMaxRdAtom;
  a->max_qp_init_rd_atom = kMaxRdAtom;
  a->max_res_rd_atom = kMaxRdAtom * kMaxQp;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_pkeys = 1;
  a->phys_port_cnt = 1;
  core().faults.cap(a);
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_device** ibv_get_device_list(int* num) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  auto** list = static_cast<ibv_device**>(std::calloc(c.devices.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (std::size_t i = 0; i < c.devices.size(); ++i) list[i] = &c.devices[i]->dev;
  if (num) *num = static_cast<int>(c.devices.size());
  return list;
}

void ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* ibv_get_device_name(ibv_device* d) { return d->name; }

__be64 ibv_get_device_guid(ibv_device* d) { return htobe64(reinterpret_cast<Device*>(d)->guid); }

int ibv_get_device_index(ibv_device* d) { return reinterpret_cast<Device*>(d)->index; }

ibv_context* ibv_open_device(ibv_device* dev) {
  std::lock_guard lk(core().mu);
  Device* d = reinterpret_cast<Device*>(dev);
  // A forked child opens its own device file; rdma_cm's cached context stays the parent's.
  if (d->ctx && inherited(d->ctx)) {
    if (!d->child_ctx || inherited(d->child_ctx)) d->child_ctx = new_context(d);
    return &d->child_ctx->v.context;
  }
  return &open_context(d)->v.context;
}

// Contexts are shared per device (as rdma_cm ids share them) and live until exit.
int ibv_close_device(ibv_context*) { return 0; }

int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  std::lock_guard lk(core().mu);
  fill_device_attr(to_ctx(ctx)->device, attr);
  return 0;
}

// The compat entry point: old binaries pass the shorter pre-1.1 port struct.
int ibv_query_port(ibv_context* ctx, uint8_t port, struct _compat_ibv_port_attr* attr) {
  return query_port_ex(ctx, port, reinterpret_cast<ibv_port_attr*>(attr), offsetof(ibv_port_attr, flags));
}

int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (port != kPortNum || index != 0) return -1;
  // RoCEv2-style IPv4-mapped GID: ::ffff:a.b.c.d
  std::memset(gid, 0, sizeof *gid);
  gid->raw[10] = 0xff;
  gid->raw[11] = 0xff;
  std::memcpy(&gid->raw[12], &to_ctx(ctx)->device->ip, sizeof(in_addr_t));
  return 0;
}

int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port != kPortNum || index != 0) return -1;
  *pkey = htons(kDefaultPkey);
  return 0;
}

int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  return (port == kPortNum && pkey == htons(kDefaultPkey)) ? 0 : -1;
}

ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  std::lock_guard lk(core().mu);
  if (inherited(to_ctx(ctx))) {
    refuse_inherited("ibv_alloc_pd");
    return nullptr;
  }
  if (core().faults.should_fail("pd")) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* p = new Pd{};
  p->pd.context = ctx;
  p->pd.handle = core().next_key++;
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  delete to_pd(pd);
  return 0;
}

int ibv_fork_init(void) { return 0; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

}  // extern "C"
