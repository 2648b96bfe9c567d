// The in-capsule write limit from Identify Controller and the device, and the
// descriptor such a write carries.
#include <gtest/gtest.h>

#include <cstring>

#include "host/in_capsule.hpp"
#include "nvmeof/wire/sgl.hpp"

using namespace nvmeof::detail;
namespace wire = nvmeof::wire;

namespace {
constexpr std::uint32_t kNvmetSgls = 0x00100005;  // keyed + offset, as nvmet and SPDK report
constexpr std::uint32_t kNvmetIoccsz = 260;       // 64-byte SQE + 4 KiB

InCapsuleInputs nvmet_like() {
    return {true, kNvmetIoccsz, kNvmetSgls, 0, 4};
}
}  // namespace

TEST(InCapsuleLimit, CapsuleSizeLessTheSqe) {
    EXPECT_EQ(in_capsule_write_limit(nvmet_like()), 4096u);
    InCapsuleInputs in = nvmet_like();
    in.ioccsz = 36;
    EXPECT_EQ(in_capsule_write_limit(in), 512u);
    in.ioccsz = 5;
    EXPECT_EQ(in_capsule_write_limit(in), 16u);
}

TEST(InCapsuleLimit, NoneWhenTheCapsuleHoldsOnlyTheSqe) {
    InCapsuleInputs in = nvmet_like();
    in.ioccsz = 4;
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
    in.ioccsz = 0;  // a controller reporting less than the minimum
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
}

TEST(InCapsuleLimit, NoneWithoutTheOffsetSglBit) {
    InCapsuleInputs in = nvmet_like();
    in.sgls = kNvmetSgls & ~wire::kSglsOffsetAddress;
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
}

TEST(InCapsuleLimit, NoneWhenTurnedOff) {
    InCapsuleInputs in = nvmet_like();
    in.enabled = false;
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
}

TEST(InCapsuleLimit, NoneWithADataOffset) {
    InCapsuleInputs in = nvmet_like();
    in.icdoff = 1;
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
}

TEST(InCapsuleLimit, NoneWhenTheDeviceGathersOneSge) {
    InCapsuleInputs in = nvmet_like();
    in.device_max_sge = 1;
    EXPECT_EQ(in_capsule_write_limit(in), 0u);
    in.device_max_sge = kInCapsuleSendSges;
    EXPECT_EQ(in_capsule_write_limit(in), 4096u);
}

TEST(InCapsuleLimit, HugeIoccszDoesNotWrap) {
    InCapsuleInputs in = nvmet_like();
    in.ioccsz = 0xFFFFFFFF;
    EXPECT_EQ(in_capsule_write_limit(in), 0xFFFFFFFFu);
}

TEST(InCapsuleDescriptor, OffsetZeroLengthAndTypeByte) {
    const wire::SglDescriptor d = wire::in_capsule_data(0, 4096);
    unsigned char raw[sizeof d];
    std::memcpy(raw, &d, sizeof d);
    const unsigned char expected[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0x01};
    EXPECT_EQ(std::memcmp(raw, expected, sizeof expected), 0);
}
