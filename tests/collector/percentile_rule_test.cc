// A tail percentile needs 1 / (1 - q) samples (docs/viewer.md#summary): with fewer it would
// be the maximum printed as if it were p99 or p99.9. The collector then keeps
// it out of its summary (NaN), the store (NULL) and its report ("-").
// Archives use 1 GHz, so one tick is one ns.

#include <cmath>
#include <string>

#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {
namespace {

// Replays `orders_ab` orders a -> b, order id i taking 100 + i ns; returns
// the summary and leaves the store in `dir`.
RunSummary ReplayOrders(const TempDir& dir, int orders_ab, std::string* log_out) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  for (int id = 1; id <= orders_ab; ++id) {
    const uint64_t t = uint64_t(id) * 10'000;
    b.Records(1, {Stamp(0, id, t), Stamp(1, id, t + 100 + id)});
  }
  b.Clock(uint64_t(orders_ab + 1) * 10'000);
  CollectorOptions o;
  o.store_uri = store::StoreUri::LocalFile(dir.File("store.db"));
  o.pipeline = {"a", "b"};
  testing::Replayed r = ReplayArchive(b, dir, o);
  EXPECT_TRUE(r.status.ok()) << r.status;
  *log_out = r.log;
  return r.summary;
}

class PercentileRule : public ::testing::Test {
 protected:
  // Replays `orders_ab` orders (ReplayOrders); returns the a->b stage or null.
  const StageSummary* ReplayAB(int orders_ab) {
    summary_ = ReplayOrders(dir_, orders_ab, &log_);
    return summary_.stage("a->b");
  }

  TempDir dir_;
  std::string log_;
  RunSummary summary_;
};

TEST_F(PercentileRule, NinetyNineSamplesHaveNoP99) {
  const StageSummary* ab = ReplayAB(99);
  ASSERT_NE(ab, nullptr) << log_;
  EXPECT_EQ(ab->count, 99u);
  EXPECT_FALSE(std::isnan(ab->p50_ns));
  EXPECT_FALSE(std::isnan(ab->p90_ns));  // 99 >= 10
  EXPECT_TRUE(std::isnan(ab->p99_ns));   // 99 < 100
  EXPECT_TRUE(std::isnan(ab->p999_ns));  // 99 < 1000
  // Nearest rank of p90 over latencies 101..199: rank 90 -> 190 (within 1/256).
  EXPECT_NEAR(ab->p90_ns, 190, 190.0 / 256);
  StoreQuery q(dir_.File("store.db"));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stage_stats WHERE stage = 'a->b' AND p99_ns IS NULL "
                  "AND p999_ns IS NULL AND p90_ns IS NOT NULL AND p50_ns IS NOT NULL"),
            1);
}

TEST_F(PercentileRule, AHundredSamplesHaveAP99ButNoP999) {
  const StageSummary* ab = ReplayAB(100);
  ASSERT_NE(ab, nullptr) << log_;
  EXPECT_EQ(ab->count, 100u);
  // Nearest rank 99 of 101..200 -> 199.
  EXPECT_NEAR(ab->p99_ns, 199, 199.0 / 256);
  EXPECT_TRUE(std::isnan(ab->p999_ns));
}

TEST_F(PercentileRule, OneSampleHasAMedianOnly) {
  const StageSummary* ab = ReplayAB(1);
  ASSERT_NE(ab, nullptr) << log_;
  EXPECT_DOUBLE_EQ(ab->p50_ns, 101);
  EXPECT_TRUE(std::isnan(ab->p90_ns));
  EXPECT_TRUE(std::isnan(ab->p99_ns));
}

}  // namespace
}  // namespace ticktrace::collect::testing
