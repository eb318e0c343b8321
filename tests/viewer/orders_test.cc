// orders --slowest (ranking and waterfall) and order ID (timeline of a
// linked order) on the known store.
#include <map>
#include <memory>

#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/cli/args.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/timeline.h"
#include "viewer/views/waterfall.h"

namespace ticktrace::view {
namespace {

using testing::KnownStore;

using OrdersTest = testing::KnownStoreTest;

TEST_F(OrdersTest, SlowestByTotal) {
  auto report = FindSlowestOrders(*store_, std::nullopt, std::nullopt, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->stage, "total");
  ASSERT_EQ(report->orders.size(), 3u);
  EXPECT_EQ(report->orders[0].order.order_id, 102);  // linked: 301.2 µs from 50's first stamp
  EXPECT_EQ(report->orders[0].latency_ns, 301200.0);
  EXPECT_EQ(report->orders[1].order.order_id, 100);  // 1000 + 11*100
  EXPECT_EQ(report->orders[1].latency_ns, 2100.0);
  EXPECT_EQ(report->orders[2].order.order_id, 99);
  EXPECT_EQ(report->orders[2].latency_ns, 2089.0);
}

TEST_F(OrdersTest, SlowestByStageAndStagesInPipelineOrder) {
  auto report = FindSlowestOrders(*store_, std::nullopt, std::string("md->strategy"), 4);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->orders.size(), 4u);
  const int64_t expected[] = {100, 99, 98, 97};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(report->orders[i].order.order_id, expected[i]);
    EXPECT_EQ(report->orders[i].latency_ns, 10.0 * expected[i]);
  }
  const auto& samples = report->orders[0].samples;
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].stage, "md->strategy");
  EXPECT_EQ(samples[1].stage, "risk");
  EXPECT_EQ(samples[2].stage, "strategy->gateway");
  EXPECT_EQ(samples[3].stage, "total");
}

TEST_F(OrdersTest, SlowestNMoreThanOrdersReturnsAll) {
  auto report = FindSlowestOrders(*store_, 1, std::nullopt, 50);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->orders.size(), 1u);
}

// Order 100 with 60 more md->strategy samples, all slower than any other
// order's: the ranking holds distinct orders, each by its slowest sample
// (the store ranks within a window of samples that has to grow here).
TEST_F(OrdersTest, OrderWithManySamplesOfOneStageCountsOnce) {
  std::vector<testing::FixtureRun> runs = testing::KnownRuns();
  store::OrderDetail& order100 = runs[1].orders[99];
  ASSERT_EQ(order100.order_id, 100u);
  for (int i = 0; i < 60; ++i) {
    store::SampleDetail s;
    s.stage = "md->strategy";
    s.start_utc_ns = KnownStore::FirstUtcNs(100);
    s.latency_ns = 5000.0 + i;
    order100.samples.push_back(s);
  }
  testing::WriteStore(dir_.File("many.db"), runs);
  auto reopened = store::StoreReader::Open(dir_.File("many.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  store_ = std::move(*reopened);
  auto report = FindSlowestOrders(*store_, std::nullopt, std::string("md->strategy"), 3);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->orders.size(), 3u);
  EXPECT_EQ(report->orders[0].order.order_id, 100);
  EXPECT_EQ(report->orders[0].latency_ns, 5059.0);
  EXPECT_EQ(report->orders[1].order.order_id, 99);
  EXPECT_EQ(report->orders[2].order.order_id, 98);
}

TEST_F(OrdersTest, UnknownStageIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(
      FindSlowestOrders(*store_, std::nullopt, std::string("x->y"), 3).status()));
}

TEST_F(OrdersTest, WaterfallDrawsEveryStageWithFlags) {
  auto report = FindSlowestOrders(*store_, std::nullopt, std::string("strategy->gateway"), 200);
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string text = RenderWaterfall(*report, 40);
  EXPECT_NE(text.find("#1  order 102"), std::string::npos) << text;
  EXPECT_NE(text.find("linked to 50"), std::string::npos) << text;
  // Order 7's strategy->gateway is cross-core; order 13's md->strategy
  // negative and cross-core, drawn as a marker.
  EXPECT_NE(text.find("order 7 "), std::string::npos);
  EXPECT_NE(text.find(" NX "), std::string::npos) << text;
  EXPECT_NE(text.find("|<"), std::string::npos) << text;
  // Each order's total spans the whole bar.
  EXPECT_NE(text.find("|" + std::string(40, '#') + "|"), std::string::npos) << text;
}

