// Counters are visible mid-run (docs/collector.md#the-stages-of-the-collector): while records still flow, the
// store already holds the run's counters, its stage statistics and its
// interval statistics, and they move forward as the run goes on (the sink
// writes them about once a second whatever the detail backlog), so a viewer
// beside a live collector sees current figures. At the end they equal what
// the producer wrote.

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using LiveCountersTest = RelTestOf<"livecounters">;

TEST_F(LiveCountersTest, TheStoreShowsCurrentFiguresWhileTheRunGoesOn) {
  // Two threads of 30000 two-stamp orders, 8 orders every 2 ms: about 7.5 s
  // of records, so several of the sink's one-second writes fall inside it.
  constexpr int64_t kOrdersPerThread = 30000;
  constexpr int64_t kThreads = 2;
  constexpr int64_t kRecords = kOrdersPerThread * kThreads * 2;
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const pid_t producer = StartProducer(
      {"--mode", "seq", "--threads", std::to_string(kThreads), "--ring", "1048576", "--orders",
       std::to_string(kOrdersPerThread), "--pace-every", "8", "--pace-us", "2000"},
      "producer.log");

  // Mid-run: the store's figures are past zero and short of the end.
  int64_t first_drained = 0;
  ASSERT_TRUE(WaitStoreCounter("drained", [&](int64_t v) {
    first_drained = v;
    return v > 0;
  })) << ReadFile(log());
  EXPECT_LT(first_drained, kRecords) << "the first figure the store showed was the final one";
  {
    // Counters go with every batch; the stage statistics with the next
    // once-a-second snapshot.
    EXPECT_TRUE(WaitFor(
        [&] {
          StoreQuery q(db());
          return q.Int("SELECT COALESCE(SUM(count), 0) FROM stage_stats WHERE stage='a->b'") > 0;
        },
        10s));
    StoreQuery q(db());
    EXPECT_GT(q.Int("SELECT COUNT(*) FROM intervals"), 0);
  }
  // ...and they move while the run goes on.
  EXPECT_TRUE(WaitStoreCounter("drained", [&](int64_t v) {
    return v > first_drained && v < kRecords;
  })) << "no later mid-run figure after drained=" << first_drained;

  EXPECT_EQ(WaitExit(producer, 120s), 0);
  Forget(producer);
  // Every record drained shows up without stopping the collector.
  EXPECT_TRUE(WaitStoreCounter("drained", [&](int64_t v) { return v == kRecords; }, 60s));
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "drained"), kRecords);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "orders_complete"), kOrdersPerThread * kThreads);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"),
            kOrdersPerThread * kThreads);
}

}  // namespace
}  // namespace ticktrace::reliability
