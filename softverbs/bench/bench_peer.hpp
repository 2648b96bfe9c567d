// What the softverbs benchmark programs share: a fatal error, the next CM
// event, and the idle step of a peer that sleeps on its completion channel.
#pragma once

#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softverbs_bench {

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "%s: %s (errno %d)\n", program_invocation_short_name, what, errno);
  std::exit(2);
}

// The next event on `channel` within wait_ms; its id and private data (as an
// Info) when asked for.
template <typename Info = char>
rdma_cm_event_type next_event(int wait_ms, rdma_event_channel* channel, rdma_cm_id** id = nullptr,
                              Info* info = nullptr) {
  pollfd p{channel->fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) != 1) die("no CM event");
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(channel, &ev)) die("rdma_get_cm_event");
  rdma_cm_event_type type = ev->event;
  if (id) *id = ev->id;
  if (info && ev->param.conn.private_data) std::memcpy(info, ev->param.conn.private_data, sizeof *info);
  rdma_ack_cm_event(ev);
  return type;
}

// Called when a poll of `cq` found nothing. First arms the CQ and returns, so
// the caller polls once more (a CQE that arrived just before the arm raises no
// event); the next time sleeps until a completion or a CM event. False when
// the CM channel fired (the other side disconnected).
inline bool wait_for_completions(ibv_cq* cq, ibv_comp_channel* comp, rdma_event_channel* cm, bool& armed, int wait_ms,
                                 const char* idle_what) {
  if (!armed) {
    ibv_req_notify_cq(cq, 0);
    armed = true;
    return true;
  }
  armed = false;
  pollfd fds[2] = {{comp->fd, POLLIN, 0}, {cm->fd, POLLIN, 0}};
  if (poll(fds, 2, wait_ms) <= 0) die(idle_what);
  if (fds[1].revents) return false;
  ibv_cq* c = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(comp, &c, &ctx) == 0) ibv_ack_cq_events(c, 1);
  return true;
}

}  // namespace softverbs_bench
