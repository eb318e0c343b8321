#include "collector/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

double ExactQuantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

TEST(HistogramTest, EmptyIsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Quantile(0.5), 0);
  EXPECT_EQ(h.mean(), 0);
}

// Log-uniform values from 1 ns to 10 s: every percentile within 1% (the
// bound promised is 1/256), min/max/mean exact.
TEST(HistogramTest, QuantilesWithinOnePercent) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(0, 10);
  std::vector<double> values;
  Histogram h;
  double sum = 0;
  for (int i = 0; i < 200000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    values.push_back(v);
    sum += v;
    h.Add(v);
  }
  for (double q : {0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const double exact = ExactQuantile(values, q);
    EXPECT_NEAR(h.Quantile(q), exact, exact / 256 + 1e-9) << q;
  }
  EXPECT_DOUBLE_EQ(h.min(), *std::min_element(values.begin(), values.end()));
  EXPECT_DOUBLE_EQ(h.max(), *std::max_element(values.begin(), values.end()));
  EXPECT_NEAR(h.mean(), sum / values.size(), 1e-9 * sum / values.size());
}

// Negative values (cross-core differences) keep their sign and order.
TEST(HistogramTest, NegativeValues) {
  Histogram h;
  std::vector<double> values;
  for (int i = -500; i <= 1500; ++i) {
    values.push_back(i * 0.75);
    h.Add(i * 0.75);
  }
  for (double q : {0.01, 0.1, 0.25, 0.5, 0.9}) {
    const double exact = ExactQuantile(values, q);
    EXPECT_NEAR(h.Quantile(q), exact, std::fabs(exact) / 256 + Histogram::kMinResolvedNs) << q;
  }
  EXPECT_DOUBLE_EQ(h.min(), -375);
  EXPECT_LT(h.Quantile(0.1), 0);
}

TEST(HistogramTest, MergeEqualsAddingEverything) {
  Histogram a, b, all;
  for (int i = 1; i < 1000; ++i) {
    (i % 3 ? a : b).Add(i * 3.5);
    all.Add(i * 3.5);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.Quantile(0.99), all.Quantile(0.99));
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
}

}  // namespace
}  // namespace ticktrace::collect
