#include <gtest/gtest.h>

#include <set>

#include "transport/cid_pool.hpp"

using nvmeof::detail::CidPool;

TEST(CidPool, HandsOutEveryIdOnceThenRunsDry) {
    CidPool pool(4);
    std::set<std::uint16_t> seen;
    std::uint16_t cid = 0;
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(pool.acquire(cid));
        EXPECT_LT(cid, 4);
        EXPECT_TRUE(seen.insert(cid).second);
    }
    EXPECT_FALSE(pool.acquire(cid));
    EXPECT_EQ(pool.available(), 0u);
    EXPECT_EQ(pool.outstanding(), 4u);
}

TEST(CidPool, ReleaseRefusesUnknownAndDuplicateIds) {
    CidPool pool(2);
    std::uint16_t cid = 0;
    ASSERT_TRUE(pool.acquire(cid));
    EXPECT_TRUE(pool.is_outstanding(cid));
    EXPECT_FALSE(pool.release(7));               // out of range
    EXPECT_FALSE(pool.release(static_cast<std::uint16_t>(cid ^ 1)));  // never handed out
    EXPECT_TRUE(pool.release(cid));
    EXPECT_FALSE(pool.release(cid));             // twice
    EXPECT_EQ(pool.available(), 2u);
}

TEST(CidPool, RecyclesReleasedIds) {
    CidPool pool(1);
    std::uint16_t a = 0, b = 0;
    ASSERT_TRUE(pool.acquire(a));
    ASSERT_TRUE(pool.release(a));
    ASSERT_TRUE(pool.acquire(b));
    EXPECT_EQ(a, b);
}