TEST_F(OrdersTest, TimelineOfLinkedOrderHoldsTheChain) {
  auto timeline = BuildTimeline(*store_, 102, std::nullopt);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  EXPECT_EQ(timeline->run.run_id, 2);
  ASSERT_EQ(timeline->chain.size(), 2u);
  EXPECT_EQ(timeline->chain[0].order_id, 50);
  EXPECT_EQ(timeline->chain[1].order_id, 102);
  ASSERT_EQ(timeline->entries.size(), 6u);
  const char* tags[] = {"md", "strategy", "risk", "gateway", "strategy", "gateway"};
  const int64_t orders[] = {50, 50, 50, 50, 102, 102};
  // md->strategy 500 ns, risk 10 ns later, gateway 1050 after strategy,
  // 102's strategy 300 µs after 50's first stamp, its gateway 1.2 µs later.
  const double deltas[] = {0, 500, 10, 1040, 298450, 1200};
  const int64_t first = KnownStore::FirstUtcNs(50);
  for (size_t i = 0; i < 6; ++i) {
    const TimelineEntry& e = timeline->entries[i];
    EXPECT_EQ(e.stamp.tag, tags[i]) << i;
    EXPECT_EQ(e.stamp.order_id, orders[i]) << i;
    if (i == 0) {
      EXPECT_FALSE(e.delta_ns.has_value());
      EXPECT_EQ(e.stamp.utc_ns, first);
    } else {
      ASSERT_TRUE(e.delta_ns.has_value());
      EXPECT_DOUBLE_EQ(*e.delta_ns, deltas[i]) << i;
    }
  }
  EXPECT_EQ(timeline->entries[0].process, "md[1001]");
  EXPECT_EQ(timeline->entries[0].thread, "2001 md-rx");
  EXPECT_EQ(timeline->entries[5].process, "gateway[1003]");

  const std::string text = RenderTimeline(*timeline);
  EXPECT_NE(text.find("linked: 50 -> 102"), std::string::npos) << text;
  EXPECT_NE(text.find("2026-11-30T08:00:00.050000000Z"), std::string::npos) << text;
  EXPECT_NE(text.find("+298 µs"), std::string::npos) << text;
  EXPECT_NE(text.find("span"), std::string::npos) << text;
}

TEST_F(OrdersTest, TimelineMarksFlagsCoresAndChildren) {
  auto t13 = BuildTimeline(*store_, 13, std::nullopt);
  ASSERT_TRUE(t13.ok()) << t13.status();
  const std::string text13 = RenderTimeline(*t13);
  EXPECT_NE(text13.find("negative,cross_core"), std::string::npos) << text13;
  // By TSC, order 13's strategy stamp came 5 ns before its md stamp.
  ASSERT_EQ(t13->entries.size(), 4u);
  EXPECT_EQ(t13->entries[0].stamp.tag, "strategy");
  EXPECT_EQ(t13->entries[1].stamp.tag, "md");
  EXPECT_DOUBLE_EQ(*t13->entries[1].delta_ns, 5.0);

  auto t21 = BuildTimeline(*store_, 21, std::nullopt);
  ASSERT_TRUE(t21.ok()) << t21.status();
  const std::string text21 = RenderTimeline(*t21);
  EXPECT_NE(text21.find("2->3"), std::string::npos) << text21;
  EXPECT_NE(text21.find("migrated"), std::string::npos) << text21;

  auto t50 = BuildTimeline(*store_, 50, std::nullopt);
  ASSERT_TRUE(t50.ok()) << t50.status();
  EXPECT_EQ(t50->children, std::vector<int64_t>{102});

  auto t101 = BuildTimeline(*store_, 101, std::nullopt);  // incomplete, no core
  ASSERT_TRUE(t101.ok()) << t101.status();
  const std::string text101 = RenderTimeline(*t101);
  EXPECT_NE(text101.find("incomplete (missing strategy,gateway)"), std::string::npos) << text101;
}

