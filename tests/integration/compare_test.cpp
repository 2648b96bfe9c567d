// Compare against nvmeof-target: the blocking call's true and false, a
// transfer cut at MDTS whose last piece miscompares, the asynchronous path's
// EBADMSG (one command, in the capsule or keyed, and one the queue cuts), a
// miscompare that writes nothing, PI namespaces (PRACT, a corrupted guard
// caught by PRCHK), and the refusal where Identify ONCS has no Compare.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;

namespace {

// One transfer through the queue's non-blocking path, waited for.
CompletionStatus submit_and_wait(IoQueue& io, const Namespace& ns, const Transfer& t) {
    EXPECT_EQ(io.submit(ns, t), SubmitResult::queued) << describe(io.last_error());
    Completion done[1];
    std::size_t seen = 0;
    for (int spins = 0; seen == 0 && spins < 10'000'000; ++spins) {
        seen = io.poll(done);
    }
    EXPECT_EQ(seen, 1u);
    return done[0].status;
}

}  // namespace

TEST(Compare, SameDifferentAndAcrossPieces) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (--mdts)";
    TargetProcess target({"--mdts", "1"});  // 8 KiB per command
    auto ctrl = Controller::connect(target.options());
    EXPECT_NE(ctrl.limits().oncs & wire::kOncsCompare, 0);
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t lba = ns.lba_size();
    const std::uint64_t blocks = 4 * ctrl.limits().max_transfer_bytes / lba;  // four pieces
    auto data = ctrl.allocate(blocks * lba);
    fill(data, 7);
    ns.write(data, 100, blocks);
    EXPECT_TRUE(ns.compare(data, 100, blocks));
    EXPECT_FALSE(ns.compare(data, 101, blocks - 1));  // shifted by a block

    data.data()[data.size() - 1] ^= std::byte{1};  // the last piece's last byte
    EXPECT_FALSE(ns.compare(data, 100, blocks));
    EXPECT_TRUE(ns.compare(data, 100, blocks - 1));  // the pieces before it still match
    data.data()[data.size() - 1] ^= std::byte{1};

    // Non-blocking: the queue cuts it; the last piece's miscompare is EBADMSG.
    auto io = ctrl.io();
    const Transfer whole{Op::compare, 100, blocks, &data, 0, 1};
    ASSERT_EQ(io.pieces(ns, whole), 4u);
    EXPECT_TRUE(submit_and_wait(io, ns, whole).ok());
    data.data()[data.size() - lba + 3] ^= std::byte{1};
    const CompletionStatus split = submit_and_wait(io, ns, whole);
    EXPECT_TRUE(split.miscompare()) << describe(split);
    EXPECT_EQ(split.error_number(), EBADMSG);
    EXPECT_NE(describe(split).find("Compare"), std::string::npos) << describe(split);

    // One command (the queue's common path), in the capsule and keyed: a
    // miscompare there must not have been sent as a write.
    for (const std::uint64_t count : {std::uint64_t{1}, blocks / 4}) {
        SCOPED_TRACE(count);
        const std::uint64_t slba = 100 + blocks - count;
        const std::uint64_t offset = (blocks - count) * lba;
        const CompletionStatus one =
            submit_and_wait(io, ns, {Op::compare, slba, count, &data, offset, 2});
        EXPECT_EQ(one.error_number(), EBADMSG) << describe(one);
        EXPECT_EQ(one.opcode, static_cast<std::uint8_t>(wire::IoOpcode::compare));
    }
    auto stored = ctrl.allocate(lba);
    ns.read(stored, 100 + blocks - 1, 1);
    EXPECT_NE(std::memcmp(stored.data(), data.data() + data.size() - lba, lba), 0)
        << "the miscompared block was stored";

    const std::string stats = target.stop();
    // Four blocking calls and two transfers the queue cut, of four pieces each; two single ones.
    EXPECT_EQ(TargetProcess::stat(stats, "commands.compare"), 6u * 4u + 2u);
}

TEST(Compare, ProtectionInformation) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace, faults)";
    TargetProcess target({"--fault", "corrupt-guard=13"}, "ram:4M:4096+8:pi1");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const std::uint32_t data_bytes = ns.lba_size();
    auto data = ctrl.allocate(8 * data_bytes);
    fill(data, 9);
    const Protection pract{.prinfo = kPract, .apptag = 5};
    ns.write(data, 8, 8, 0, pract);  // block 13 stored with its guard damaged

    // PRACT: the data alone travels and is compared; the stored PI is checked.
    EXPECT_TRUE(ns.compare(data, 8, 5, 0, {.prinfo = kPract | kPrchkAll, .apptag = 5}));
    EXPECT_TRUE(ns.compare(data, 8, 8, 0, pract));
    const auto guard = static_cast<std::uint8_t>(kPract | kPrchkGuard);
    try {
        ns.compare(data, 8, 8, 0, {.prinfo = guard, .apptag = 5});
        ADD_FAILURE() << "the damaged guard was not caught";
    } catch (const wire::NvmeError& e) {
        EXPECT_EQ(CompletionStatus{.nvme = e.status()}.error_number(), EILSEQ) << e.what();
        EXPECT_NE(std::string(e.what()).find("Guard Check Error"), std::string::npos) << e.what();
    }
    data.data()[3 * data_bytes + 1] ^= std::byte{1};
    EXPECT_FALSE(ns.compare(data, 8, 8, 0, pract));

    // Without PRACT the metadata travels and is compared too.
    auto extended = ctrl.allocate(2 * ns.info().buffer_block_bytes());
    ns.read(extended, 8, 2, 0, {.prinfo = kPrchkAll, .apptag = 5});
    EXPECT_TRUE(ns.compare(extended, 8, 2, 0, {.prinfo = kPrchkAll, .apptag = 5}));
    extended.data()[extended.size() - 1] ^= std::byte{1};  // block 9's reference tag
    EXPECT_FALSE(ns.compare(extended, 8, 2));
}

TEST(Compare, RefusedWithoutOncsCompare) {
    Limits limits;
    limits.oncs = wire::kOncsDatasetManagement | wire::kOncsWriteZeroes;
    EXPECT_NO_THROW(check_supported(limits, Op::read));
    EXPECT_NO_THROW(check_supported(limits, Op::write_zeroes));
    try {
        check_supported(limits, Op::compare);
        ADD_FAILURE() << "Compare accepted without ONCS bit 0";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("ONCS"), std::string::npos) << e.what();
    }
    limits.oncs |= wire::kOncsCompare;
    EXPECT_NO_THROW(check_supported(limits, Op::compare));
}
