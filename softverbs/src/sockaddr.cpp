#include "sockaddr.h"

#include <cstring>

namespace sv {

bool sa_is_any(const sockaddr* a) {
  if (a->sa_family == AF_INET6) return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
}

sockaddr_storage sa_with_port(const sockaddr* a, int port) {
  sockaddr_storage s{};
  std::memcpy(&s, a, sa_len(a));
  sa_set_port(s, port);
  return s;
}

}  // namespace sv
