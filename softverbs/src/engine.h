// The progress engine: one thread per process running epoll over listen
// sockets, connections, a wake eventfd and a timer list.  All softverbs state
// is guarded by core().mu, which the engine holds while it handles events, so
// application calls and engine work are serialised per process.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "conn.h"
#include "fd.h"

namespace sv {

struct Listener {
  uint64_t serial;
  Fd fd;
  Id* id;
  Device* dev;
};

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // All members below require core().mu to be held.
  Conn* connect(Device* dev, int bound_fd, const sockaddr_storage& dst, int* err);
  uint64_t add_listener(Fd fd, Id* id, Device* dev);
  void remove_listener(uint64_t serial);
  // Queues a chunk and writes as much as the socket takes right now.
  void send(Conn* c, OutChunk&& chunk);
  // The data path's way to send: appends an empty message slot to c's output
  // ring and returns it to be filled in place (its buffers are reused, so this
  // does not allocate).  Nothing is written until flush(c) -- the end of the
  // post call or of the input batch that queued it -- so the messages of one
  // batch leave in one sendmsg without delaying any of them.
  OutChunk& queue(Conn* c);
  // Drops the message queue() returned last (it turned out not to be sent).
  void unqueue_last(Conn* c);
  // Writes as much of c's queued output as the socket takes now; the rest
  // goes on EPOLLOUT.
  void flush(Conn* c);
  // Abortive close: the peer sees a reset/EOF; queued output is dropped.
  void close(Conn* c);
  // Orderly close once everything queued has been written.
  void close_after_flush(Conn* c);
  void update_events(Conn* c);
  // Resumes a connection parked for RNR.
  void unpark(Conn* c);
  uint64_t add_timer(int ms, std::function<void()> fn);
  void cancel_timer(uint64_t id);
  Conn* find(uint64_t serial);
  std::vector<Conn*> all_conns() const;

  // Serves SOFTVERBS_CTL commands on this listening unix socket (ctl_socket.cpp).
  void set_control_socket(Fd fd);

  // Called once by the process exit handler (without the lock held).
  void stop_and_join();
  // In a forked child: forget the parent's thread and fds (never reused).
  void abandon_after_fork();

 private:
  void ensure_started();
  void run();
  void handle_conn(Conn* c, uint32_t events);
  void handle_listener(Listener* l);
  void handle_control();
  void read_input(Conn* c);
  void run_timers();
  int next_timeout_ms() const;
  void reap();
  void wake();

  Fd epfd_;
  Fd wakefd_;
  Fd ctlfd_;
  std::thread thread_;
  bool started_ = false;
  bool stopping_ = false;
  uint64_t next_serial_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<uint64_t, std::unique_ptr<Listener>> listeners_;
  OutChunk discard_;                              // what queue() hands out for a dead connection
  std::vector<std::unique_ptr<Conn>> graveyard_;  // freed after the current event batch
  std::multimap<int64_t, std::pair<uint64_t, std::function<void()>>> timers_;
  uint64_t next_timer_ = 1;
};

int64_t now_ms();

}  // namespace sv
