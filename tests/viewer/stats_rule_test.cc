// The viewer's own statistics (windows and filters computed from samples)
// follow the collector's rule: a tail percentile needs 1 / (1 - q) samples
// (10 for p90, 100 for p99, 1000 for p99.9), else it is unset ("-", null).
// Values by hand: nearest rank ceil(q * n) of 1..n is that rank.

#include <vector>

#include "gtest/gtest.h"
#include "viewer/views/stats.h"

namespace ticktrace::view {
namespace {

std::vector<double> OneTo(int n) {
  std::vector<double> v;
  for (int i = n; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  return v;
}

TEST(StatsRule, NineSamplesHaveAMedianOnly) {
  std::vector<double> v = OneTo(9);
  const LatencyStats s = ComputeLatencyStats(v);
  ASSERT_TRUE(s.p50_ns.has_value());
  EXPECT_EQ(*s.p50_ns, 5);  // rank ceil(4.5) = 5
  EXPECT_FALSE(s.p90_ns.has_value());
  EXPECT_FALSE(s.p99_ns.has_value());
  EXPECT_FALSE(s.p999_ns.has_value());
}

TEST(StatsRule, TenSamplesHaveAP90) {
  std::vector<double> v = OneTo(10);
  const LatencyStats s = ComputeLatencyStats(v);
  ASSERT_TRUE(s.p90_ns.has_value());
  EXPECT_EQ(*s.p90_ns, 9);
  EXPECT_FALSE(s.p99_ns.has_value());
}

TEST(StatsRule, NineHundredNinetyNineSamplesHaveNoP999) {
  std::vector<double> v = OneTo(999);
  const LatencyStats s = ComputeLatencyStats(v);
  ASSERT_TRUE(s.p99_ns.has_value());
  EXPECT_EQ(*s.p99_ns, 990);  // ceil(989.01) = 990
  EXPECT_FALSE(s.p999_ns.has_value());
  std::vector<double> w = OneTo(1000);
  const LatencyStats t = ComputeLatencyStats(w);
  ASSERT_TRUE(t.p999_ns.has_value());
  EXPECT_EQ(*t.p999_ns, 999);
}

}  // namespace
}  // namespace ticktrace::view
