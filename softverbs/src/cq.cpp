// Completion queues, completion channels and asynchronous events.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core.h"
#include "dataplane.h"

namespace sv {

bool Pipe::open() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  rd.reset(fds[0]);
  wr.reset(fds[1]);
  // The engine writes under its lock and must never block on a slow reader.
  return ::fcntl(wr.get(), F_SETFL, O_NONBLOCK) == 0;
}

void push_cqe(Cq* cq, const ibv_wc& wc) {
  const uint64_t tail = cq->tail.load(std::memory_order_relaxed);  // only producers (under core().mu) move it
  if (tail - cq->head.load(std::memory_order_acquire) == cq->ring.size()) {
    // Hardware turns an overrun into a CQ error and an async event; we drop the
    // entry and report the same event (or abort in strict mode, to find the bug).
    if (core().cfg.strict_cq) fatal("CQ %p overrun (cqe=%d)", static_cast<void*>(cq), cq->cq.cqe);
    ++cq->stats->overruns;
    if (!cq->overrun) {
      cq->overrun = true;
      ibv_async_event ev{};
      ev.event_type = IBV_EVENT_CQ_ERR;
      ev.element.cq = &cq->cq;
      post_async_event(to_ctx(cq->cq.context), ev);
    }
    return;
  }
  cq->ring[tail % cq->ring.size()] = wc;
  // Publishes the entry (and the data placed before it) to pollers.  Sequentially
  // consistent with the arm below: a poller that armed and then found the CQ
  // empty is sure to get the channel event.
  cq->tail.store(tail + 1);
  ++cq->stats->completions;
  if (cq->cq.channel && cq->armed.load() && cq->armed.exchange(false)) {
    ibv_cq* p = &cq->cq;
    (void)!::write(to_ch(cq->cq.channel)->wfd.get(), &p, sizeof p);
  }
}

void post_async_event(Context* ctx, const ibv_async_event& ev) {
  ctx->async_events.push_back(ev);
  char b = 1;
  (void)!::write(ctx->async_pipe.wr.get(), &b, 1);
}

int dp_poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = to_cq(ibcq);
  if (n <= 0 || cq->tail.load() == cq->head.load(std::memory_order_relaxed)) return 0;  // nothing: no lock
  std::lock_guard lk(cq->mu);
  uint64_t head = cq->head.load(std::memory_order_relaxed);
  const uint64_t avail = cq->tail.load() - head;
  const int got = static_cast<int>(std::min<uint64_t>(avail, static_cast<uint64_t>(n)));
  const std::size_t size = cq->ring.size();
  std::size_t at = head % size;
  for (int i = 0; i < got; ++i) {
    wc[i] = cq->ring[at];
    if (++at == size) at = 0;
  }
  // Hands the slots back to the producer.
  cq->head.store(head + static_cast<uint64_t>(got), std::memory_order_release);
  return got;
}

int dp_req_notify_cq(ibv_cq* ibcq, int) {
  to_cq(ibcq)->armed.store(true);
  return 0;
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  {
    std::lock_guard lk(core().mu);
    if (inherited(to_ctx(ctx))) {
      refuse_inherited("ibv_create_comp_channel");
      return nullptr;
    }
  }
  auto* ch = new CompChannel{};
  Pipe p;
  if (!p.open()) {
    delete ch;
    errno = EMFILE;
    return nullptr;
  }
  ch->ch.context = ctx;
  ch->ch.fd = p.rd.release();
  ch->wfd = std::move(p.wr);
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* ch) {
  ::close(ch->fd);
  delete to_ch(ch);
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel, int) {
  Core& c = core();
  std::lock_guard lk(c.mu);
  if (inherited(to_ctx(ctx))) {
    refuse_inherited("ibv_create_cq");
    return nullptr;
  }
  ibv_device_attr attr;
  fill_device_attr(to_ctx(ctx)->device, &attr);
  if (cqe < 1 || cqe > attr.max_cqe) {
    errno = EINVAL;
    return nullptr;
  }
  if (c.faults.should_fail("cq")) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* cq = new Cq;
  std::memset(&cq->cq, 0, sizeof cq->cq);
  cq->cq.context = ctx;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  cq->cq.handle = c.next_key++;
  cq->ring.resize(static_cast<std::size_t>(cqe));
  cq->stats = c.stats.add_cq(cq->cq.handle, cqe);
  c.live_cqs.insert(&cq->cq);
  return &cq->cq;
}

int ibv_destroy_cq(ibv_cq* ibcq) {
  std::lock_guard lk(core().mu);
  Cq* cq = to_cq(ibcq);
  if (cq->qp_refs > 0) return EBUSY;
  // A forked child's stats no longer hold its parent's CQs.
  if (!inherited(to_ctx(ibcq->context))) core().stats.retire(cq->stats);
  core().live_cqs.erase(ibcq);
  delete cq;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context) {
  for (;;) {
    ibv_cq* p = nullptr;
    if (::read(ch->fd, &p, sizeof p) != static_cast<ssize_t>(sizeof p)) return -1;
    std::lock_guard lk(core().mu);
    if (core().live_cqs.count(p) == 0) continue;  // its CQ was destroyed unread: dropped
    *cq = p;
    *cq_context = p->cq_context;
    return 0;
  }
}

void ibv_ack_cq_events(ibv_cq*, unsigned int) {}

int ibv_get_async_event(ibv_context* ctx, ibv_async_event* ev) {
  Context* c = to_ctx(ctx);
  char b;
  if (::read(c->async_pipe.rd.get(), &b, 1) != 1) return -1;
  std::lock_guard lk(core().mu);
  if (c->async_events.empty()) {
    errno = EAGAIN;
    return -1;
  }
  *ev = c->async_events.front();
  c->async_events.pop_front();
  return 0;
}

void ibv_ack_async_event(ibv_async_event*) {}

}  // extern "C"
