#include <gtest/gtest.h>

#include "transport/queue_counts.hpp"

using nvmeof::detail::check_queue_counts;
using nvmeof::detail::QueueCounts;

namespace {

// A queue of 8 IDs: 3 commands in flight (one a one-command transfer at its
// own ID, two pieces of a general transfer), one low-level answer not yet
// taken, one finished one-command transfer not yet handed back.
QueueCounts agreeing() {
    QueueCounts c;
    c.capacity = 8;
    c.records = 17;
    c.ids_outstanding = 5;
    c.general_tids_taken = 1;
    c.kept_cids = 1;
    c.open_transfers = 3;
    c.transfers_awaiting_several = 1;
    c.finished = 1;
    c.commands_in_flight = 3;
    c.own_cid_commands_in_flight = 1;
    c.low_level_answered = 1;
    c.records_awaiting_several = 1;
    return c;
}

}  // namespace

TEST(QueueCounts, AgreeingCountsPass) {
    check_queue_counts(agreeing());
}

#if NVMEOF_INVARIANTS
#define REQUIRE_INVARIANTS()
#else
#define REQUIRE_INVARIANTS() \
    GTEST_SKIP() << "built without -Dinvariants=true: nothing checks the queue's counters"
#endif

// What QueueCore::check_counters() does when a counter kept by hand drifts:
// the scan disagrees, and the check names the counter.
TEST(QueueCountsInvariantsDeathTest, DriftedCounterAborts) {
    REQUIRE_INVARIANTS();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    QueueCounts idle_off_by_one = agreeing();
    ++idle_off_by_one.kept_cids;  // a release that forgot its decrement
    EXPECT_DEATH(check_queue_counts(idle_off_by_one),
                 "queue_counts.hpp:[0-9]+: transport invariant broken: every command ID out is a "
                 "command in flight.*kept_cids_");
    QueueCounts several = agreeing();
    several.transfers_awaiting_several = 0;
    EXPECT_DEATH(check_queue_counts(several), "transfers_awaiting_several_ counts the records");
    QueueCounts held = agreeing();
    held.held = 1;
    EXPECT_DEATH(check_queue_counts(held), "held_count_ counts the held records");
}
