// CRC check values from the CRC catalogue ("123456789"), a bit-at-a-time
// reference for the sliced tables, the carry-less multiply and SSE4.2 versions
// against the tables (every length, alignment and split), PI generation and
// checking for every layout (each check catches its own corruption and nothing
// else), and the storage and reference space of tuples and commands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/protection.hpp"
#include "wire/crc.hpp"

namespace w = nvmeof::wire;
namespace crc = nvmeof::wire::crc;

namespace {

std::uint16_t crc16_bitwise(const std::uint8_t* p, std::size_t n) {
    std::uint16_t crc = 0;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= static_cast<std::uint16_t>(p[i] << 8);
        for (int b = 0; b < 8; ++b) {
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x8BB7 : crc << 1);
        }
    }
    return crc;
}

std::uint64_t crc64_bitwise(const std::uint8_t* p, std::size_t n) {
    std::uint64_t crc = ~0ull;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int b = 0; b < 8; ++b) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x9A6C9329AC4BC9B5ull : crc >> 1;
        }
    }
    return ~crc;
}

std::uint32_t crc32c_bitwise(const std::uint8_t* p, std::size_t n) {
    std::uint32_t crc = ~0u;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int b = 0; b < 8; ++b) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
    }
    return ~crc;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> data(n);
    std::mt19937 rng(seed);
    for (auto& b : data) {
        b = static_cast<std::uint8_t>(rng());
    }
    return data;
}

std::vector<std::byte> random_blocks(const w::BlockFormat& f, std::size_t count, unsigned seed) {
    std::vector<std::byte> buf(f.extended_bytes() * count);
    std::mt19937 rng(seed);
    for (auto& b : buf) {
        b = static_cast<std::byte>(rng());
    }
    return buf;
}

}  // namespace

TEST(Crc, CatalogueCheckValues) {
    const char* text = "123456789";
    EXPECT_EQ(w::crc16_t10dif(0, text, 9), 0xD0DB);
    EXPECT_EQ(w::crc64_nvme(0, text, 9), 0xAE8B14860A799888ull);
    EXPECT_EQ(w::crc32c(0, text, 9), 0xE3069283u);
    EXPECT_EQ(crc::crc32c_table(0, text, 9), 0xE3069283u);
}

TEST(Crc, Crc32cEveryVersionMatchesBitwiseAtEveryLengthAlignmentAndSplit) {
    const auto data = random_bytes(4200, 17);
    const bool sse42 = crc::sse42_supported();
    for (std::size_t offset = 0; offset < 8; ++offset) {
        for (std::size_t n = 0; n + offset <= 1100; n += 1 + n / 16) {
            const std::uint8_t* p = data.data() + offset;
            const std::uint32_t want = crc32c_bitwise(p, n);
            ASSERT_EQ(crc::crc32c_table(0, p, n), want) << n << "+" << offset;
            ASSERT_EQ(crc::crc32c_sse42(0, p, n), want)
                << n << "+" << offset;  // tables without SSE4.2
            ASSERT_EQ(w::crc32c(0, p, n), want) << n << "+" << offset;
            const std::size_t third = n / 3;
            ASSERT_EQ(w::crc32c(w::crc32c(0, p, third), p + third, n - third), want) << n;
        }
    }
    EXPECT_EQ(crc::crc32c_sse42(0, data.data(), 4104), crc32c_bitwise(data.data(), 4104));
    if (!sse42) {
        GTEST_SKIP() << "no SSE4.2 here: crc32c_sse42 ran the tables";
    }
}

TEST(Crc, SlicedTablesMatchBitwiseAtEveryLengthAndContinue) {
    std::vector<std::uint8_t> data(4200);
    std::mt19937 rng(7);
    for (auto& b : data) {
        b = static_cast<std::uint8_t>(rng());
    }
    for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 512u, 520u, 4096u, 4104u, 4160u}) {
        EXPECT_EQ(w::crc16_t10dif(0, data.data(), n), crc16_bitwise(data.data(), n)) << n;
        EXPECT_EQ(w::crc64_nvme(0, data.data(), n), crc64_bitwise(data.data(), n)) << n;
        // Continued over two pieces equals one pass.
        const std::size_t half = n / 3;
        EXPECT_EQ(
            w::crc16_t10dif(w::crc16_t10dif(0, data.data(), half), data.data() + half, n - half),
            crc16_bitwise(data.data(), n));
        EXPECT_EQ(w::crc64_nvme(w::crc64_nvme(0, data.data(), half), data.data() + half, n - half),
                  crc64_bitwise(data.data(), n));
    }
}

