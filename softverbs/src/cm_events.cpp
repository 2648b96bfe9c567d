// RDMA-CM event channels: a real pipe fd the app can poll, one byte per event.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "cm_api.h"
#include "core.h"

namespace sv {

Event* post_cm_event(Id* id, rdma_cm_event_type type, int status, const CmPayload* cm, std::size_t pad_to) {
  auto* e = new Event{};
  e->ev.id = &id->id;
  e->ev.listen_id = id->listen_parent && type == RDMA_CM_EVENT_CONNECT_REQUEST ? &id->listen_parent->id : nullptr;
  e->ev.event = type;
  e->ev.status = status;
  if (cm) {
    rdma_conn_param& p = e->ev.param.conn;
    std::size_t len = std::min<std::size_t>(cm->private_len, sizeof e->pdata);
    std::memcpy(e->pdata, cm->private_data, len);
    // Real IB/RoCE delivers the whole fixed-size field: zero-padded, not trimmed.
    std::size_t shown = core().cfg.exact_private_data ? len : std::max(len, pad_to);
    p.private_data = shown ? e->pdata : nullptr;
    p.private_data_len = static_cast<uint8_t>(shown);
    p.responder_resources = cm->responder_resources;
    p.initiator_depth = cm->initiator_depth;
    p.retry_count = cm->retry_count;
    p.rnr_retry_count = cm->rnr_retry_count;
    p.qp_num = cm->qp_num;
  }
  debug_log("cm event %s status %d on id %p", sv_rdma_event_str(type), status, static_cast<void*>(id));
  id->chan->q.push_back(e);
  char b = 1;
  (void)!::write(id->chan->pipe.wr.get(), &b, 1);
  return e;
}

}  // namespace sv

using namespace sv;

extern "C" {

rdma_event_channel* sv_rdma_create_event_channel(void) {
  core();  // configuration errors surface here, not later on the engine thread
  auto* ch = new EventChannel;
  if (!ch->pipe.open()) {
    delete ch;
    errno = EMFILE;
    return nullptr;
  }
  ch->ch.fd = ch->pipe.rd.get();
  std::lock_guard lk(core().mu);
  ch->fork_generation = core().fork_generation;
  return &ch->ch;
}

void sv_rdma_destroy_event_channel(rdma_event_channel* c) {
  auto* ch = reinterpret_cast<EventChannel*>(c);
  std::lock_guard lk(core().mu);
  for (Event* e : ch->q) delete e;
  delete ch;
}

int sv_rdma_get_cm_event(rdma_event_channel* c, rdma_cm_event** out) {
  auto* ch = reinterpret_cast<EventChannel*>(c);
  {
    std::lock_guard lk(core().mu);
    if (inherited(ch)) return cm_refuse_inherited("rdma_get_cm_event");
  }
  char b;
  // Blocks only if the application left the fd blocking (librdmacm does the same).
  if (::read(ch->ch.fd, &b, 1) != 1) return -1;
  std::lock_guard lk(core().mu);
  if (ch->q.empty()) {
    // Lost a race with rdma_destroy_id dropping this event: report "nothing
    // now" rather than block again on a possibly empty pipe.
    errno = EAGAIN;
    return -1;
  }
  *out = &ch->q.front()->ev;
  ch->q.pop_front();
  // Like librdmacm, only events handed to the app must be acked before destroy.
  ++to_id((*out)->id)->unacked;
  return 0;
}

int sv_rdma_ack_cm_event(rdma_cm_event* ev) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  Id* id = to_id(ev->id);
  if (--id->unacked == 0) c.acked_cv.notify_all();
  delete reinterpret_cast<Event*>(ev);
  return 0;
}

const char* sv_rdma_event_str(rdma_cm_event_type e) {
  static const char* const kNames[] = {
      "RDMA_CM_EVENT_ADDR_RESOLVED",  "RDMA_CM_EVENT_ADDR_ERROR",      "RDMA_CM_EVENT_ROUTE_RESOLVED",
      "RDMA_CM_EVENT_ROUTE_ERROR",    "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
      "RDMA_CM_EVENT_CONNECT_ERROR",  "RDMA_CM_EVENT_UNREACHABLE",     "RDMA_CM_EVENT_REJECTED",
      "RDMA_CM_EVENT_ESTABLISHED",    "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
      "RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
      "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
  auto i = static_cast<std::size_t>(e);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "UNKNOWN EVENT";
}

}  // extern "C"
