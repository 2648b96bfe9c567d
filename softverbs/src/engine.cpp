#include "engine.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "config.h"
#include "core.h"
#include "protocol.h"

namespace sv {
namespace {

constexpr uint64_t kWakeTag = 0;  // epoll tag of the eventfd; serials start at 1
constexpr uint64_t kListenerBit = uint64_t{1} << 63;
constexpr uint64_t kControlTag = uint64_t{1} << 62;

// What parsing a message fills, sized once per connection so the data path does not allocate.
void reserve_message_buffers(Conn* c) {
  c->in.targets.reserve(kMaxSge);
  c->cur_recv.sges.reserve(kMaxSge);
}

// A connection stands in for an RDMA link, not a WAN flow. Small messages go
// at once (no Nagle). And no pacing: BBR, the default on some systems, paces
// its sends with a timer when no fair-queue qdisc does it, which on loopback
// cost this VM about 30 % of its large-read bandwidth (2026-12-04: 1 MiB reads
// 2,469 → 3,580 MiB/s with cubic). Cubic does not pace. Best effort: a kernel
// without cubic, or one that refuses it, keeps its default.
void configure_stream(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  static constexpr char kCongestionControl[] = "cubic";
  setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, kCongestionControl, sizeof kCongestionControl - 1);
}

}  // namespace

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::size_t OutChunk::total() const {
  std::size_t n = sizeof(WireHdr) + owned.size();
  for (const iovec& v : ext) n += v.iov_len;
  return n;
}

void OutChunk::reset() {
  hdr = WireHdr{};
  // A rare large copy (GPU data, a corrupted payload) is not kept around.
  if (owned.capacity() > kOutKeepBytes) std::vector<uint8_t>().swap(owned);
  owned.clear();
  ext.clear();
  sent = 0;
  not_before_ms = 0;
}

void OutChunk::materialize() {
  for (const iovec& v : ext) {
    const auto* p = static_cast<const uint8_t*>(v.iov_base);
    owned.insert(owned.end(), p, p + v.iov_len);
  }
  ext.clear();
}

void Engine::ensure_started() {
  if (started_) return;
  epfd_.reset(epoll_create1(EPOLL_CLOEXEC));
  wakefd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epfd_.valid() || !wakefd_.valid()) fatal("cannot create epoll/eventfd: %s", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, wakefd_.get(), &ev);
  started_ = true;
  thread_ = std::thread([this] { run(); });
  // Named so that top, perf and /proc tell the progress thread from the application's own.
  pthread_setname_np(thread_.native_handle(), "softverbs");
}

void Engine::wake() {
  uint64_t one = 1;
  if (wakefd_.valid()) (void)!::write(wakefd_.get(), &one, sizeof one);
}

Conn* Engine::connect(Device* dev, int bound_fd, const sockaddr_storage& dst, int* err) {
  ensure_started();
  Fd fd(bound_fd);
  auto c = std::make_unique<Conn>();
  c->serial = next_serial_++;
  c->dev = dev;
  c->peer = dst;
  configure_stream(fd.get());
  const auto* to = reinterpret_cast<const sockaddr*>(&dst);
  int rc = ::connect(fd.get(), to, sa_len(to));
  if (rc != 0 && errno != EINPROGRESS) {
    *err = errno;
    return nullptr;
  }
  socklen_t len = sizeof c->local;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&c->local), &len);
  c->fd = std::move(fd);
  c->state = ConnState::kConnecting;
  c->in.staging.resize(kInStagingBytes);
  reserve_message_buffers(c.get());
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.u64 = c->serial;
  c->ep_events = ev.events;
  epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, c->fd.get(), &ev);
  Conn* raw = c.get();
  conns_.emplace(raw->serial, std::move(c));
  return raw;
}

