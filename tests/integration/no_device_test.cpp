// Run with rdma-core's own libraries (no softverbs): on a machine without any
// RDMA device, connecting says so and what to check, at the first RDMA-CM step.
#include <gtest/gtest.h>
#include <unistd.h>

#include "nvmeof/nvmeof.hpp"

using namespace nvmeof;

TEST(NoDevice, ConnectNamesTheMissingRdmaDevice) {
    if (access("/dev/infiniband/rdma_cm", F_OK) == 0) {
        GTEST_SKIP() << "this machine has RDMA-CM (/dev/infiniband/rdma_cm)";
    }
    Options o;
    o.target = "127.0.0.1";
    o.subsystem_nqn = "nqn.2026-01.io.nvmeof:test";
    o.timeout = std::chrono::seconds(2);
    try {
        Controller::connect(o);
        FAIL() << "connected without an RDMA device";
    } catch (const ConnectError& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.cause(), ConnectFailure::device_error) << what;
        EXPECT_EQ(e.step(), "opening RDMA-CM (rdma_create_event_channel)") << what;
        EXPECT_NE(what.find("no RDMA device: RDMA-CM is not available"), std::string::npos) << what;
        EXPECT_NE(what.find("softverbs-run"), std::string::npos) << what;
    }
}
