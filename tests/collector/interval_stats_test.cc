#include "collector/sinks/interval_stats.h"

#include <cstdint>
#include <string>
#include <vector>

#include "collector/sinks/stage_stats.h"
#include "gtest/gtest.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

store::SampleDetail Sample(const char* stage, double latency_ns, uint32_t flags = 0) {
  store::SampleDetail s;
  s.stage = stage;
  s.latency_ns = latency_ns;
  s.flags = flags;
  return s;
}

void Add(IntervalStats& stats, int64_t interval, const std::vector<store::SampleDetail>& samples) {
  std::vector<uint32_t> slots;
  for (const store::SampleDetail& s : samples) slots.push_back(stats.SlotOfName(s.stage));
  stats.AddOrder(interval, samples, slots.data());
}

// Index of a flag's count in IntervalDelta::flag_counts (lowest bit first).
size_t FlagIndex(uint32_t bit) {
  for (size_t i = 0; i < store::kFlagNames.size(); ++i) {
    if (store::kFlagNames[i].bit == bit) return i;
  }
  return store::kFlagNames.size();
}

std::string HistogramOf(std::initializer_list<double> values) {
  store::Histogram h;
  for (double v : values) h.Add(v);
  return h.Encode();
}

// Three orders in two intervals, by hand: per (stage, interval) the samples,
// the flag counts, and a histogram without the excluded (negative) sample.
TEST(IntervalStatsTest, DeltasPerStageAndIntervalByHand) {
  IntervalStats stats(/*include_flagged=*/false);
  Add(stats, 0, {Sample("a->b", 100), Sample("total", 300, store::kFlagCrossCore)});
  Add(stats, 0, {Sample("a->b", 200, store::kFlagNegative), Sample("decide", 50)});
  Add(stats, kSecond, {Sample("a->b", 400)});
  std::vector<store::IntervalDelta> deltas;
  std::vector<store::IntervalOrders> orders;
  stats.TakeDeltas(&deltas, &orders);
  EXPECT_TRUE(stats.empty());

  ASSERT_EQ(deltas.size(), 4u);  // ascending by (stage, start)
  EXPECT_EQ(deltas[0].stage, "a->b");
  EXPECT_EQ(deltas[0].start_utc_ns, 0);
  EXPECT_EQ(deltas[0].kind, store::StageKind::kTransition);
  EXPECT_EQ(deltas[0].samples_all, 2u);
  EXPECT_EQ(deltas[0].flag_counts[FlagIndex(store::kFlagNegative)], 1u);
  EXPECT_EQ(deltas[0].histogram.Encode(), HistogramOf({100}));
  EXPECT_EQ(deltas[1].stage, "a->b");
  EXPECT_EQ(deltas[1].start_utc_ns, kSecond);
  EXPECT_EQ(deltas[1].samples_all, 1u);
  EXPECT_EQ(deltas[1].histogram.Encode(), HistogramOf({400}));
  EXPECT_EQ(deltas[2].stage, "decide");
  EXPECT_EQ(deltas[2].kind, store::StageKind::kSpan);
  EXPECT_EQ(deltas[2].histogram.Encode(), HistogramOf({50}));
  EXPECT_EQ(deltas[3].stage, "total");
  EXPECT_EQ(deltas[3].kind, store::StageKind::kTotal);
  EXPECT_EQ(deltas[3].flag_counts[FlagIndex(store::kFlagCrossCore)], 1u);
  EXPECT_EQ(deltas[3].histogram.Encode(), HistogramOf({300}));  // cross_core is not excluded

  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].start_utc_ns, 0);
  EXPECT_EQ(orders[0].orders, 2u);
  EXPECT_EQ(orders[1].start_utc_ns, kSecond);
  EXPECT_EQ(orders[1].orders, 1u);
}

TEST(IntervalStatsTest, IncludeFlaggedPutsEverySampleInTheHistogram) {
  IntervalStats stats(/*include_flagged=*/true);
  Add(stats, 0, {Sample("a->b", 100), Sample("a->b", 200, store::kFlagNegative)});
  std::vector<store::IntervalDelta> deltas;
  std::vector<store::IntervalOrders> orders;
  stats.TakeDeltas(&deltas, &orders);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].samples_all, 2u);
  EXPECT_EQ(deltas[0].histogram.Encode(), HistogramOf({100, 200}));
}