uint64_t Engine::add_listener(Fd fd, Id* id, Device* dev) {
  ensure_started();
  auto l = std::make_unique<Listener>();
  l->serial = next_serial_++;
  l->fd = std::move(fd);
  l->id = id;
  l->dev = dev;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = l->serial | kListenerBit;
  epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, l->fd.get(), &ev);
  uint64_t s = l->serial;
  listeners_.emplace(s, std::move(l));
  return s;
}

void Engine::set_control_socket(Fd fd) {
  ensure_started();
  ctlfd_ = std::move(fd);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kControlTag;
  epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, ctlfd_.get(), &ev);
}

void Engine::remove_listener(uint64_t serial) {
  auto it = listeners_.find(serial);
  if (it == listeners_.end()) return;
  epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, it->second->fd.get(), nullptr);
  listeners_.erase(it);
}

Conn* Engine::find(uint64_t serial) {
  auto it = conns_.find(serial);
  return it == conns_.end() ? nullptr : it->second.get();
}

std::vector<Conn*> Engine::all_conns() const {
  std::vector<Conn*> v;
  for (const auto& [s, c] : conns_) v.push_back(c.get());
  return v;
}

void Engine::send(Conn* c, OutChunk&& chunk) {
  if (c->dead) return;
  OutChunk& slot = queue(c);
  const int64_t not_before = slot.not_before_ms;
  slot = std::move(chunk);
  slot.not_before_ms = not_before;
  if (c->state != ConnState::kConnecting) flush(c);
}

OutChunk& Engine::queue(Conn* c) {
  if (c->dead) {
    discard_.reset();
    return discard_;
  }
  OutChunk& ch = c->out.push_back();
  ch.reset();
  if (c->faults.delay_ms > 0) {
    ch.not_before_ms = now_ms() + c->faults.delay_ms;
    uint64_t s = c->serial;
    add_timer(c->faults.delay_ms, [this, s] {
      if (Conn* x = find(s)) flush(x);
    });
  }
  return ch;
}

void Engine::unqueue_last(Conn* c) {
  if (!c->dead && !c->out.empty()) c->out.pop_back();
}

void Engine::update_events(Conn* c) {
  if (c->dead) return;
  uint32_t want = 0;
  if (c->state == ConnState::kConnecting) {
    want = EPOLLOUT;
  } else {
    if (!c->in.parked) want |= EPOLLIN | EPOLLRDHUP;
    bool due = !c->out.empty() && c->out.front().not_before_ms <= now_ms();
    if (due) want |= EPOLLOUT;
  }
  if (want == c->ep_events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c->serial;
  epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
  c->ep_events = want;
}

void Engine::close(Conn* c) {
  if (c->dead) return;
  c->dead = true;
  epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
  // A zero linger turns close() into a reset, as a vanished peer looks on the wire.
  linger lg{1, 0};
  setsockopt(c->fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  c->fd.reset();
  c->out.clear();
  if (c->rnr_timer) cancel_timer(c->rnr_timer);
  detach_conn(c);
  auto it = conns_.find(c->serial);
  if (it != conns_.end()) {
    graveyard_.push_back(std::move(it->second));
    conns_.erase(it);
  }
  wake();
}

void Engine::close_after_flush(Conn* c) {
  if (c->dead) return;
  c->shut_after_flush = true;
  c->state = ConnState::kClosing;
  flush(c);
}

void Engine::unpark(Conn* c) {
  if (c->dead || !c->in.parked) return;
  c->in.parked = false;
  if (c->rnr_timer) {
    cancel_timer(c->rnr_timer);
    c->rnr_timer = 0;
  }
  read_input(c);
  if (!c->dead) update_events(c);
}

uint64_t Engine::add_timer(int ms, std::function<void()> fn) {
  ensure_started();
  uint64_t id = next_timer_++;
  int64_t when = now_ms() + ms;
  bool earliest = timers_.empty() || when < timers_.begin()->first;
  timers_.emplace(when, std::make_pair(id, std::move(fn)));
  if (earliest) wake();
  return id;
}

void Engine::cancel_timer(uint64_t id) {
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->second.first == id) {
      timers_.erase(it);
      return;
    }
  }
}

