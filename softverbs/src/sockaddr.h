// Loopback socket addresses of either family (127.0.0.0/8 and ::1), as the
// CM keeps them in rdma_cm_id's route and the engine in each connection.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

namespace sv {

// Port in host order; sin_port and sin6_port share their offset.
inline int sa_port(const sockaddr* a) { return ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port); }
inline int sa_port(const sockaddr_storage& a) { return sa_port(reinterpret_cast<const sockaddr*>(&a)); }
inline void sa_set_port(sockaddr* a, int port) {
  reinterpret_cast<sockaddr_in*>(a)->sin_port = htons(static_cast<uint16_t>(port));
}
inline void sa_set_port(sockaddr_storage& a, int port) { sa_set_port(reinterpret_cast<sockaddr*>(&a), port); }
inline socklen_t sa_len(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}
// 0.0.0.0 or ::
bool sa_is_any(const sockaddr* a);
// A copy of `a` (AF_INET or AF_INET6) with `port`.
sockaddr_storage sa_with_port(const sockaddr* a, int port);

}  // namespace sv