TEST(Crc, TablesMatchBitwiseCalledDirectly) {
    const auto data = random_bytes(1100, 3);
    for (std::size_t n = 0; n <= data.size(); n += 13) {
        EXPECT_EQ(crc::crc16_t10dif_table(0, data.data(), n), crc16_bitwise(data.data(), n)) << n;
        EXPECT_EQ(crc::crc64_nvme_table(0, data.data(), n), crc64_bitwise(data.data(), n)) << n;
    }
}

class CrcClmul : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!crc::clmul_supported()) {
            GTEST_SKIP() << "no PCLMULQDQ and SSE4.1 here: the public functions run the tables";
        }
    }
};

TEST_F(CrcClmul, CatalogueCheckValues) {
    const char* text = "123456789";
    EXPECT_EQ(crc::crc16_t10dif_clmul(0, text, 9), 0xD0DB);
    EXPECT_EQ(crc::crc64_nvme_clmul(0, text, 9), 0xAE8B14860A799888ull);
    // Long enough to fold: the check string 8 times over, against the reference.
    std::vector<std::uint8_t> repeated;
    for (int i = 0; i < 8; ++i) {
        repeated.insert(repeated.end(), text, text + 9);
    }
    EXPECT_EQ(crc::crc16_t10dif_clmul(0, repeated.data(), repeated.size()),
              crc16_bitwise(repeated.data(), repeated.size()));
    EXPECT_EQ(crc::crc64_nvme_clmul(0, repeated.data(), repeated.size()),
              crc64_bitwise(repeated.data(), repeated.size()));
}

TEST_F(CrcClmul, PublicFunctionsRunIt) {
    const auto data = random_bytes(4096, 17);
    EXPECT_EQ(w::crc16_t10dif(0, data.data(), data.size()),
              crc::crc16_t10dif_clmul(0, data.data(), data.size()));
    EXPECT_EQ(w::crc64_nvme(0, data.data(), data.size()),
              crc::crc64_nvme_clmul(0, data.data(), data.size()));
}

// Every length up to 1,100 bytes: under one chunk (tables only), one to seven
// chunks (folded one at a time), the eight accumulators, and every tail, each
// from a random starting CRC.
TEST_F(CrcClmul, MatchesTablesAtEveryLengthFromAnyStart) {
    const auto data = random_bytes(1100, 21);
    std::mt19937_64 rng(5);
    for (std::size_t n = 0; n <= data.size(); ++n) {
        const auto c16 = static_cast<std::uint16_t>(rng());
        const std::uint64_t c64 = rng();
        ASSERT_EQ(crc::crc16_t10dif_clmul(0, data.data(), n),
                  crc::crc16_t10dif_table(0, data.data(), n))
            << n;
        ASSERT_EQ(crc::crc64_nvme_clmul(0, data.data(), n),
                  crc::crc64_nvme_table(0, data.data(), n))
            << n;
        ASSERT_EQ(crc::crc16_t10dif_clmul(c16, data.data(), n),
                  crc::crc16_t10dif_table(c16, data.data(), n))
            << n << " from " << c16;
        ASSERT_EQ(crc::crc64_nvme_clmul(c64, data.data(), n),
                  crc::crc64_nvme_table(c64, data.data(), n))
            << n << " from " << c64;
    }
    // All-ones and all-zero data, where a dropped carry or constant would show.
    for (const std::uint8_t fill : {std::uint8_t{0}, std::uint8_t{0xFF}}) {
        const std::vector<std::uint8_t> flat(1100, fill);
        for (std::size_t n : {16u, 127u, 128u, 129u, 512u, 1100u}) {
            EXPECT_EQ(crc::crc16_t10dif_clmul(0, flat.data(), n), crc16_bitwise(flat.data(), n))
                << n;
            EXPECT_EQ(crc::crc64_nvme_clmul(0, flat.data(), n), crc64_bitwise(flat.data(), n)) << n;
        }
    }
}

