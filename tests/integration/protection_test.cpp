// Namespaces with metadata and protection information against nvmeof-target:
// the format read from Identify, transfers sized by what travels, PRINFO and
// tags on every command (a transfer cut at MDTS gives each piece its own
// reference tag, which the target's type 1 check would refuse otherwise),
// host-generated PI checked by the target, and each check failing with its
// own status and EILSEQ.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::fill;
using nvmeof::test::TargetProcess;

namespace {

// The errno and message of a blocking call's failure.
template <typename F>
std::pair<int, std::string> failure_of(F&& call) {
    try {
        call();
    } catch (const wire::NvmeError& e) {
        return {CompletionStatus{.nvme = e.status()}.error_number(), e.what()};
    } catch (const std::exception& e) {
        return {-1, e.what()};
    }
    return {0, ""};
}

constexpr std::uint64_t kBlocks = 64;  // 8 pieces at --mdts 1 (8 KiB) for 512+8

}  // namespace

TEST(Protection, Type1With16BitGuardAcrossPieces) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace)";
    TargetProcess target({"--mdts", "1"}, "ram:4M:512+8:pi1");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const BlockFormat& f = ns.format();
    EXPECT_EQ(f.data_bytes, 512u);
    EXPECT_EQ(f.metadata_bytes, 8u);
    EXPECT_EQ(f.pi_type, PiType::type1);
    EXPECT_EQ(f.guard, PiGuard::crc16);
    EXPECT_EQ(ns.info().buffer_block_bytes({.prinfo = kPract}), 512u);  // PI stripped
    EXPECT_EQ(ns.info().buffer_block_bytes({}), 520u);

    // PRACT: data only; the target generates PI from the LBA and apptag.
    auto data = ctrl.allocate(kBlocks * 512);
    fill(data, 1);
    const Protection pract{.prinfo = kPract | kPrchkAll, .apptag = 0x1234};
    ns.write(data, 0, kBlocks, 0, pract);
    auto back = ctrl.allocate(kBlocks * 512);
    ns.read(back, 0, kBlocks, 0, pract);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size()), 0);

    // PRACT 0: the blocks with their PI, which the target made per piece.
    auto extended = ctrl.allocate(kBlocks * 520);
    ns.read(extended, 0, kBlocks, 0, {.prinfo = kPrchkAll, .apptag = 0x1234});
    EXPECT_FALSE(pi_verify(f, extended.bytes(), kPrchkAll, {0, 0x1234, 0xFFFF}));
    for (std::uint64_t b = 0; b < kBlocks; ++b) {
        ASSERT_EQ(std::memcmp(extended.data() + b * 520, data.data() + b * 512, 512), 0) << b;
    }

    // Host-generated PI at another LBA, checked by the target on the way in.
    fill(extended, 2);
    pi_generate(f, extended.bytes(), {1000, 0x00AB, 0xFFFF});
    ns.write(extended, 1000, kBlocks, 0, {.prinfo = kPrchkAll, .apptag = 0x00AB});
    auto again = ctrl.allocate(kBlocks * 520);
    ns.read(again, 1000, kBlocks, 0, {.prinfo = kPrchkAll, .apptag = 0x00AB});
    EXPECT_EQ(std::memcmp(again.data(), extended.data(), extended.size()), 0);

    // Each check refuses its own corruption, by name, with EILSEQ.
    auto bad = ctrl.allocate(4 * 520);
    fill(bad, 3);
    pi_generate(f, bad.bytes(), {2000, 7, 0xFFFF});
    bad.data()[520 + 5] ^= std::byte{1};  // block 1's data: its guard no longer matches
    auto [guard_errno, guard_text] =
        failure_of([&] { ns.write(bad, 2000, 4, 0, {.prinfo = kPrchkGuard, .apptag = 7}); });
    EXPECT_EQ(guard_errno, EILSEQ) << guard_text;
    EXPECT_NE(guard_text.find("Guard Check Error"), std::string::npos) << guard_text;
    // Not checked: stored as sent.
    EXPECT_EQ(
        failure_of([&] { ns.write(bad, 2000, 4, 0, {.prinfo = kPrchkReftag, .apptag = 7}); }).first,
        0);

    auto [app_errno, app_text] = failure_of(
        [&] { ns.read(again, 1000, kBlocks, 0, {.prinfo = kPrchkApptag, .apptag = 0x00AC}); });
    EXPECT_EQ(app_errno, EILSEQ) << app_text;
    EXPECT_NE(app_text.find("Application Tag Check Error"), std::string::npos) << app_text;
    // The mask leaves out the bit that differs.
    EXPECT_EQ(failure_of([&] {
                  ns.read(again, 1000, kBlocks, 0,
                          {.prinfo = kPrchkApptag, .apptag = 0x00AC, .apptag_mask = 0xFFF0});
              }).first,
              0);

    // Type 1 wants the LBA as the reference tag.
    auto [ref_errno, ref_text] = failure_of(
        [&] { ns.read(again, 1000, kBlocks, 0, {.prinfo = kPrchkReftag, .reftag = 999}); });
    EXPECT_NE(ref_errno, 0) << ref_text;
    ctrl.close();
}

