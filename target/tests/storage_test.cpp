// Namespace backing stores (storage.cpp): what a RAM namespace costs, and when.
#include "storage.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <vector>

namespace nvmeof::target {
namespace {

long minor_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

NamespaceConfig ram(std::uint64_t size) {
    NamespaceConfig config;
    config.backing = NamespaceConfig::Backing::ram;
    config.size_bytes = size;
    return config;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Every page is there before the first I/O: reading and writing the whole
// namespace takes no page fault (left to fault in on first touch, 64 MiB
// would take 16,384 of them, one per 4 KiB page, in the data path). Under
// ASan the checked copies first touch the shadow memory, one byte per eight:
// 2,048 pages for 64 MiB, which are the sanitizer's, not the namespace's.
TEST(RamStorage, IsInMemoryBeforeTheFirstIo) {
    constexpr std::uint64_t kSize = 64 << 20;
    constexpr long kShadowPages = kAddressSanitizer ? static_cast<long>(kSize / 8 / 4096) : 0;
    const auto storage = open_storage(ram(kSize));
    ASSERT_EQ(storage->size_bytes(), kSize);
    std::vector<std::uint8_t> block(1 << 20, 0x5a);
    const long before = minor_faults();
    for (std::uint64_t offset = 0; offset < kSize; offset += block.size()) {
        ASSERT_EQ(storage->read(offset, block), 0);
    }
    for (std::uint64_t offset = 0; offset < kSize; offset += block.size()) {
        ASSERT_EQ(storage->write(offset, block), 0);
    }
    const long faults = minor_faults() - before;
    EXPECT_LT(faults, kShadowPages + 64)
        << "page faults while reading and writing a 64 MiB RAM namespace";
}

TEST(RamStorage, StartsZeroedAndKeepsWhatIsWritten) {
    const auto storage = open_storage(ram(8 << 20));
    std::vector<std::uint8_t> block(4096, 0xff);
    ASSERT_EQ(storage->read(5 << 20, block), 0);
    EXPECT_EQ(block, std::vector<std::uint8_t>(4096, 0));
    std::vector<std::uint8_t> pattern(4096);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        pattern[i] = static_cast<std::uint8_t>(i * 7 + 1);
    }
    ASSERT_EQ(storage->write(5 << 20, pattern), 0);
    ASSERT_EQ(storage->read(5 << 20, block), 0);
    EXPECT_EQ(block, pattern);
}

// A RAM namespace is allocated whole at start, so one larger than the
// machine's memory is refused there, naming the cause, instead of the target
// being killed for memory later.
TEST(RamStorage, LargerThanTheAvailableMemoryIsRefused) {
    try {
        (void)open_storage(ram(std::uint64_t{1} << 50));
        FAIL() << "a 1 PiB RAM namespace was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("memory available"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace nvmeof::target
