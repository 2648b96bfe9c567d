// IPv6 loopback end to end: the target listens on ::1, the core connects to
// "::1" and to the bracketed "[::1]", data round-trips, and the limits name
// IPv6 addresses.
#include <gtest/gtest.h>

#include <cstring>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

TEST(Ipv6, ConnectsToLoopbackPlainAndBracketed) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target on ::1";
    TargetProcess target({"--listen", "::1"});
    ASSERT_EQ(target.address(), "[::1]");  // how the target prints an IPv6 listen address
    for (const char* address : {"::1", "[::1]"}) {
        SCOPED_TRACE(address);
        Options o = target.options();
        o.target = address;
        auto ctrl = Controller::connect(o);
        EXPECT_EQ(ctrl.limits().target_address, "[::1]:" + std::to_string(target.port()));
        EXPECT_EQ(ctrl.limits().source_address.rfind("[::1]:", 0), 0u)
            << ctrl.limits().source_address;
        auto ns = ctrl.namespace_at(1);
        auto out = ctrl.allocate(8 * ns.lba_size());
        auto in = ctrl.allocate(out.size());
        std::memset(out.data(), address[0], out.size());
        ns.write(out, 0);
        ns.read(in, 0, 8);
        EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
    }
}

TEST(Ipv6, NothingListeningNamesTheBracketedAddress) {
    if (TargetProcess::external())
        GTEST_SKIP() << "needs the loopback device";
    Options o;
    o.target = "::1";
    o.port = 1;  // privileged: nothing of ours listens there
    o.subsystem_nqn = nvmeof::test::kTestNqn;
    o.timeout = std::chrono::seconds(5);
    try {
        Controller::connect(o);
        FAIL() << "connected to a port nothing listens on";
    } catch (const ConnectError& e) {
        EXPECT_EQ(e.cause(), ConnectFailure::no_listener) << e.what();
        EXPECT_NE(std::string(e.what()).find("nothing listens on [::1]:1"), std::string::npos)
            << e.what();
    }
}