// Block sizes of the data path (4096, 4096+8, 4096+64) and a long buffer, at
// every offset from 16-byte alignment.
TEST_F(CrcClmul, MatchesTablesUnaligned) {
    const auto data = random_bytes(65536 + 16, 33);
    for (std::size_t n : {4096u, 4104u, 4160u, 65536u}) {
        for (std::size_t offset = 0; offset < 16; ++offset) {
            const std::uint8_t* p = data.data() + offset;
            EXPECT_EQ(crc::crc16_t10dif_clmul(0, p, n), crc::crc16_t10dif_table(0, p, n))
                << n << "+" << offset;
            EXPECT_EQ(crc::crc64_nvme_clmul(0, p, n), crc::crc64_nvme_table(0, p, n))
                << n << "+" << offset;
        }
    }
    EXPECT_EQ(crc::crc16_t10dif_clmul(0, data.data() + 3, 4104),
              crc16_bitwise(data.data() + 3, 4104));
    EXPECT_EQ(crc::crc64_nvme_clmul(0, data.data() + 3, 4104),
              crc64_bitwise(data.data() + 3, 4104));
}

// Continued over pieces cut at random points (any lengths, any alignments)
// equals one pass.
TEST_F(CrcClmul, ContinuesAcrossRandomSplits) {
    const auto data = random_bytes(8192, 45);
    std::mt19937 rng(9);
    for (int round = 0; round < 500; ++round) {
        const std::size_t n = rng() % (data.size() + 1);
        const std::uint16_t whole16 = crc::crc16_t10dif_table(0, data.data(), n);
        const std::uint64_t whole64 = crc::crc64_nvme_table(0, data.data(), n);
        std::uint16_t c16 = 0;
        std::uint64_t c64 = 0;
        std::size_t at = 0;
        while (at < n) {
            const std::size_t piece =
                std::min<std::size_t>(n - at, rng() % (round % 2 ? 300 : 3000) + 1);
            c16 = crc::crc16_t10dif_clmul(c16, data.data() + at, piece);
            c64 = crc::crc64_nvme_clmul(c64, data.data() + at, piece);
            at += piece;
        }
        ASSERT_EQ(c16, whole16) << "length " << n << " round " << round;
        ASSERT_EQ(c64, whole64) << "length " << n << " round " << round;
    }
}

TEST(BlockFormat, TransferSizesAndPiPlace) {
    const w::BlockFormat f512{512, 8, w::PiType::type1, w::PiGuard::crc16, false};
    EXPECT_EQ(f512.pi_bytes(), 8u);
    EXPECT_EQ(f512.pi_offset(), 512u);
    EXPECT_EQ(f512.transfer_block_bytes(false), 520u);
    EXPECT_EQ(f512.transfer_block_bytes(true), 512u);  // PI is all the metadata: stripped
    const w::BlockFormat f64{4096, 64, w::PiType::type1, w::PiGuard::crc64, false};
    EXPECT_EQ(f64.pi_bytes(), 16u);
    EXPECT_EQ(f64.pi_offset(), 4096u + 48u);
    EXPECT_EQ(f64.transfer_block_bytes(true), 4160u);  // the rest of the metadata still travels
    const w::BlockFormat first{4096, 64, w::PiType::type2, w::PiGuard::crc64, true};
    EXPECT_EQ(first.pi_offset(), 4096u);
    const w::BlockFormat plain{4096, 0};
    EXPECT_EQ(plain.transfer_block_bytes(false), 4096u);
    EXPECT_FALSE(plain.metadata_transferred(false));
}

