#include "collector/sinks/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

// The histogram's relative error bound, derived by hand from the bucket
// layout of collector/sinks/histogram.h (not read from the code): a value v with
// 2^e <= v < 2^(e+1) falls in one of 128 equal buckets of that octave,
// [2^e (1 + k/128), 2^e (1 + (k+1)/128)), 2^e/128 wide. The bucket's midpoint
// is at most 2^e/256 from any value in it, and v >= 2^e, so
// |midpoint - v| / v <= 1/256 (0.39%), with equality for v = 2^e exactly.
// Clamping to the exact [min, max] only moves the answer towards v.
// Negative values use mirrored buckets (same bound on |v|); |v| < 1/16 ns is
// reported as 0. docs/collector.md states this figure.
constexpr double kRelativeError = 1.0 / 256;

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

// Log-uniform values from 1 ns to 10 s: every percentile within the bound,
// min/max/mean exact.
TEST(HistogramTest, QuantilesWithinTheBucketBound) {
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
    EXPECT_NEAR(h.Quantile(q), exact, exact * kRelativeError * (1 + 1e-12)) << q;
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
    // Values within 1/16 ns of zero are reported as 0: an absolute error.
    EXPECT_NEAR(h.Quantile(q), exact,
                std::fabs(exact) * kRelativeError * (1 + 1e-12) + 1.0 / 16)
        << q;
  }
  EXPECT_DOUBLE_EQ(h.min(), -375);
  EXPECT_LT(h.Quantile(0.1), 0);
}

// The bound is reached, not just respected: a value of exactly 2^e is the
// low edge of its bucket, reported at the midpoint 2^e (1 + 1/256). A value
// just below 2^(e+1) is reported 2^e/256 below the octave's end.
TEST(HistogramTest, TheBoundIsReachedAtAPowerOfTwo) {
  Histogram h;
  for (double v : {1024.0, 1024.0, 1024.0, 4000.0}) h.Add(v);
  // p50 is rank 2 of 4: 1024. Bucket [1024, 1032), midpoint 1028.
  EXPECT_EQ(h.Quantile(0.5), 1028.0);
  EXPECT_DOUBLE_EQ((h.Quantile(0.5) - 1024.0) / 1024.0, kRelativeError);

  Histogram top;
  for (double v : {1000.0, 2047.5, 2047.5, 3000.0}) top.Add(v);
  // p75 is rank 3 of 4: 2047.5, in [2040, 2048), midpoint 2044.
  EXPECT_EQ(top.Quantile(0.75), 2044.0);
  EXPECT_LE((2047.5 - top.Quantile(0.75)) / 2047.5, kRelativeError);

  Histogram negative;
  for (double v : {-600.0, -512.0, -512.0, 100.0}) negative.Add(v);
  // Rank 2 of 4 is -512: the mirrored bucket of |v| in [512, 516), reported
  // at its midpoint -514 (inside the exact [min, max] = [-600, 100]).
  EXPECT_EQ(negative.Quantile(0.5), -514.0);
  // Rank 1 is -600, in [600, 604): the midpoint -602 is clamped to min.
  EXPECT_EQ(negative.Quantile(0.0), -600.0);
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