TEST(Protection, Type2ExplicitReferenceTagCountsAcrossPieces) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace)";
    TargetProcess target({"--mdts", "1"}, "ram:4M:512+16:pi2:first");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const BlockFormat& f = ns.format();
    ASSERT_EQ(f.pi_type, PiType::type2);
    ASSERT_TRUE(f.pi_first);
    auto buf = ctrl.allocate(kBlocks * f.extended_bytes());
    fill(buf, 4);
    pi_generate(f, buf.bytes(), {0xABC00, 9, 0xFFFF});
    const Protection p{.prinfo = kPrchkAll, .apptag = 9, .reftag = 0xABC00};
    ns.write(buf, 10, kBlocks, 0, p);  // 16 pieces, each with its own initial tag
    auto back = ctrl.allocate(buf.size());
    ns.read(back, 10, kBlocks, 0, p);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
    // One submission the queue itself cuts into pieces, each with its own tag.
    auto io = ctrl.io();
    ASSERT_GT(io.pieces(ns, {Op::read, 10, kBlocks, &back, 0, 0, p}), 1u);
    std::memset(back.data(), 0, back.size());
    ASSERT_EQ(io.submit(ns, {Op::read, 10, kBlocks, &back, 0, 77, p}), SubmitResult::queued);
    Completion done[1];
    std::size_t seen = 0;
    for (int spins = 0; seen == 0 && spins < 10'000'000; ++spins) {
        seen = io.poll(done);
    }
    ASSERT_EQ(seen, 1u);
    EXPECT_TRUE(done[0].status.ok()) << describe(done[0].status);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
    // Read from the middle: the tag there is 0xABC00 + 5.
    auto part = ctrl.allocate(4 * f.extended_bytes());
    ns.read(part, 15, 4, 0, {.prinfo = kPrchkReftag, .reftag = 0xABC05});
    auto [wrong_errno, wrong_text] =
        failure_of([&] { ns.read(part, 15, 4, 0, {.prinfo = kPrchkReftag, .reftag = 0xABC00}); });
    EXPECT_EQ(wrong_errno, EILSEQ) << wrong_text;
    EXPECT_NE(wrong_text.find("Reference Tag Check Error"), std::string::npos) << wrong_text;
}

TEST(Protection, SixtyFourBitGuardWithMoreMetadataThanPi) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace)";
    TargetProcess target({}, "ram:8M:4096+64:pi1:guard64");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const BlockFormat& f = ns.format();
    ASSERT_EQ(f.guard, PiGuard::crc64);  // from the NVM command set's Identify Namespace
    EXPECT_EQ(f.pi_bytes(), 16u);
    // PRACT with 48 more metadata bytes: whole blocks still travel.
    EXPECT_EQ(ns.info().buffer_block_bytes({.prinfo = kPract}), 4160u);
    auto buf = ctrl.allocate(8 * 4160);
    fill(buf, 5);
    ns.write(buf, 100, 8, 0, {.prinfo = kPract, .apptag = 0x55});
    auto back = ctrl.allocate(8 * 4160);
    ns.read(back, 100, 8, 0, {.prinfo = kPrchkAll, .apptag = 0x55});
    EXPECT_FALSE(pi_verify(f, back.bytes(), kPrchkAll, {100, 0x55, 0xFFFF}));
    for (std::uint64_t b = 0; b < 8; ++b) {
        // Data and the metadata before the PI as written.
        ASSERT_EQ(std::memcmp(back.data() + b * 4160, buf.data() + b * 4160, 4096 + 48), 0) << b;
    }
}

