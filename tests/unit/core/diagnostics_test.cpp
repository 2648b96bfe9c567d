// The plain-language causes behind bare errnos and CM numbers.
#include <gtest/gtest.h>

#include <cerrno>

#include "verbs/diagnostics.hpp"

using namespace nvmeof::verbs;

namespace {
constexpr std::uint64_t kMiB = 1 << 20;
}

TEST(Diagnostics, NoRdmaDeviceSaysWhatIsMissing) {
    const std::string text = cm_unavailable_text(ENODEV);
    EXPECT_NE(text.find("no RDMA device"), std::string::npos) << text;
    EXPECT_NE(text.find("RDMA-CM is not available"), std::string::npos) << text;
    EXPECT_NE(text.find("softverbs-run"), std::string::npos) << text;
    EXPECT_NE(text.find("No such device"), std::string::npos) << text;  // the errno still shows
    EXPECT_EQ(cm_unavailable_text(EMFILE).find("no RDMA device"), std::string::npos);
}

TEST(Diagnostics, CmRejectReasonsAreNamed) {
    EXPECT_EQ(cm_reject_reason_name(28), "consumer-defined reject");
    EXPECT_NE(cm_reject_reason_name(8).find("nothing listens"), std::string_view::npos);
    EXPECT_EQ(cm_reject_reason_name(0), "unknown CM reject reason");
}

TEST(Diagnostics, MemlockIsBlamedOnlyWhenTheRegistrationWouldExceedIt) {
    const MemlockState roomy{64 * kMiB, false, 1 * kMiB};
    const std::string fits = memlock_explanation(ENOMEM, 4096, roomy);
    EXPECT_NE(fits.find("not the locked-memory limit"), std::string::npos) << fits;

    const std::string over = memlock_explanation(ENOMEM, 64 * kMiB, roomy);
    EXPECT_NE(over.find("would exceed the locked-memory limit RLIMIT_MEMLOCK of 67108864"),
              std::string::npos)
        << over;
    EXPECT_NE(over.find("1048576 bytes already locked or pinned"), std::string::npos) << over;

    const MemlockState unknown{64 * kMiB, false, std::nullopt};
    EXPECT_NE(memlock_explanation(EPERM, 4096, unknown).find("could not be read"),
              std::string::npos);
}

TEST(Diagnostics, NoLimitNoBlame) {
    EXPECT_EQ(memlock_explanation(ENOMEM, 1ull << 40, MemlockState{0, true, 0}), "");
    EXPECT_EQ(memlock_explanation(EINVAL, 1ull << 40, MemlockState{4096, false, 0}), "");
}

TEST(Diagnostics, LockedMemoryOfThisProcessIsReadable) {
    // /proc/self/status has VmLck on every Linux this project supports.
    EXPECT_TRUE(locked_and_pinned_bytes().has_value());
}