// Two handovers' deltas merged per key are the rows one handover of all the
// orders gives.
TEST(IntervalStatsTest, MergedPerKeyEqualsOneBatch) {
  auto first = [](IntervalStats& s) {
    Add(s, 0, {Sample("a->b", 100), Sample("total", 300)});
    Add(s, kSecond, {Sample("a->b", 400, store::kFlagMigrated)});
  };
  auto second = [](IntervalStats& s) {
    Add(s, 0, {Sample("a->b", 150), Sample("total", 310, store::kFlagSkew)});
    Add(s, 2 * kSecond, {Sample("b->c", 20)});
  };
  IntervalStats split(false);
  std::vector<store::IntervalDelta> deltas;
  std::vector<store::IntervalOrders> orders;
  first(split);
  split.TakeDeltas(&deltas, &orders);
  second(split);
  split.TakeDeltas(&deltas, &orders);
  ASSERT_EQ(deltas.size(), 6u);  // three keys per handover
  MergePerKey(&deltas, &orders);

  ASSERT_EQ(deltas.size(), 4u);
  EXPECT_EQ(deltas[0].stage, "a->b");
  EXPECT_EQ(deltas[0].start_utc_ns, 0);
  EXPECT_EQ(deltas[0].samples_all, 2u);
  EXPECT_EQ(deltas[0].histogram.Encode(), HistogramOf({100, 150}));
  EXPECT_EQ(deltas[1].start_utc_ns, kSecond);
  EXPECT_EQ(deltas[1].flag_counts[FlagIndex(store::kFlagMigrated)], 1u);
  EXPECT_EQ(deltas[1].histogram.count(), 0u);  // migrated: out of the percentiles
  EXPECT_EQ(deltas[2].stage, "b->c");
  EXPECT_EQ(deltas[3].stage, "total");
  EXPECT_EQ(deltas[3].samples_all, 2u);
  EXPECT_EQ(deltas[3].flag_counts[FlagIndex(store::kFlagSkew)], 1u);
  EXPECT_EQ(deltas[3].histogram.Encode(), HistogramOf({300, 310}));
  ASSERT_EQ(orders.size(), 3u);
  EXPECT_EQ(orders[0].orders, 2u);
  EXPECT_EQ(orders[1].orders, 1u);
  EXPECT_EQ(orders[2].start_utc_ns, 2 * kSecond);

  IntervalStats whole(false);
  first(whole);
  second(whole);
  std::vector<store::IntervalDelta> one;
  std::vector<store::IntervalOrders> one_orders;
  whole.TakeDeltas(&one, &one_orders);
  ASSERT_EQ(one.size(), deltas.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].stage, deltas[i].stage);
    EXPECT_EQ(one[i].start_utc_ns, deltas[i].start_utc_ns);
    EXPECT_EQ(one[i].samples_all, deltas[i].samples_all);
    EXPECT_EQ(one[i].flag_counts, deltas[i].flag_counts);
    EXPECT_EQ(one[i].histogram.Encode(), deltas[i].histogram.Encode());
  }
}

// The stitcher's stage ids and names lead to the same slot.
TEST(IntervalStatsTest, StageIdsAndNamesShareSlots) {
  StageStats stages(false);
  const uint32_t ab = stages.StageId("a->b", StageKind::kTransition);
  const uint32_t total = stages.StageId("total", StageKind::kTotal);
  IntervalStats stats(false);
  const uint32_t by_name = stats.SlotOfName("total");
  EXPECT_EQ(stats.SlotOfStage(total, stages), by_name);
  EXPECT_NE(stats.SlotOfStage(ab, stages), by_name);
  EXPECT_EQ(stats.SlotOfStage(ab, stages), stats.SlotOfName("a->b"));
}

}  // namespace
}  // namespace ticktrace::collect
