#include <gtest/gtest.h>

#include <set>

#include "transport/id_pool.hpp"

using nvmeof::detail::IdPool;

TEST(IdPool, HandsOutEveryIdOnceThenRunsDry) {
    IdPool pool(4);
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

TEST(IdPool, ReleaseRefusesUnknownAndDuplicateIds) {
    IdPool pool(2);
    std::uint16_t cid = 0;
    ASSERT_TRUE(pool.acquire(cid));
    EXPECT_TRUE(pool.is_outstanding(cid));
    EXPECT_FALSE(pool.release(7));                                    // out of range
    EXPECT_FALSE(pool.release(static_cast<std::uint16_t>(cid ^ 1)));  // never handed out
    EXPECT_TRUE(pool.release(cid));
    EXPECT_FALSE(pool.release(cid));  // twice
    EXPECT_EQ(pool.available(), 2u);
}

TEST(IdPool, RecyclesReleasedIds) {
    IdPool pool(1);
    std::uint16_t a = 0, b = 0;
    ASSERT_TRUE(pool.acquire(a));
    ASSERT_TRUE(pool.release(a));
    ASSERT_TRUE(pool.acquire(b));
    EXPECT_EQ(a, b);
}

TEST(IdPool, NextIsWhatTakeHandsOut) {
    IdPool pool(3);
    for (int i = 0; i < 3; ++i) {
        const std::uint16_t next = pool.next();
        EXPECT_EQ(pool.take(), next);
    }
    pool.put(1);
    EXPECT_EQ(pool.next(), 1);
    EXPECT_EQ(pool.take(), 1);
}

// The pool's bookkeeping is checked only in builds with -Dinvariants=true
// (transport/invariant.hpp); a broken rule aborts with what broke.
#if NVMEOF_INVARIANTS
#define REQUIRE_INVARIANTS()
#else
#define REQUIRE_INVARIANTS() \
    GTEST_SKIP() << "built without -Dinvariants=true: nothing checks the pool's bookkeeping"
#endif

TEST(IdPoolInvariantsDeathTest, PutOfAnIdTakeDidNotHandOutAborts) {
    REQUIRE_INVARIANTS();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    IdPool pool(4);
    const std::uint16_t cid = pool.take();
    pool.take();
    pool.put(cid);  // room for one more: the pool is not full, the ID is free
    EXPECT_DEATH(pool.put(cid),
                 "transport invariant broken: put\\(\\) of an ID that take\\(\\) did not hand out");
    std::uint16_t acquired = 0;
    ASSERT_TRUE(pool.acquire(acquired));
    EXPECT_DEATH(pool.put(acquired), "put\\(\\) of an ID that take\\(\\) did not hand out");
}

TEST(IdPoolInvariantsDeathTest, TakeFromAnEmptyPoolAborts) {
    REQUIRE_INVARIANTS();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    IdPool pool(1);
    pool.take();
    EXPECT_DEATH(
        pool.take(),
        "id_pool.hpp:[0-9]+: transport invariant broken: take\\(\\) from a pool with no free ID");
}
