#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "block_layout.hpp"
#include "target_spec.hpp"

namespace e = nvmeof::engine;
using nvmeof::BlockFormat;
using nvmeof::PiGuard;
using nvmeof::PiType;

namespace {

constexpr BlockFormat kPlain512{.data_bytes = 512};
constexpr BlockFormat kPi512{.data_bytes = 512, .metadata_bytes = 8, .pi_type = PiType::type1};
constexpr BlockFormat kPi4096{.data_bytes = 4096, .metadata_bytes = 8, .pi_type = PiType::type1};
constexpr BlockFormat kGuard64{
    .data_bytes = 4096, .metadata_bytes = 64, .pi_type = PiType::type1, .guard = PiGuard::crc64};
constexpr BlockFormat kNoPi{.data_bytes = 512, .metadata_bytes = 8};

e::ProtectionOptions act(bool pi_act, std::uint8_t pi_chk = 0) {
    e::ProtectionOptions o;
    o.pi_act = pi_act;
    o.pi_chk = pi_chk;
    return o;
}

e::FileLayout layout(const BlockFormat& f, const e::ProtectionOptions& o,
                     std::vector<std::uint64_t> sizes) {
    return e::choose_layout(f, o, sizes, "namespace 1 of nqn.x:y");
}

std::string refusal(const BlockFormat& f, const e::ProtectionOptions& o,
                    std::vector<std::uint64_t> sizes) {
    try {
        layout(f, o, sizes);
    } catch (const e::SpecError& error) {
        return error.what();
    }
    return "";
}

}  // namespace

TEST(BlockLayout, PlainNamespaceKeepsItsBlocks) {
    const e::FileLayout l = layout(kPlain512, act(true, nvmeof::kPrchkAll), {4096, 4096});
    EXPECT_EQ(l.layout, e::BufferLayout::plain);
    EXPECT_EQ(l.block_bytes, 512u);
    EXPECT_EQ(l.protection.prinfo, 0) << "no PRINFO on a namespace without PI";
    EXPECT_FALSE(l.host_work());
    EXPECT_FALSE(l.pi_options_apply);
    EXPECT_EQ(refusal(kPlain512, act(true), {1000}),
              "block size 1000 is not a multiple of the 512-byte LBA size of namespace 1 of "
              "nqn.x:y");
}

TEST(BlockLayout, PractWithMetadataThatIsAllPiMovesDataOnly) {
    // SPDK's rule: pi_act=1 and 8 bytes of PI as the whole metadata: only data travels.
    const e::FileLayout l = layout(kPi512, act(true, nvmeof::kPrchkGuard), {4096});
    EXPECT_EQ(l.layout, e::BufferLayout::plain);
    EXPECT_EQ(l.block_bytes, 512u);
    EXPECT_EQ(l.wire_block_bytes, 512u);
    EXPECT_EQ(l.protection.prinfo, nvmeof::kPract | nvmeof::kPrchkGuard);
    EXPECT_EQ(l.protection.apptag, 0x1234);
    EXPECT_EQ(l.protection.apptag_mask, 0xFFFF);
    EXPECT_FALSE(l.host_work());
    EXPECT_EQ(l.bounce_bytes(4096), 0u);
}

TEST(BlockLayout, InterleavedWhenEveryBlockSizeHoldsWholeExtendedBlocks) {
    const e::FileLayout l = layout(kPi512, act(false, nvmeof::kPrchkGuard), {520, 4160});
    EXPECT_EQ(l.layout, e::BufferLayout::interleaved);
    EXPECT_EQ(l.block_bytes, 520u);
    EXPECT_TRUE(l.generate);
    EXPECT_EQ(l.host_checks, nvmeof::kPrchkGuard);
    EXPECT_FALSE(l.staged());
    EXPECT_EQ(l.protection.prinfo, nvmeof::kPrchkGuard);
    // 4160 is 8 blocks of 512+8 and one of 4096+64: interleaved both.
    EXPECT_EQ(layout(kGuard64, act(true), {4160}).layout, e::BufferLayout::interleaved);
    // Both fit (a multiple of 520 and of 512): interleaved, SPDK's.
    EXPECT_EQ(layout(kPi512, act(false), {33280}).layout, e::BufferLayout::interleaved);
}

