// Non-blocking stream I/O of the engine: batched writev of queued chunks and
// an incremental parser that places payloads straight into their targets.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core.h"
#include "engine.h"
#include "gpu_memory.h"
#include "memory.h"
#include "protocol.h"

namespace sv {
namespace {

// Gathers the unsent parts of queued messages for one sendmsg.
struct IovBatch {
  iovec v[kMaxIovPerWrite];
  int n = 0;
};

// Appends the unsent part of one chunk to iov; returns false when iov is full.
bool append_iov(const OutChunk& ch, IovBatch& iov) {
  std::size_t skip = ch.sent;
  auto add = [&](const void* p, std::size_t len) {
    if (skip >= len) {
      skip -= len;
      return true;
    }
    if (iov.n >= kMaxIovPerWrite) return false;
    iov.v[iov.n++] = {const_cast<uint8_t*>(static_cast<const uint8_t*>(p)) + skip, len - skip};
    skip = 0;
    return true;
  };
  if (!add(&ch.hdr, sizeof ch.hdr)) return false;
  if (!ch.owned.empty() && !add(ch.owned.data(), ch.owned.size())) return false;
  for (const iovec& v : ch.ext)
    if (v.iov_len && !add(v.iov_base, v.iov_len)) return false;
  return true;
}

// Copies n bytes from src into the parser's current targets.  A failed copy
// into device memory fails the message (the sink decides how) and stops placing.
void deliver(InParser& in, const uint8_t* src, std::size_t n) {
  in.remaining -= static_cast<uint32_t>(n);
  if (in.sink == Sink::kDiscard || in.status != IBV_WC_SUCCESS) return;
  while (n > 0 && in.tgt_idx < in.targets.size()) {
    const Span& t = in.targets[in.tgt_idx];
    std::size_t k = std::min(n, t.len - in.tgt_off);
    if (!write_span(t, in.tgt_off, src, k)) {
      in.status = dp_device_copy_failure(in.sink);
      return;
    }
    src += k;
    n -= k;
    in.tgt_off += k;
    if (in.tgt_off == t.len) {
      ++in.tgt_idx;
      in.tgt_off = 0;
    }
  }
}

// Before a message that wrote GPU memory completes, its copies must have
// landed: completions are how the application learns the data is there.
void settle_device_targets(InParser& in) {
  if (!in.device_targets || in.status != IBV_WC_SUCCESS) return;
  const void* settled = nullptr;
  for (const Span& t : in.targets) {
    if (!t.gpu.device() || t.gpu.context == settled) continue;
    if (!gpu_settle(t.gpu)) {
      in.status = dp_device_copy_failure(in.sink);
      return;
    }
    settled = t.gpu.context;
  }
}

// Payloads of large messages are read from the socket straight into their
// (host memory) targets rather than through staging.
bool reads_direct(const InParser& in) {
  return in.hdr.len >= kDirectReadMin && in.remaining > 0 && in.sink != Sink::kDiscard && !in.device_targets &&
         in.status == IBV_WC_SUCCESS;
}

// A message's payload size decides how far the next reads look ahead: a
// stream of large payloads reads ahead only kBulkReadAhead bytes (so the next
// payload is not pulled into staging, to be copied twice); small messages keep
// the whole staging buffer for batching.  Payloads below kBulkReadAhead
// (responses, ACKs, commands) leave the choice as it is.
void note_payload_size(InParser& in) {
  if (in.hdr.len >= kBulkReadAhead) in.bulk = in.hdr.len >= kDirectReadMin;
}

// Counts payload bytes of data messages that went through staging.
void count_staged(Conn* c, std::size_t n) {
  const Sink s = c->in.sink;
  if (c->qp && (s == Sink::kWrite || s == Sink::kRecv || s == Sink::kReadResp)) c->qp->stats->bytes_staged += n;
}

}  // namespace

void Engine::flush(Conn* c) {
  IovBatch iov;
  while (!c->dead && !c->out.empty() && c->state != ConnState::kConnecting) {
    iov.n = 0;
    // Only a delayed message (fault injection) needs the clock; one behind an
    // undelayed front waits for the next round of this loop.
    const int64_t now = c->out.front().not_before_ms != 0 ? now_ms() : 0;
    // Fault "drop": the batch ends with the message the reset comes after, so
    // none behind it reaches the peer (loopback delivers what sendmsg took).
    const int64_t drop_at = c->faults.drop_armed_at();
    int64_t data_msgs = static_cast<int64_t>(c->faults.msgs_sent);
    for (std::size_t i = 0; i < c->out.size(); ++i) {
      const OutChunk& ch = c->out[i];
      if (ch.not_before_ms > now) break;  // fault "delay": a timer flushes later
      if (!append_iov(ch, iov)) break;
      if (drop_at > 0 && is_request(static_cast<Op>(ch.hdr.op)) && ++data_msgs == drop_at) break;
    }
    if (iov.n == 0) break;
    msghdr mh{};
    mh.msg_iov = iov.v;
    mh.msg_iovlen = static_cast<std::size_t>(iov.n);
    ssize_t n = ::sendmsg(c->fd.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      on_conn_lost(c, errno);
      return;
    }
    auto left = static_cast<std::size_t>(n);
    while (left > 0 && !c->out.empty()) {
      OutChunk& ch = c->out.front();
      std::size_t rest = ch.total() - ch.sent;
      if (left < rest) {
        ch.sent += left;
        left = 0;
        break;
      }
      left -= rest;
      bool data = is_request(static_cast<Op>(ch.hdr.op));
      c->out.pop_front();
      if (data && c->faults.drop_now()) {
        debug_log("fault: dropping connection after %lld messages", static_cast<long long>(c->faults.drop_after_msgs));
        on_conn_lost(c, ECONNRESET);
        return;
      }
    }
  }
  if (!c->dead && c->out.empty() && c->shut_after_flush) ::shutdown(c->fd.get(), SHUT_WR);
  update_events(c);
}

void Engine::read_input(Conn* c) {
  InParser& in = c->in;
  std::size_t budget = kReadBudgetBytes;
  auto fill = [&]() -> bool {
    if (in.pos == in.end) in.pos = in.end = 0;
    std::size_t room = in.staging.size() - in.end;
    // Between messages of a large-payload stream, look ahead only a little; a
    // payload that cannot go direct (GPU memory, discarded) still fills staging.
    if (in.bulk && !in.in_payload) room = std::min(room, kBulkReadAhead);
    ssize_t n = ::recv(c->fd.get(), in.staging.data() + in.end, room, MSG_DONTWAIT);
    if (n > 0) {
      in.end += static_cast<std::size_t>(n);
      budget -= std::min(budget, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0)
      on_conn_lost(c, 0);
    else if (errno != EAGAIN && errno != EINTR)
      on_conn_lost(c, errno);
    return false;
  };
  auto start_message = [&] {
    note_payload_size(in);
    dp_on_header(c);
    if (c->dead || in.parked) return;
    if (in.remaining > 0)
      in.in_payload = true;
    else
      dp_on_message(c);
  };
  // A message parked for RNR is re-examined first (post_recv or the timer woke us).
  if (!in.in_payload && in.hdr_got == sizeof(WireHdr)) {
    in.hdr_got = 0;
    start_message();
    if (in.parked) in.hdr_got = sizeof(WireHdr);
  }
  while (!c->dead && !in.parked && budget > 0) {
    // Replies go out in bounded batches, so a long input batch does not hold them back.
    if (c->out.size() >= kOutBatchMessages) {
      flush(c);
      if (c->dead) break;
    }
    if (!in.in_payload) {
      if (in.pos == in.end && !fill()) break;
      std::size_t k = std::min(sizeof(WireHdr) - in.hdr_got, in.end - in.pos);
      std::memcpy(reinterpret_cast<uint8_t*>(&in.hdr) + in.hdr_got, in.staging.data() + in.pos, k);
      in.pos += k;
      in.hdr_got += k;
      if (in.hdr_got < sizeof(WireHdr)) continue;
      in.hdr_got = 0;
      start_message();
      // A parked header stays "complete" so the next read_input retries it.
      if (in.parked) in.hdr_got = sizeof(WireHdr);
      continue;
    }
    if (in.pos < in.end) {
      std::size_t k = std::min<std::size_t>(in.remaining, in.end - in.pos);
      count_staged(c, k);
      deliver(in, in.staging.data() + in.pos, k);
      in.pos += k;
    } else if (reads_direct(in)) {
      // The rest of the payload goes from the socket straight into the target
      // memory; when the iovecs hold all of it, the same readv takes the
      // next header (and what follows it, up to kBulkReadAhead) into staging.
      IovBatch iov;
      std::size_t want = in.remaining;
      for (std::size_t i = in.tgt_idx, off = in.tgt_off; i < in.targets.size() && want > 0 && iov.n < kMaxIovPerWrite;
           ++i, off = 0) {
        std::size_t k = std::min(want, in.targets[i].len - off);
        iov.v[iov.n++] = {reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(in.targets[i].addr)) + off, k};
        want -= k;
      }
      in.pos = in.end = 0;
      if (want == 0 && iov.n < kMaxIovPerWrite) iov.v[iov.n++] = {in.staging.data(), kBulkReadAhead};
      ssize_t n = ::readv(c->fd.get(), iov.v, iov.n);
      if (n <= 0) {
        if (n == 0)
          on_conn_lost(c, 0);
        else if (errno != EAGAIN && errno != EINTR)
          on_conn_lost(c, errno);
        break;
      }
      auto got = static_cast<std::size_t>(n);
      budget -= std::min(budget, got);
      std::size_t placed = std::min<std::size_t>(got, in.remaining);
      in.end = got - placed;  // read ahead into staging
      in.remaining -= static_cast<uint32_t>(placed);
      while (placed > 0) {
        std::size_t k = std::min(placed, in.targets[in.tgt_idx].len - in.tgt_off);
        placed -= k;
        in.tgt_off += k;
        if (in.tgt_off == in.targets[in.tgt_idx].len) {
          ++in.tgt_idx;
          in.tgt_off = 0;
        }
      }
    } else if (!fill()) {
      break;
    }
    if (in.remaining == 0) {
      in.in_payload = false;
      settle_device_targets(in);
      dp_on_message(c);
    }
  }
  if (!c->dead) dp_flush_ack(c);
  // The flush point of the engine side: replies and ACKs of this batch leave together.
  if (!c->dead) flush(c);
  // Bytes already staged must not wait for another EPOLLIN that may never come.
  if (!c->dead && !in.parked && budget == 0) {
    uint64_t s = c->serial;
    add_timer(0, [this, s] {
      if (Conn* x = find(s)) read_input(x);
    });
  }
}

}  // namespace sv
