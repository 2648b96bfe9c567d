// SOFTVERBS_CTL: a per-process unix socket that accepts the control API's
// commands from outside the process (cross-process tests, by hand):
//   fault <rules>   add fault rules (grammar in faults.h)
//   clear           remove all fault rules
//   drop <port|-1>  reset established connections now
//   stats <path>    dump per-QP and per-CQ counters as JSON (kept with SOFTVERBS_STATS)
// One command per connection, one reply line: "ok ..." or "error ...".
// Example: python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX);
//          s.connect(sys.argv[1]); s.sendall(b"drop -1\n"); print(s.recv(99))' PATH
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core.h"
#include "protocol.h"

namespace sv {
namespace {

constexpr int kCtlIoTimeoutMs = 200;  // a stuck client never stalls the engine for long
constexpr std::size_t kCtlMaxLine = 4096;

int drop_connections(int port) {
  int n = 0;
  for (Conn* x : core().engine.all_conns()) {
    if (x->dead || x->state != ConnState::kEstablished) continue;
    int lp = rdma_port_of(sa_port(x->local)), rp = rdma_port_of(sa_port(x->peer));
    if (port >= 0 && lp != port && rp != port) continue;
    on_conn_lost(x, ECONNRESET);  // resets the socket: the peer sees the loss too
    ++n;
  }
  return n;
}

std::string execute(const std::string& line) {
  Core& c = core();
  auto sp = line.find(' ');
  std::string cmd = line.substr(0, sp), arg = sp == std::string::npos ? "" : line.substr(sp + 1);
  std::string err;
  if (cmd == "fault") return c.faults.add(arg, &err) ? "ok" : "error " + err;
  if (cmd == "clear") return c.faults.clear(), "ok";
  if (cmd == "drop") return "ok " + std::to_string(drop_connections(arg.empty() ? -1 : std::atoi(arg.c_str())));
  if (cmd == "stats") return c.stats.dump(arg, c.faults.fired_total()) ? "ok" : "error cannot write " + arg;
  return "error unknown command '" + cmd + "'";
}

}  // namespace

// Called with core().mu held, from the engine thread.
void Engine::handle_control() {
  Fd cl(accept4(ctlfd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!cl.valid()) return;
  timeval tv{0, kCtlIoTimeoutMs * 1000};
  setsockopt(cl.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(cl.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string line;
  char buf[256];
  while (line.find('\n') == std::string::npos && line.size() < kCtlMaxLine) {
    ssize_t n = ::recv(cl.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  line = line.substr(0, line.find('\n'));
  std::string reply = execute(line) + "\n";
  (void)!::send(cl.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
}

// Opens the control socket named by SOFTVERBS_CTL ("%p" = pid), if any.
void open_control_socket(Engine& engine, const std::string& path_tmpl) {
  std::string path = path_tmpl;
  if (auto p = path.find("%p"); p != std::string::npos) path.replace(p, 2, std::to_string(getpid()));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) fatal("SOFTVERBS_CTL path too long: %s", path.c_str());
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ::unlink(path.c_str());
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 4) != 0)
    fatal("SOFTVERBS_CTL: cannot listen on %s: %s", path.c_str(), std::strerror(errno));
  engine.set_control_socket(std::move(fd));
}

int drop_connections_locked(int port) { return drop_connections(port); }

}  // namespace sv