TEST(BlockFormat, StorageTagSplitsTheSpace) {
    const w::BlockFormat g16{512, 8, w::PiType::type1, w::PiGuard::crc16, false, 8};
    EXPECT_EQ(g16.reftag_mask(), 0xFFFFFFu);
    EXPECT_EQ(g16.storage_tag_max(), 0xFFu);
    const w::BlockFormat g32{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 16};
    EXPECT_EQ(g32.pi_bytes(), w::kPi32Bytes);
    EXPECT_EQ(g32.reftag_mask(), ~std::uint64_t{0});  // 64 of the 80 bits
    const w::BlockFormat g32_64{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 64};
    EXPECT_EQ(g32_64.reftag_mask(), 0xFFFFu);
    EXPECT_EQ(g32_64.storage_tag_max(), ~std::uint64_t{0});
    const w::BlockFormat g64{4096, 16, w::PiType::type1, w::PiGuard::crc64, false, 48};
    EXPECT_EQ(g64.reftag_mask(), 0u);
    EXPECT_TRUE(w::storage_tag_bits_valid(w::PiGuard::crc16, 32));
    EXPECT_FALSE(w::storage_tag_bits_valid(w::PiGuard::crc16, 33));
    EXPECT_FALSE(w::storage_tag_bits_valid(w::PiGuard::crc32, 15));
    EXPECT_TRUE(w::storage_tag_bits_valid(w::PiGuard::crc32, 64));
    EXPECT_FALSE(w::storage_tag_bits_valid(w::PiGuard::crc32, 65));
    EXPECT_TRUE(w::storage_tag_bits_valid(w::PiGuard::crc64, 48));
    EXPECT_FALSE(w::storage_tag_bits_valid(w::PiGuard::crc64, 49));
}

TEST(Pi, KnownTupleOfThe32BitGuard) {
    const w::BlockFormat f{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 16};
    std::vector<std::byte> block(f.extended_bytes());
    for (std::size_t i = 0; i < 4096; ++i) {
        block[i] = static_cast<std::byte>(i * 7);
    }
    w::PiTags tags{0x0102030405060708ull, 0xABCD, 0xFFFF, 0xBEEF};
    w::pi_generate(f, block, tags);
    const auto* pi = reinterpret_cast<const std::uint8_t*>(block.data() + 4096);
    const std::uint32_t guard =
        crc32c_bitwise(reinterpret_cast<const std::uint8_t*>(block.data()), 4096);
    const std::uint8_t want[16] = {static_cast<std::uint8_t>(guard >> 24),
                                   static_cast<std::uint8_t>(guard >> 16),
                                   static_cast<std::uint8_t>(guard >> 8),
                                   static_cast<std::uint8_t>(guard),
                                   0xAB,
                                   0xCD,
                                   0xBE,
                                   0xEF,
                                   1,
                                   2,
                                   3,
                                   4,
                                   5,
                                   6,
                                   7,
                                   8};
    EXPECT_EQ(std::memcmp(pi, want, sizeof want), 0);
    const w::PiFields read = w::pi_read(f, block.data());
    EXPECT_EQ(read.guard, guard);
    EXPECT_EQ(read.storage_tag, 0xBEEFu);
    EXPECT_EQ(read.reftag, 0x0102030405060708ull);
}

TEST(Pi, KnownTupleWithAStorageTagIn16And64BitGuards) {
    // 16-bit guard, STS 8: the 32-bit space is the storage tag, then 24 bits of reference tag.
    const w::BlockFormat f16{512, 8, w::PiType::type1, w::PiGuard::crc16, false, 8};
    std::vector<std::byte> block(520);
    w::pi_generate(f16, block, {0x123456, 0, 0xFFFF, 0xAB});
    const auto* pi = reinterpret_cast<const std::uint8_t*>(block.data() + 512);
    EXPECT_EQ(pi[4], 0xAB);
    EXPECT_EQ(pi[5], 0x12);
    EXPECT_EQ(pi[7], 0x56);
    // 64-bit guard, STS 20: 48 bits, 20 of storage tag, 28 of reference tag.
    const w::BlockFormat f64{4096, 16, w::PiType::type1, w::PiGuard::crc64, false, 20};
    std::vector<std::byte> block64(f64.extended_bytes());
    w::pi_generate(f64, block64, {0x1234567, 0, 0xFFFF, 0xABCDE});
    const auto* pi64 = reinterpret_cast<const std::uint8_t*>(block64.data() + 4096);
    const std::uint8_t space[6] = {0xAB, 0xCD, 0xE1, 0x23, 0x45, 0x67};
    EXPECT_EQ(std::memcmp(pi64 + 10, space, sizeof space), 0);
}

