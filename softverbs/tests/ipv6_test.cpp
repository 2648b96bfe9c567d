// IPv6 loopback: ::1 resolves, binds, listens and connects like 127.0.0.1 does,
// the CM reports IPv6 addresses at both ends, and the loopback-only policy holds.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "harness.h"

namespace svt {
namespace {

bool is_v6_loopback(const sockaddr* a) {
  return a->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

uint16_t port_of(const sockaddr* a) { return ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port); }

TEST(Ipv6, ConnectOverLoopbackAndSend) {
  Pair p;
  PairOptions o;
  o.server_ip = "::1";
  ASSERT_TRUE(p.connect(o));
  p.expect_send_works();

  EXPECT_TRUE(is_v6_loopback(rdma_get_local_addr(p.listener.id)));
  EXPECT_TRUE(is_v6_loopback(rdma_get_local_addr(p.client.id)));
  EXPECT_TRUE(is_v6_loopback(rdma_get_peer_addr(p.client.id)));
  EXPECT_EQ(port_of(rdma_get_peer_addr(p.client.id)), p.port);
  EXPECT_EQ(ntohs(rdma_get_dst_port(p.client.id)), p.port);
  // The passive side sees the same connection from its end.
  EXPECT_TRUE(is_v6_loopback(rdma_get_local_addr(p.server.id)));
  EXPECT_EQ(port_of(rdma_get_local_addr(p.server.id)), p.port);
  EXPECT_TRUE(is_v6_loopback(rdma_get_peer_addr(p.server.id)));
  EXPECT_EQ(port_of(rdma_get_peer_addr(p.server.id)), port_of(rdma_get_local_addr(p.client.id)));
  EXPECT_NE(p.client.id->verbs, nullptr);
}

TEST(Ipv6, ExplicitSourceAddress) {
  Pair p;
  PairOptions o;
  o.server_ip = "::1";
  o.client_src = "::1";
  ASSERT_TRUE(p.connect(o));
  p.expect_send_works();
  EXPECT_TRUE(is_v6_loopback(rdma_get_local_addr(p.client.id)));
}

TEST(Ipv6, WildcardListenerTakesBothFamilies) {
  Side listener;
  listener.ch = rdma_create_event_channel();
  ASSERT_NE(listener.ch, nullptr);
  ASSERT_EQ(rdma_create_id(listener.ch, &listener.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_storage any = inet_address("::", 0);
  ASSERT_EQ(rdma_bind_addr(listener.id, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(listener.id, 8), 0);
  const uint16_t port = ntohs(rdma_get_src_port(listener.id));
  ASSERT_NE(port, 0);
  for (const char* ip : {"::1", "127.0.0.1"}) {
    SCOPED_TRACE(ip);
    Side client;
    client.ch = rdma_create_event_channel();
    ASSERT_EQ(rdma_create_id(client.ch, &client.id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_storage dst = inet_address(ip, port);
    ASSERT_EQ(rdma_resolve_addr(client.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
    expect_event(client.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(rdma_resolve_route(client.id, kWaitMs), 0);
    expect_event(client.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    client.setup_qp(client.id);
    ASSERT_EQ(rdma_connect(client.id, nullptr), 0);
    const CmEvent request = expect_event(listener.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    ASSERT_NE(request.id, nullptr);
    EXPECT_EQ(rdma_get_peer_addr(request.id)->sa_family, dst.ss_family);
    EXPECT_EQ(rdma_reject(request.id, nullptr, 0), 0);
    expect_event(client.ch, RDMA_CM_EVENT_REJECTED);
    rdma_destroy_id(request.id);
  }
}

TEST(Ipv6, OnlyLoopbackResolves) {
  Side client;
  client.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(client.ch, &client.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_storage dst = inet_address("2001:db8::1", 4420);  // documentation prefix
  ASSERT_EQ(rdma_resolve_addr(client.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
  expect_event(client.ch, RDMA_CM_EVENT_ADDR_ERROR);
  sockaddr_storage local = inet_address("2001:db8::1", 0);
  EXPECT_NE(rdma_bind_addr(client.id, reinterpret_cast<sockaddr*>(&local)), 0);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
}

TEST(Ipv6, NothingListeningIsRejectedWithInvalidServiceId) {
  Side client;
  client.ch = rdma_create_event_channel();
  ASSERT_EQ(rdma_create_id(client.ch, &client.id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_storage dst = inet_address("::1", 1);  // a privileged port nothing serves
  ASSERT_EQ(rdma_resolve_addr(client.id, nullptr, reinterpret_cast<sockaddr*>(&dst), kWaitMs), 0);
  expect_event(client.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(client.id, kWaitMs), 0);
  expect_event(client.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  client.setup_qp(client.id);
  ASSERT_EQ(rdma_connect(client.id, nullptr), 0);
  const CmEvent rejected = expect_event(client.ch, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(rejected.status, 8);  // IB CM: invalid service ID
}

}  // namespace
}  // namespace svt