// IDs of 2^63 and above are stored negative and shown unsigned.
TEST(HighOrderIdTest, ShownUnsigned) {
  testing::TempDir dir;
  const std::string path = dir.File("high.db");
  {
    testing::FixtureRun run = testing::GivenClockRun("s");
    store::OrderDetail o;
    o.order_id = static_cast<uint64_t>(-2);  // 2^64 - 2
    o.parent_order_id = uint64_t{1} << 63;   // 2^63
    o.complete = true;
    store::StampDetail s;
    s.tag = "a";
    s.tsc = 10;
    o.stamps.push_back(s);
    o.first_tsc = 10;
    run.orders.push_back(o);
    o.order_id = uint64_t{1} << 63;
    o.parent_order_id.reset();
    o.stamps.clear();
    o.first_tsc = 0;
    run.orders.push_back(o);
    testing::WriteStore(path, {run});
  }
  auto store = store::StoreReader::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::optional<int64_t> id = ParseOrderId("18446744073709551614");
  ASSERT_TRUE(id.has_value());
  auto timeline = BuildTimeline(**store, *id, std::nullopt);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  const std::string text = RenderTimeline(*timeline);
  EXPECT_NE(text.find("order 18446744073709551614  run 1"), std::string::npos) << text;
  EXPECT_NE(text.find("linked: 9223372036854775808 -> 18446744073709551614"), std::string::npos)
      << text;
  const absl::Status missing = BuildTimeline(**store, -3, std::nullopt).status();
  EXPECT_NE(std::string(missing.message()).find("order 18446744073709551613 not found"),
            std::string::npos);
}

TEST_F(OrdersTest, TimelineRunSelection) {
  auto latest = BuildTimeline(*store_, 1, std::nullopt);  // order 1 is in runs 1 and 2
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->run.run_id, 2);
  EXPECT_EQ(latest->entries.size(), 4u);
  auto older = BuildTimeline(*store_, 1, 1);
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->run.run_id, 1);
  ASSERT_EQ(older->entries.size(), 2u);
  EXPECT_DOUBLE_EQ(*older->entries[1].delta_ns, 5000.0);  // 10000 ticks at 2 GHz

  EXPECT_TRUE(absl::IsNotFound(BuildTimeline(*store_, 4242, std::nullopt).status()));
  EXPECT_TRUE(absl::IsNotFound(BuildTimeline(*store_, 50, 1).status()));
  EXPECT_TRUE(absl::IsNotFound(BuildTimeline(*store_, 1, 7).status()));
}

}  // namespace
}  // namespace ticktrace::view

// orders --slowest draws a linked order's parent's stages (without them a
// 10.3 ms hop of the parent was once missing from the waterfall, while the
// report drew it). Known store: 102 is linked to 50, whose md->strategy is 500 ns, risk
// 150 ns, strategy->gateway 1050 ns.
namespace ticktrace::view {
namespace {

TEST_F(OrdersTest, WaterfallOfLinkedOrderShowsItsParentsStages) {
  auto report = FindSlowestOrders(*store_, std::nullopt, std::nullopt, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->orders.size(), 1u);
  const SlowOrder& slow = report->orders[0];
  EXPECT_EQ(slow.order.order_id, 102);
  std::map<std::string, double> parent;
  for (const store::SampleRow& s : slow.parent_samples) parent[s.stage] = s.latency_ns;
  EXPECT_EQ(parent, (std::map<std::string, double>{
                        {"md->strategy", 500}, {"risk", 150}, {"strategy->gateway", 1050}}));
  const std::string text = RenderWaterfall(*report, 40);
  EXPECT_NE(text.find("^ md->strategy"), std::string::npos) << text;
  EXPECT_NE(text.find("^ strategy->gateway"), std::string::npos) << text;
  EXPECT_NE(text.find("  strategy->gateway"), std::string::npos) << text;  // its own
  EXPECT_NE(text.find("a stage of the parent order 50"), std::string::npos) << text;
}

}  // namespace
}  // namespace ticktrace::view
