// The sparse histogram (what an interval delta carries from the collector to
// the writer) against docs/store.md's encoding and hand-computed buckets: it
// must store exactly the bytes the dense Histogram stores for the same values.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"
#include "ticktrace/store/histogram.h"

namespace ticktrace::store {
namespace {

std::string DenseEncoding(std::initializer_list<double> values) {
  Histogram h;
  for (double v : values) h.Add(v);
  return h.Encode();
}

SparseHistogram Built(HistogramBuilder& builder, std::initializer_list<double> values) {
  for (double v : values) builder.Add(v);
  SparseHistogram out;
  builder.Take(&out);
  return out;
}

std::string DoubleBytes(double v) {
  char b[sizeof(v)];
  std::memcpy(b, &v, sizeof(v));
  return std::string(b, sizeof(b));
}

// docs/store.md: u8 1, varint count, sum/min/max, varint near_zero, then the
// positive and negative lists. 1.0 ns is in octave 0, whose first bucket is
// (0 - (-4)) * 128 = 512: the gap 512 is the varint 0x80 0x04.
TEST(SparseHistogramTest, EncodingOfOneValueByHand) {
  HistogramBuilder builder;
  const SparseHistogram h = Built(builder, {1.0});
  std::string expected = "\x01\x01";
  expected += DoubleBytes(1.0) + DoubleBytes(1.0) + DoubleBytes(1.0);
  expected += std::string(
      "\x00"
      "\x01"
      "\x80\x04"
      "\x01"
      "\x00",
      6);
  EXPECT_EQ(h.Encode(), expected);
  ASSERT_EQ(h.positive().size(), 1u);
  EXPECT_EQ(h.positive()[0].index, 512u);
  EXPECT_EQ(h.positive()[0].count, 1u);
  EXPECT_TRUE(h.negative().empty());
}

TEST(SparseHistogramTest, EmptyEncodesAsTheEmptyHistogram) {
  EXPECT_EQ(SparseHistogram().Encode(), std::string("\x01\x00", 2));
  EXPECT_EQ(SparseHistogram().Encode(), Histogram().Encode());
  HistogramBuilder builder;
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(Built(builder, {}).Encode(), Histogram().Encode());
}

// Two deltas of one key merged, then encoded, store what one dense histogram
// of all the values stores: positive, negative, near-zero and a shared bucket.
TEST(SparseHistogramTest, MergedDeltasEncodeAsTheDenseHistogram) {
  HistogramBuilder builder;
  SparseHistogram first = Built(builder, {100, 200, 300, -40});
  const SparseHistogram second = Built(builder, {150, 300, 0.01, -40, 100.2});
  first.Merge(second);
  EXPECT_EQ(first.count(), 9u);
  EXPECT_EQ(first.min(), -40);
  EXPECT_EQ(first.max(), 300);
  EXPECT_EQ(first.near_zero(), 1u);
  // 100 and 100.2 share the bucket [100, 100.5) (width 64/128 in [64, 128)).
  EXPECT_EQ(first.positive().size(), 4u);  // 100, 150, 200, 300
  ASSERT_EQ(first.negative().size(), 1u);
  EXPECT_EQ(first.negative()[0].count, 2u);
  EXPECT_EQ(first.Encode(), DenseEncoding({100, 200, 300, -40, 150, 300, 0.01, -40, 100.2}));
}

// Percentiles through the sparse path, by hand: the buckets of 100, 150, 200,
// 300, 300 have midpoints 100.25, 150.5, 200.5, 301 (clamped to the max 300).
TEST(SparseHistogramTest, PercentilesAfterMergeIntoDense) {
  HistogramBuilder builder;
  SparseHistogram a = Built(builder, {300, 100});
  const SparseHistogram b = Built(builder, {200, 300, 150});
  a.Merge(b);
  Histogram dense;
  dense.Merge(a);
  EXPECT_EQ(dense.count(), 5u);
  EXPECT_DOUBLE_EQ(dense.sum(), 1050);
  EXPECT_DOUBLE_EQ(dense.Quantile(0.2), 100.25);  // rank 1
  EXPECT_DOUBLE_EQ(dense.Quantile(0.4), 150.5);   // rank 2
  EXPECT_DOUBLE_EQ(dense.Quantile(0.5), 200.5);   // rank 3
  EXPECT_DOUBLE_EQ(dense.Quantile(1.0), 300);     // 301 clamped to the max
  EXPECT_EQ(dense.Encode(), a.Encode());
  absl::StatusOr<Histogram> decoded = Histogram::Decode(a.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_DOUBLE_EQ(decoded->Quantile(0.5), 200.5);
}

// A dense histogram that merges sparse deltas holds what merging their dense
// equivalents gives (what the SQLite writer's open intervals do).
TEST(SparseHistogramTest, DenseMergeOfSparseEqualsDenseMergeOfDense) {
  Histogram open;
  open.Add(5000);
  open.Add(-3);
  SparseHistogram delta;
  for (double v : {5000.0, 7.5, -3.0, 0.0}) delta.Add(v);
  open.Merge(delta);
  EXPECT_EQ(open.Encode(), DenseEncoding({5000, -3, 5000, 7.5, -3, 0}));
  EXPECT_EQ(open.count(), 6u);
  EXPECT_EQ(open.CountAtMost(0), 3u);  // -3, -3 and the near-zero 0
}

// A builder is reused from batch to batch: what one Take() handed out is
// not in the next, and its buckets are zero again.
TEST(SparseHistogramTest, BuilderStartsAfreshAfterTake) {
  HistogramBuilder builder;
  const SparseHistogram first = Built(builder, {10, 10, 20, -5});
  EXPECT_EQ(first.Encode(), DenseEncoding({10, 10, 20, -5}));
  EXPECT_TRUE(builder.empty());
  const SparseHistogram second = Built(builder, {20, 1e6});
  EXPECT_EQ(second.count(), 2u);
  EXPECT_EQ(second.min(), 20);
  EXPECT_EQ(second.Encode(), DenseEncoding({20, 1e6}));
  ASSERT_EQ(second.positive().size(), 2u);
  EXPECT_EQ(second.positive()[0].count, 1u);  // not 2: the first batch's 20 is gone
}

// Add() (cold paths) and the builder give the same histogram, in any order.
TEST(SparseHistogramTest, AddMatchesTheBuilder) {
  SparseHistogram added;
  for (double v : {900.0, 3.0, 900.0, -1e9, 0.0, 45.0, 3.0}) added.Add(v);
  HistogramBuilder builder;
  EXPECT_EQ(added.Encode(), Built(builder, {900, 3, 900, -1e9, 0, 45, 3}).Encode());
  EXPECT_EQ(added.count(), 7u);
  EXPECT_EQ(added.positive().size(), 3u);  // 3, 45, 900
}

// A NaN is not a value, as in Histogram::Add.
TEST(SparseHistogramTest, NanIsIgnored) {
  HistogramBuilder builder;
  SparseHistogram h = Built(builder, {std::nan(""), 50});
  h.Add(std::nan(""));
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.Encode(), DenseEncoding({50}));
}

}  // namespace
}  // namespace ticktrace::store