TEST(Pi, CommandCarriesStorageAndReferenceTagsAcrossCdw2Cdw3Cdw14) {
    struct Case {
        w::BlockFormat format;
        std::uint64_t storage_tag, reftag;
        std::uint32_t cdw2, cdw3, cdw14;
    };
    const Case cases[] = {
        {{512, 8, w::PiType::type1, w::PiGuard::crc16, false}, 0, 0x89ABCDEF, 0, 0, 0x89ABCDEF},
        {{512, 8, w::PiType::type1, w::PiGuard::crc16, false, 8}, 0xAB, 0x123456, 0, 0, 0xAB123456},
        {{4096, 16, w::PiType::type1, w::PiGuard::crc64, false},
         0,
         0xABCD01234567,
         0,
         0xABCD,
         0x01234567},
        {{4096, 16, w::PiType::type1, w::PiGuard::crc64, false, 20},
         0xABCDE,
         0x1234567,
         0,
         0xABCD,
         0xE1234567},
        {{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 16},
         0xBEEF,
         0x0102030405060708,
         0xBEEF,
         0x01020304,
         0x05060708},
        {{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 64},
         0x1122334455667788,
         0xABCD,
         0x1122,
         0x33445566,
         0x7788ABCD},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.cdw14);
        w::Sqe sqe{};
        w::set_protection(sqe, c.format, w::kPract | w::kPrchkGuard | w::kCheckStorageTag,
                          {c.reftag, 0x1234, 0xFF00, c.storage_tag});
        EXPECT_EQ(sqe.cdw2, c.cdw2);
        EXPECT_EQ(sqe.cdw3, c.cdw3);
        EXPECT_EQ(sqe.cdw14, c.cdw14);
        EXPECT_EQ(sqe.cdw15, 0xFF001234u);
        EXPECT_EQ(sqe.cdw12 & w::kStcBit, w::kStcBit);
        EXPECT_EQ(w::command_prinfo(sqe), w::kPract | w::kPrchkGuard | w::kCheckStorageTag);
        const w::PiTags back = w::command_tags(sqe, c.format);
        EXPECT_EQ(back.storage_tag, c.storage_tag);
        EXPECT_EQ(back.reftag, c.reftag);
    }
    // Without STC the bit stays clear; bits beyond the format's space are not read.
    w::Sqe sqe{};
    const w::BlockFormat f16{512, 8, w::PiType::type1, w::PiGuard::crc16, false};
    w::set_protection(sqe, f16, w::kPrchkReftag, {5, 0, 0xFFFF});
    EXPECT_EQ(sqe.cdw12 & w::kStcBit, 0u);
    sqe.cdw3 = 0xFFFF;
    EXPECT_EQ(w::command_tags(sqe, f16).reftag, 5u);
}

TEST(Pi, KnownTupleForA512ByteBlockOfZeroes) {
    const w::BlockFormat f{512, 8, w::PiType::type1, w::PiGuard::crc16, false};
    std::vector<std::byte> block(520);
    w::pi_generate(f, block, {0x12345678, 0xABCD, 0xFFFF});
    const auto* pi = reinterpret_cast<const std::uint8_t*>(block.data() + 512);
    const std::uint16_t guard =
        crc16_bitwise(reinterpret_cast<const std::uint8_t*>(block.data()), 512);
    EXPECT_EQ(pi[0], guard >> 8);
    EXPECT_EQ(pi[1], guard & 0xFF);
    EXPECT_EQ(pi[2], 0xAB);
    EXPECT_EQ(pi[3], 0xCD);
    EXPECT_EQ(pi[4], 0x12);
    EXPECT_EQ(pi[7], 0x78);
}

struct Layout {
    w::BlockFormat format;
    const char* name;
};

class PiLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(PiLayouts, EachCheckCatchesItsCorruptionAndOnlyWhenOn) {
    const w::BlockFormat& f = GetParam().format;
    constexpr std::size_t kBlocks = 5;
    // Counts across a 32-bit wrap; a storage tag wider than any format's.
    const w::PiTags tags{0xFFFFFFF0ull + 3, 0x1234, 0xFFFF, 0xA5C3A5C3A5C3A5C3ull};
    auto buf = random_blocks(f, kBlocks, 11);
    w::pi_generate(f, buf, tags);
    EXPECT_FALSE(w::pi_verify(f, buf, w::kPrchkAll, tags));

