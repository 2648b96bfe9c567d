#include <gtest/gtest.h>

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

TEST(Registers, CapabilitiesRoundTrip) {
    const w::Capabilities cap = w::Capabilities::make(
        {.mqes = 255, .contiguous_queues_required = true, .timeout = 15, .mpsmin = 0, .mpsmax = 4});
    EXPECT_EQ(cap.mqes(), 255);
    EXPECT_EQ(cap.max_queue_entries(), 256u);
    EXPECT_TRUE(cap.contiguous_queues_required());
    EXPECT_EQ(cap.timeout(), 15);
    EXPECT_EQ(cap.timeout_ms(), 7500u);
    EXPECT_TRUE(cap.supports_nvm_command_set());
    EXPECT_FALSE(cap.supports_io_command_sets());
    EXPECT_EQ(cap.mpsmax(), 4);
    EXPECT_EQ(cap.min_page_size(), 4096u);
    // nvmet's CAP: MQES 255, TO 15, CSS bits 37 and 43.
    const w::Capabilities nvmet{255ull | (15ull << 24) | (1ull << 37) | (1ull << 43)};
    EXPECT_TRUE(nvmet.supports_io_command_sets());
    EXPECT_EQ(nvmet.command_sets(), 0x41);
}

TEST(Registers, ControllerConfigFields) {
    const w::ControllerConfig cc{0x00464061};
    EXPECT_TRUE(cc.enabled());
    EXPECT_EQ(cc.command_set(), w::CommandSetSelected::io_command_sets);
    EXPECT_EQ(cc.shutdown(), w::ShutdownNotification::normal);
    EXPECT_EQ(cc.iosqes(), 6);
    EXPECT_EQ(cc.iocqes(), 4);
    EXPECT_EQ(cc.mps(), 0);
    EXPECT_EQ(cc.arbitration(), 0);
}

TEST(Registers, ControllerStatusRoundTrip) {
    const auto csts =
        w::ControllerStatus::make({.ready = true, .shutdown_status = w::ShutdownStatus::complete});
    EXPECT_EQ(csts.raw, 0x9u);
    EXPECT_TRUE(csts.ready());
    EXPECT_FALSE(csts.fatal());
    EXPECT_EQ(csts.shutdown_status(), w::ShutdownStatus::complete);
    EXPECT_TRUE(w::ControllerStatus{0x2}.fatal());
}

TEST(Registers, Version) {
    const w::Version v = w::Version::make(1, 3);
    EXPECT_EQ(v.raw, 0x00010300u);
    EXPECT_EQ(v.major(), 1);
    EXPECT_EQ(v.minor(), 3);
    EXPECT_EQ(w::Version{0x00020100}.minor(), 1);
}

TEST(Registers, PropertySizes) {
    EXPECT_EQ(w::property_size(w::Property::cap), w::PropertySize::eight_bytes);
    EXPECT_EQ(w::property_size(w::Property::cc), w::PropertySize::four_bytes);
    EXPECT_EQ(w::property_size(w::Property::csts), w::PropertySize::four_bytes);
}
