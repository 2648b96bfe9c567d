// nvmeof::Transport's names and default ports (core/base/transport.cpp), which
// every front end (fio's trtype, Python's transport=, nvmeof-discover -t) reads
// and defaults by.
#include <gtest/gtest.h>

#include "nvmeof/base/transport.hpp"

using nvmeof::Transport;

TEST(Transport, NvmeCliAndSpdkNamesInAnyCase) {
    for (const char* name : {"rdma", "RDMA", "Rdma"}) {
        EXPECT_EQ(nvmeof::parse_transport(name), Transport::rdma) << name;
    }
    for (const char* name : {"tcp", "TCP", "Tcp"}) {
        EXPECT_EQ(nvmeof::parse_transport(name), Transport::tcp) << name;
    }
    for (const char* name : {"", "fc", "FC", "loop", "rdma ", "tcp4", "rd"}) {
        EXPECT_FALSE(nvmeof::parse_transport(name).has_value()) << name;
    }
    EXPECT_EQ(nvmeof::transport_name(Transport::rdma), "rdma");
    EXPECT_EQ(nvmeof::transport_name(Transport::tcp), "tcp");
}

TEST(Transport, DiscoveryPortsAsNvmeCliDefaultsThem) {
    EXPECT_EQ(nvmeof::default_discovery_port(Transport::rdma), 4420);
    EXPECT_EQ(nvmeof::default_discovery_port(Transport::tcp), 8009);
}