TEST(BlockLayout, DataOnlyStagesThroughTheBounceArea) {
    const e::FileLayout l = layout(kPi4096, act(false, nvmeof::kPrchkAll), {4096, 65536});
    EXPECT_EQ(l.layout, e::BufferLayout::data_only);
    EXPECT_EQ(l.block_bytes, 4096u);
    EXPECT_EQ(l.wire_block_bytes, 4104u);
    EXPECT_TRUE(l.finishes_reads());
    EXPECT_EQ(l.bounce_bytes(65536), 16u * 4104);
    // 64 bytes of metadata with 16 of PI travel even with pi_act=1.
    const e::FileLayout g = layout(kGuard64, act(true), {4096, 8192});
    EXPECT_EQ(g.layout, e::BufferLayout::data_only);
    EXPECT_EQ(g.wire_block_bytes, 4160u);
    EXPECT_FALSE(g.generate);
    EXPECT_EQ(g.host_checks, 0);
    EXPECT_TRUE(g.finishes_reads()) << "data copied out of the bounce area";
}

TEST(BlockLayout, OnlyALayoutTheHostDoesNothingToTakesTheCommonPath) {
    // pi_act=1 with PI as the whole metadata: fio's buffer is the command's.
    EXPECT_TRUE(layout(kPi4096, act(true, nvmeof::kPrchkAll), {4096}).common_path());
    // The host generates and checks PI (interleaved) or stages (data-only).
    EXPECT_FALSE(layout(kPi4096, act(false, nvmeof::kPrchkAll), {4104}).common_path());
    EXPECT_FALSE(layout(kPi4096, act(false), {4096}).common_path());
    // Metadata beyond the PI travels even with pi_act=1.
    EXPECT_FALSE(layout(kGuard64, act(true), {4160}).common_path());
    EXPECT_FALSE(layout(kGuard64, act(true), {4096}).common_path());
}

TEST(BlockLayout, MetadataWithoutPiTakesNoPrinfo) {
    const e::FileLayout l = layout(kNoPi, act(false, nvmeof::kPrchkAll), {4096});
    EXPECT_EQ(l.layout, e::BufferLayout::data_only);
    EXPECT_EQ(l.protection.prinfo, 0);
    EXPECT_FALSE(l.generate);
    EXPECT_EQ(l.host_checks, 0);
    EXPECT_FALSE(l.pi_options_apply);
    EXPECT_EQ(layout(kNoPi, act(true), {520}).layout, e::BufferLayout::interleaved);
}

TEST(BlockLayout, ABlockSizeFittingNeitherNamesBothSizes) {
    const std::string why = refusal(kPi512, act(false), {520, 1000});
    EXPECT_EQ(why.rfind("block size 1000 fits no layout of namespace 1 of nqn.x:y", 0), 0u) << why;
    EXPECT_NE(why.find("a multiple of 520 bytes"), std::string::npos) << why;
    EXPECT_NE(why.find("of 512 bytes"), std::string::npos) << why;
    // One size interleaved and another data-only: neither layout holds both.
    const std::string mixed = refusal(kPi512, act(false), {520, 4096});
    EXPECT_EQ(mixed.rfind("block sizes 520 and 4096 need different layouts of namespace 1", 0), 0u)
        << mixed;
}

TEST(BlockLayout, Descriptions) {
    EXPECT_EQ(e::format_name(kPlain512), "512");
    EXPECT_EQ(e::format_name(kNoPi), "512+8, no PI");
    EXPECT_EQ(e::format_name(kGuard64), "4096+64, PI type 1 (64-bit guard, last in the metadata)");
    const std::string text =
        e::describe_layout(layout(kPi512, act(false, nvmeof::kPrchkGuard), {4096}));
    EXPECT_NE(text.find("data-only layout, 512-byte blocks in fio's buffer (staged as 520-byte"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("pi_act=0"), std::string::npos) << text;
    EXPECT_NE(text.find("checks GUARD"), std::string::npos) << text;
    const nvmeof::PiMismatch m{nvmeof::PiCheck::reftag, 3, 0x67, 0x0};
    EXPECT_EQ(e::describe_mismatch(m, 100),
              "End-to-end Reference Tag Check Error found by the host at LBA 103: expected 0x67, "
              "found 0x0");
}