    struct Case {
        w::PiCheck check;
        std::uint8_t bit;
    };
    const auto all = static_cast<std::uint8_t>(w::kPrchkAll | w::kCheckStorageTag);
    EXPECT_FALSE(w::pi_verify(f, buf, all, tags));
    for (const Case c :
         {Case{w::PiCheck::guard, w::kPrchkGuard}, Case{w::PiCheck::apptag, w::kPrchkApptag},
          Case{w::PiCheck::reftag, w::kPrchkReftag},
          Case{w::PiCheck::storage_tag, w::kCheckStorageTag}}) {
        if (c.check == w::PiCheck::reftag &&
            (f.pi_type == w::PiType::type3 || f.reftag_bits() == 0)) {
            continue;  // covered below: type 3 keeps one opaque tag
        }
        if (c.check == w::PiCheck::storage_tag && f.storage_tag_bits == 0) {
            continue;
        }
        auto bad = buf;
        std::byte* block = bad.data() + 3 * f.extended_bytes();
        w::PiFields pi = w::pi_read(f, block);
        if (c.check == w::PiCheck::guard) {
            block[17] ^= std::byte{0x40};  // the data, not the tuple
        } else if (c.check == w::PiCheck::apptag) {
            pi.apptag ^= 0x0100;
            w::pi_write(f, block, pi);
        } else if (c.check == w::PiCheck::reftag) {
            pi.reftag ^= 1;
            w::pi_write(f, block, pi);
        } else {
            pi.storage_tag ^= 1;
            w::pi_write(f, block, pi);
        }
        const w::PiMismatch m = w::pi_verify(f, bad, all, tags);
        EXPECT_EQ(m.check, c.check) << GetParam().name << " " << w::pi_check_name(c.check);
        EXPECT_EQ(m.block, 3u);
        EXPECT_FALSE(w::pi_verify(f, bad, static_cast<std::uint8_t>(all & ~c.bit), tags))
            << GetParam().name << ": caught with its check off: " << w::pi_check_name(c.check);
        if (c.check == w::PiCheck::storage_tag) {
            // The namespace's mask (LBSTM) leaves out the bit changed.
            w::PiTags masked = tags;
            masked.storage_tag_mask = ~std::uint64_t{1};
            EXPECT_FALSE(w::pi_verify(f, bad, all, masked));
        }
    }
    // A mask hides the apptag bits it leaves out.
    auto masked = buf;
    w::PiFields pi = w::pi_read(f, masked.data());
    pi.apptag ^= 0x00F0;
    w::pi_write(f, masked.data(), pi);
    EXPECT_FALSE(w::pi_verify(f, masked, w::kPrchkApptag, {tags.reftag, tags.apptag, 0xFF0F}));
    EXPECT_TRUE(w::pi_verify(f, masked, w::kPrchkApptag, tags));
}