TEST(Protection, StorageTagsWithThe32BitGuardAcrossPieces) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace)";
    // At --mdts 1 (8 KiB): one 4112-byte block per piece.
    TargetProcess target({"--mdts", "1"}, "ram:4M:4096+16:pi1:guard32:sts=24");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const BlockFormat& f = ns.format();
    ASSERT_EQ(f.guard, PiGuard::crc32);
    EXPECT_EQ(f.storage_tag_bits, 24u);
    EXPECT_EQ(f.reftag_bits(), 56u);
    EXPECT_EQ(ns.info().storage_tag_mask, 0xFFFFFFu);  // the target's LBSTM
    constexpr std::uint64_t kCount = 6;
    constexpr std::uint64_t kStorageTag = 0xC0FFEE;
    // Host-generated PI with a storage tag, every check on; the write is cut
    // into pieces, each with its own reference tag and the same storage tag.
    auto buf = ctrl.allocate(kCount * f.extended_bytes());
    fill(buf, 6);
    pi_generate(f, buf.bytes(), {40, 0x77, 0xFFFF, kStorageTag});
    const Protection checked{
        .prinfo = kPrchkAll | kCheckStorageTag, .apptag = 0x77, .storage_tag = kStorageTag};
    ASSERT_GT(ctrl.io().pieces(ns, {Op::write, 40, kCount, &buf, 0, 0, checked}), 1u);
    ns.write(buf, 40, kCount, 0, checked);
    auto back = ctrl.allocate(buf.size());
    ns.read(back, 40, kCount, 0, checked);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
    // Another storage tag: refused by the storage tag check only.
    Protection other = checked;
    other.storage_tag = kStorageTag ^ 0x100;
    auto [code, text] = failure_of([&] { ns.read(back, 40, kCount, 0, other); });
    EXPECT_EQ(code, EILSEQ) << text;
    EXPECT_NE(text.find("Storage Tag Check Error"), std::string::npos) << text;
    other.prinfo = kPrchkAll;
    ns.read(back, 40, kCount, 0, other);
    // PRACT: the target writes the command's storage tag into the PI it makes.
    auto data = ctrl.allocate(kCount * 4096);  // PI is the whole metadata: data only
    fill(data, 7);
    ns.write(data, 100, kCount, 0, {.prinfo = kPract, .apptag = 1, .storage_tag = 0xABCDEF});
    ns.read(back, 100, kCount, 0, {.prinfo = kPrchkAll, .apptag = 1});
    EXPECT_FALSE(pi_verify(f, back.bytes(), kPrchkAll | kCheckStorageTag,
                           pi_tags(f, {.apptag = 1, .storage_tag = 0xABCDEF}, 100)));
    EXPECT_EQ(
        pi_verify(f, back.bytes(), kCheckStorageTag, pi_tags(f, {.storage_tag = 1}, 100)).check,
        PiCheck::storage_tag);
}

TEST(Protection, StorageTagIn16BitGuardNarrowsTheReferenceTag) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (a PI namespace)";
    TargetProcess target({}, "ram:1M:512+8:pi2:sts=20");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    const BlockFormat& f = ns.format();
    ASSERT_EQ(f.storage_tag_bits, 20u);
    EXPECT_EQ(f.reftag_mask(), 0xFFFu);
    // Type 2 tags count up and wrap at 12 bits: 0xFFE, 0xFFF, 0, 1.
    auto buf = ctrl.allocate(4 * 520);
    fill(buf, 8);
    const Protection p{
        .prinfo = kPrchkAll | kCheckStorageTag, .reftag = 0xFFE, .storage_tag = 0x12345};
    pi_generate(f, buf.bytes(), pi_tags(f, p, 7));
    ns.write(buf, 7, 4, 0, p);
    auto back = ctrl.allocate(4 * 520);
    ns.read(back, 7, 4, 0, p);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
    EXPECT_EQ(wire::pi_read(f, back.bytes().data() + 2 * 520).reftag, 0u);
    EXPECT_EQ(wire::pi_read(f, back.bytes().data() + 2 * 520).storage_tag, 0x12345u);
    auto [code, text] = failure_of([&] {
        ns.read(back, 7, 4, 0,
                {.prinfo = kCheckStorageTag, .reftag = 0xFFE, .storage_tag = 0x12344});
    });
    EXPECT_EQ(code, EILSEQ) << text;
}

TEST(Protection, RefusedWhereItDoesNotApply) {
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    EXPECT_EQ(ns.format().metadata_bytes, 0u);
    auto buf = ctrl.allocate(4096);
    auto [code, text] = failure_of([&] { ns.read(buf, 0, 1, 0, {.prinfo = kPrchkGuard}); });
    EXPECT_EQ(code, -1);
    EXPECT_NE(text.find("without protection information"), std::string::npos) << text;
}

TEST(Protection, FaultsAreCaughtByTheirOwnCheckOnly) {
    if (!TargetProcess::can_configure())
        GTEST_SKIP() << "needs our nvmeof-target (faults)";
    TargetProcess target({"--fault", "corrupt-guard=5", "--fault", "corrupt-apptag=6", "--fault",
                          "corrupt-reftag=7"},
                         "ram:4M:4096+8:pi1");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto buf = ctrl.allocate(4 * 4096);
    fill(buf, 6);
    const Protection pract{.prinfo = kPract, .apptag = 3};
    ns.write(buf, 4, 4, 0, pract);  // blocks 5, 6, 7 stored with a damaged field each
    auto one = ctrl.allocate(4096);
    struct Case {
        std::uint64_t lba;
        std::uint8_t check;
        const char* name;
    };
    for (const Case c : {Case{5, kPrchkGuard, "Guard"}, Case{6, kPrchkApptag, "Application Tag"},
                         Case{7, kPrchkReftag, "Reference Tag"}}) {
        auto [code, text] = failure_of([&] {
            ns.read(one, c.lba, 1, 0,
                    {.prinfo = static_cast<std::uint8_t>(kPract | c.check), .apptag = 3});
        });
        EXPECT_EQ(code, EILSEQ) << c.name << ": " << text;
        EXPECT_NE(text.find(c.name), std::string::npos) << text;
        const auto others = static_cast<std::uint8_t>(kPract | (kPrchkAll & ~c.check));
        EXPECT_EQ(
            failure_of([&] { ns.read(one, c.lba, 1, 0, {.prinfo = others, .apptag = 3}); }).first,
            0)
            << c.name << " caught with its check off";
    }
}