int Engine::next_timeout_ms() const {
  if (timers_.empty()) return kEngineMaxSleepMs;
  int64_t d = timers_.begin()->first - now_ms();
  return static_cast<int>(std::clamp<int64_t>(d, 0, kEngineMaxSleepMs));
}

void Engine::run_timers() {
  int64_t now = now_ms();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto fn = std::move(timers_.begin()->second.second);
    timers_.erase(timers_.begin());
    fn();
  }
}

void Engine::reap() { graveyard_.clear(); }

void Engine::run() {
  epoll_event evs[kEpollBatch];
  std::unique_lock lk(core().mu);
  while (!stopping_) {
    int timeout = next_timeout_ms();
    lk.unlock();
    int n = epoll_wait(epfd_.get(), evs, kEpollBatch, timeout);
    lk.lock();
    for (int i = 0; i < n && !stopping_; ++i) {
      uint64_t tag = evs[i].data.u64;
      if (tag == kControlTag) {
        handle_control();
      } else if (tag == kWakeTag) {
        uint64_t v;
        (void)!::read(wakefd_.get(), &v, sizeof v);
      } else if (tag & kListenerBit) {
        auto it = listeners_.find(tag & ~kListenerBit);
        if (it != listeners_.end()) handle_listener(it->second.get());
      } else if (Conn* c = find(tag)) {
        handle_conn(c, evs[i].events);
      }
    }
    run_timers();
    reap();
  }
}

void Engine::handle_listener(Listener* l) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = accept4(l->fd.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    auto c = std::make_unique<Conn>();
    c->serial = next_serial_++;
    c->fd.reset(fd);
    c->peer = peer;
    len = sizeof c->local;
    getsockname(fd, reinterpret_cast<sockaddr*>(&c->local), &len);
    configure_stream(fd);
    c->state = ConnState::kAwaitReq;
    c->in.staging.resize(kInStagingBytes);
    reserve_message_buffers(c.get());
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->serial;
    c->ep_events = ev.events;
    epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, fd, &ev);
    Conn* raw = c.get();
    conns_.emplace(raw->serial, std::move(c));
    cm_on_accepted(raw, l);
  }
}

void Engine::handle_conn(Conn* c, uint32_t events) {
  if (c->state == ConnState::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      cm_on_tcp_failed(c, err);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    cm_on_tcp_connected(c);
    if (c->dead) return;
    flush(c);
    update_events(c);
    return;
  }
  // A connection parked for RNR does not read, so level-triggered HUP/ERR
  // would spin; the peer is gone either way.
  if (c->in.parked && (events & (EPOLLHUP | EPOLLERR))) {
    on_conn_lost(c, ECONNRESET);
    return;
  }
  if ((events & EPOLLOUT) && !c->dead) flush(c);
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) && !c->dead) read_input(c);
  if (!c->dead) update_events(c);
}

void Engine::stop_and_join() {
  {
    std::lock_guard lk(core().mu);
    if (!started_) return;
    stopping_ = true;
    wake();
  }
  if (thread_.joinable()) thread_.join();
}

void Engine::abandon_after_fork() {
  // The parent's engine thread does not exist here; its std::thread handle must
  // never be joined or destroyed, so it is parked in a leaked allocation.
  if (thread_.joinable()) new std::thread(std::move(thread_));
  for (auto& [s, c] : conns_) (void)s, c->fd.reset();
  for (auto& [s, l] : listeners_) (void)s, l->fd.reset();
  for (auto& [s, c] : conns_) {
    (void)s;
    c->dead = true;
    (void)c.release();  // inherited state is never reused; QPs may still point here
  }
  conns_.clear();
  listeners_.clear();
  graveyard_.clear();
  timers_.clear();
  epfd_.reset();
  wakefd_.reset();
  ctlfd_.reset();  // the parent owns the control socket path
  started_ = false;
  stopping_ = false;
}

}  // namespace sv