TEST_P(PiLayouts, EscapeApptagTurnsChecksOff) {
    const w::BlockFormat& f = GetParam().format;
    auto buf = random_blocks(f, 2, 5);
    const bool type3 = f.pi_type == w::PiType::type3;
    w::PiFields pi{0, w::kApptagEscape, type3 ? f.reftag_mask() : 0,
                   type3 ? f.storage_tag_max() : 0};
    w::pi_write(f, buf.data(), pi);
    w::pi_write(f, buf.data() + f.extended_bytes(), pi);
    const auto all = static_cast<std::uint8_t>(w::kPrchkAll | w::kCheckStorageTag);
    EXPECT_FALSE(w::pi_verify(f, buf, all, {7, 1, 0xFFFF, 3}));
    if (type3 && f.storage_tag_bits != 0) {
        // Type 3 escapes only with the whole space all ones.
        pi.storage_tag = 0;
        w::pi_write(f, buf.data(), pi);
        EXPECT_TRUE(w::pi_verify(f, buf, all, {7, 1, 0xFFFF, 3}));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, PiLayouts,
    ::testing::Values(
        Layout{{512, 8, w::PiType::type1, w::PiGuard::crc16, false}, "512+8 type1"},
        Layout{{4096, 8, w::PiType::type1, w::PiGuard::crc16, false}, "4096+8 type1"},
        Layout{{512, 16, w::PiType::type2, w::PiGuard::crc16, true}, "512+16 type2 first"},
        Layout{{512, 16, w::PiType::type2, w::PiGuard::crc16, false}, "512+16 type2 last"},
        Layout{{4096, 8, w::PiType::type3, w::PiGuard::crc16, false}, "4096+8 type3"},
        Layout{{4096, 64, w::PiType::type1, w::PiGuard::crc64, false}, "4096+64 type1 g64"},
        Layout{{4096, 16, w::PiType::type3, w::PiGuard::crc64, true}, "4096+16 type3 g64"},
        Layout{{512, 8, w::PiType::type1, w::PiGuard::crc16, false, 8}, "512+8 type1 sts8"},
        Layout{{4096, 16, w::PiType::type1, w::PiGuard::crc32, false, 16},
               "4096+16 type1 g32 sts16"},
        Layout{{512, 32, w::PiType::type2, w::PiGuard::crc32, true, 40},
               "512+32 type2 g32 sts40 first"},
        Layout{{4096, 16, w::PiType::type3, w::PiGuard::crc32, false, 64},
               "4096+16 type3 g32 sts64"},
        Layout{{4096, 16, w::PiType::type2, w::PiGuard::crc64, false, 20},
               "4096+16 type2 g64 sts20"}));

TEST(Pi, GuardOfAPiLastBlockCoversTheMetadataBeforeIt) {
    const w::BlockFormat f{512, 16, w::PiType::type1, w::PiGuard::crc16, false};
    auto buf = random_blocks(f, 1, 3);
    w::pi_generate(f, buf, {0, 0, 0xFFFF});
    buf[512 + 2] ^= std::byte{1};  // metadata byte before the PI
    EXPECT_EQ(w::pi_verify(f, buf, w::kPrchkGuard, {0, 0, 0xFFFF}).check, w::PiCheck::guard);
    const w::BlockFormat first{512, 16, w::PiType::type1, w::PiGuard::crc16, true};
    auto buf2 = random_blocks(first, 1, 3);
    w::pi_generate(first, buf2, {0, 0, 0xFFFF});
    buf2[512 + 12] ^= std::byte{1};  // metadata after a first-placed PI is not covered
    EXPECT_FALSE(w::pi_verify(first, buf2, w::kPrchkGuard, {0, 0, 0xFFFF}));
}

// Type 3: one reference tag written for every block, and never compared (the
// application's own; SPDK's host puts each block's LBA there with ILBRT 0).
TEST(Pi, Type3KeepsOneReferenceTagForEveryBlockAndNeverComparesIt) {
    const w::BlockFormat f{512, 8, w::PiType::type3, w::PiGuard::crc16, false};
    auto buf = random_blocks(f, 3, 9);
    w::pi_generate(f, buf, {42, 1, 0xFFFF});
    EXPECT_EQ(w::pi_read(f, buf.data() + 2 * 520).reftag, 42u);
    EXPECT_FALSE(w::pi_verify(f, buf, w::kPrchkAll, {42, 1, 0xFFFF}));
    EXPECT_FALSE(w::pi_verify(f, buf, w::kPrchkAll, {43, 1, 0xFFFF}));
    const w::BlockFormat type1{512, 8, w::PiType::type1, w::PiGuard::crc16, false};
    auto buf1 = random_blocks(type1, 3, 9);
    w::pi_generate(type1, buf1, {42, 1, 0xFFFF});
    EXPECT_EQ(w::pi_verify(type1, buf1, w::kPrchkReftag, {43, 1, 0xFFFF}).check,
              w::PiCheck::reftag);
}

TEST(Pi, SixtyFourBitGuardWrapsTheReferenceTagAt48Bits) {
    const w::BlockFormat f{4096, 16, w::PiType::type1, w::PiGuard::crc64, false};
    auto buf = random_blocks(f, 2, 1);
    const std::uint64_t last = (1ull << 48) - 1;
    w::pi_generate(f, buf, {last, 0, 0xFFFF});
    EXPECT_EQ(w::pi_read(f, buf.data()).reftag, last);
    EXPECT_EQ(w::pi_read(f, buf.data() + f.extended_bytes()).reftag, 0u);
}
