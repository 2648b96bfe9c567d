#include <gtest/gtest.h>

#include "host/negotiation.hpp"
#include "nvmeof/errors.hpp"
#include "transport/queue_resources.hpp"
#include "transport/transfer_split.hpp"

using namespace nvmeof::detail;

namespace {
QueueSizeInputs inputs(std::uint32_t requested, std::uint32_t mqes, std::uint32_t maxcmd,
                       std::uint32_t qp_wr = 16384, std::uint32_t cqe = 65536) {
    return {requested, mqes, maxcmd, qp_wr, cqe};
}
}  // namespace

TEST(QueueSize, RequestedWhenEverythingAllowsIt) {
    const auto d = negotiate_queue_size(inputs(128, 256, 256));
    EXPECT_EQ(d.size, 128);
    EXPECT_EQ(d.limit, "requested");
}

TEST(QueueSize, ClampedByMqes) {
    const auto d = negotiate_queue_size(inputs(128, 64, 256));
    EXPECT_EQ(d.size, 64);
    EXPECT_EQ(d.limit, "CAP.MQES");
}

TEST(QueueSize, ClampedByMaxcmdUnlessZero) {
    EXPECT_EQ(negotiate_queue_size(inputs(128, 256, 16)).size, 16);
    EXPECT_EQ(negotiate_queue_size(inputs(128, 256, 16)).limit, "MAXCMD");
    EXPECT_EQ(negotiate_queue_size(inputs(128, 256, 0)).size, 128);
}

TEST(QueueSize, ClampedByDeviceLimits) {
    // max_qp_wr 48: 48 send WRs hold a 32-entry queue's 31 slots, one
    // signalling interval of 16 and the drain's marker.
    auto d = negotiate_queue_size(inputs(128, 256, 256, 48));
    EXPECT_EQ(d.size, 32);
    EXPECT_EQ(d.limit, "device max_qp_wr");
    EXPECT_LE(send_wr_count(d.size), 48u);
    // max_cqe 100: the shared CQ needs 2 × size + 16 + 1 entries.
    d = negotiate_queue_size(inputs(128, 256, 256, 16384, 100));
    EXPECT_EQ(d.size, 41);
    EXPECT_EQ(d.limit, "device max_cqe");
    EXPECT_LE(cq_entry_count(d.size), 100u);
}

TEST(QueueSize, TheTightestLimitWins) {
    const auto d = negotiate_queue_size(inputs(20, 10, 8, 100, 1000));
    EXPECT_EQ(d.size, 8);
    EXPECT_EQ(d.limit, "MAXCMD");
}

TEST(QueueSize, BelowTwoEntriesIsRefused) {
    try {
        negotiate_queue_size(inputs(128, 1, 0));
        FAIL() << "expected ConnectError";
    } catch (const nvmeof::ConnectError& e) {
        EXPECT_EQ(e.cause(), nvmeof::ConnectFailure::negotiation);
        EXPECT_NE(std::string(e.what()).find("CAP.MQES"), std::string::npos) << e.what();
    }
}

TEST(QueueSize, NeverAbove16Bits) {
    EXPECT_EQ(negotiate_queue_size(inputs(70000, 70000, 0, 0, 0)).size, 0xFFFF);
}

TEST(IoQueueCount, MinOfRequestedAndGranted) {
    EXPECT_EQ(negotiate_io_queue_count(4, {128, 128}), 4u);
    EXPECT_EQ(negotiate_io_queue_count(4, {2, 3}), 2u);
    EXPECT_THROW(negotiate_io_queue_count(4, {0, 0}), nvmeof::ConnectError);
}

TEST(Mdts, BytesAndTransferLimits) {
    EXPECT_EQ(mdts_bytes(0, 4096), 0u);
    EXPECT_EQ(mdts_bytes(5, 4096), 128u * 1024);
    EXPECT_EQ(mdts_bytes(8, 4096), 1024u * 1024);
    EXPECT_EQ(max_transfer_bytes(0), (1u << 24) - 1);  // no MDTS: the keyed SGL limit
    EXPECT_EQ(max_transfer_bytes(mdts_bytes(13, 4096)), (1u << 24) - 1);
    EXPECT_EQ(max_transfer_bytes(131072), 131072u);
    EXPECT_EQ(max_blocks_per_command(131072, 512), 256u);
    EXPECT_EQ(max_blocks_per_command(131072, 4096), 32u);
    EXPECT_EQ(max_blocks_per_command((1u << 24) - 1, 512), 32767u);
    EXPECT_EQ(max_blocks_per_command(std::uint64_t{1} << 40, 512), 65536u);  // NLB is 16 bits
}

TEST(Split, PiecesCoverTheTransferExactly) {
    const SplitPlan plan = plan_split(1000, 256);
    ASSERT_EQ(plan.pieces, 4u);
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < plan.pieces; ++i) {
        total += plan.piece_blocks(i, 1000);
    }
    EXPECT_EQ(total, 1000u);
    EXPECT_EQ(plan.piece_blocks(3, 1000), 1000u - 3 * 256);
    EXPECT_EQ(plan_split(256, 256).pieces, 1u);
    EXPECT_EQ(plan_split(0, 256).pieces, 0u);
    EXPECT_EQ(plan_split(65536 * 3 + 1, 65536).pieces, 4u);
}

TEST(CommandSets, CombinationHoldingEveryCommandSetWanted) {
    constexpr std::uint64_t kBoth = nvmeof::wire::kIocsNvm | nvmeof::wire::kIocsZoned;
    nvmeof::wire::IoCommandSetCombinations list{};
    EXPECT_EQ(command_set_combination(list, kBoth), std::nullopt);  // an empty list
    list.vector[0] = kBoth;
    EXPECT_EQ(command_set_combination(list, kBoth), 0u);  // the one a controller starts with
    list.vector[0] = nvmeof::wire::kIocsNvm;
    list.vector[1] = nvmeof::wire::kIocsZoned;  // no NVM in it
    list.vector[2] = kBoth | (1u << 3);         // more than wanted is fine
    EXPECT_EQ(command_set_combination(list, kBoth), 2u);
    EXPECT_EQ(command_set_combination(list, nvmeof::wire::kIocsNvm), 0u);
    list.vector[2] = 0;  // ends the list: index 3 is never read
    list.vector[3] = kBoth;
    EXPECT_EQ(command_set_combination(list, kBoth), std::nullopt);
}
