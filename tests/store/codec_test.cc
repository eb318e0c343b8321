// The store's encodings: the histogram's compact form and the packed order
// detail. Expected values are written out by hand.

#include <string>

#include "store/common/detail.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

TEST(HistogramEncoding, EmptyIsTwoBytes) {
  Histogram h;
  const std::string bytes = h.Encode();
  EXPECT_EQ(bytes, std::string("\x01\x00", 2));  // version 1, count 0
  absl::StatusOr<Histogram> back = Histogram::Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->count(), 0u);
}

TEST(HistogramEncoding, RoundTripKeepsEveryStatistic) {
  Histogram h;
  for (double v : {-250.0, 0.01, 100.0, 100.0, 1000.0, 12345.0, 1e9}) h.Add(v);
  absl::StatusOr<Histogram> back = Histogram::Decode(h.Encode());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->count(), 7u);
  EXPECT_EQ(back->min(), -250.0);
  EXPECT_EQ(back->max(), 1e9);
  EXPECT_DOUBLE_EQ(back->sum(), -250.0 + 0.01 + 200.0 + 1000.0 + 12345.0 + 1e9);
  for (double q : {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0}) {
    EXPECT_EQ(back->Quantile(q), h.Quantile(q)) << q;
  }
  // 6 non-empty buckets and a near-zero count: far below the 139 kB in memory.
  EXPECT_LT(h.Encode().size(), 64u);
}

TEST(HistogramEncoding, MergeOfDecodedEqualsMergeOfOriginals) {
  Histogram a, b;
  for (int i = 1; i <= 100; ++i) a.Add(i * 10.0);   // 10 .. 1000
  for (int i = 1; i <= 100; ++i) b.Add(i * 100.0);  // 100 .. 10000
  Histogram merged = *Histogram::Decode(a.Encode());
  merged.Merge(*Histogram::Decode(b.Encode()));
  EXPECT_EQ(merged.count(), 200u);
  EXPECT_EQ(merged.min(), 10.0);
  EXPECT_EQ(merged.max(), 10000.0);
  // Rank 100 of the 200 values {10..1000 step 10} u {100..10000 step 100}:
  // at most 900 are 90 of a's and 9 of b's (99 values); the next is a's 910.
  EXPECT_NEAR(merged.Quantile(0.5), 910.0, 910.0 / 256);
}

TEST(HistogramEncoding, RejectsGarbage) {
  EXPECT_FALSE(Histogram::Decode("").ok());
  EXPECT_FALSE(Histogram::Decode(std::string("\x02\x00", 2)).ok());  // unknown version
  Histogram h;
  h.Add(5);
  h.Add(7);
  std::string bytes = h.Encode();
  EXPECT_FALSE(Histogram::Decode(bytes.substr(0, bytes.size() - 1)).ok());  // truncated
  EXPECT_FALSE(Histogram::Decode(bytes + "x").ok());                       // trailing
  bytes[1] = 3;  // the count says 3, the buckets hold 2
  EXPECT_FALSE(Histogram::Decode(bytes).ok());
}

TEST(HistogramCounts, CountAtMostFollowsBucketMidpoints) {
  Histogram h;
  for (double v : {1.0, 2.0, 4.0, 8.0}) h.Add(v);
  EXPECT_EQ(h.CountAtMost(0.5), 0u);
  EXPECT_EQ(h.CountAtMost(2.1), 2u);  // 1 and 2 (midpoints 1.004, 2.008)
  EXPECT_EQ(h.CountAtMost(100), 4u);
}

TEST(PackedDetail, RoundTrip) {
  PackedDetail d;
  d.first_tsc_utc_delta_ns = -1500;
  d.stamps.push_back({.name_id = 3, .is_span = false, .process_id = 1, .tid = 4242, .cpu = 0,
                      .cpu_end = -1, .tsc_delta = 0, .duration_ns = 0, .flags = 0});
  d.stamps.push_back({.name_id = 4, .is_span = true, .process_id = 2, .tid = 7, .cpu = -1,
                      .cpu_end = 1, .tsc_delta = -17, .duration_ns = -250, .flags = 1 | 8});
  d.samples.push_back({.start_delta_ns = 0, .process_begin = 1, .process_end = 2,
                       .cpu_begin = 0, .cpu_end = -1});
  d.samples.push_back({.start_delta_ns = -9, .process_begin = -1, .process_end = -1,
                       .cpu_begin = 5, .cpu_end = 6});
  std::string bytes;
  PackDetail(d, &bytes);
  absl::StatusOr<PackedDetail> back = UnpackDetail(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->first_tsc_utc_delta_ns, -1500);
  ASSERT_EQ(back->stamps.size(), 2u);
  EXPECT_EQ(back->stamps[0].tid, 4242u);
  EXPECT_EQ(back->stamps[0].cpu, 0);
  EXPECT_FALSE(back->stamps[0].is_span);
  EXPECT_TRUE(back->stamps[1].is_span);
  EXPECT_EQ(back->stamps[1].cpu, -1);
  EXPECT_EQ(back->stamps[1].cpu_end, 1);
  EXPECT_EQ(back->stamps[1].tsc_delta, -17);
  EXPECT_EQ(back->stamps[1].duration_ns, -250);
  EXPECT_EQ(back->stamps[1].flags, 9u);
  ASSERT_EQ(back->samples.size(), 2u);
  EXPECT_EQ(back->samples[1].start_delta_ns, -9);
  EXPECT_EQ(back->samples[1].process_begin, -1);
  EXPECT_EQ(back->samples[1].cpu_end, 6);
  // Stamp 1: 1+1+1+2+1+1 = 7 bytes; stamp 2: 1+1+1+1+1+1+1+2 = 9; samples 5 + 5;
  // version, zigzag(-1500) = 2999 (2 bytes) and two counts 5: 31 bytes.
  EXPECT_EQ(bytes.size(), 31u);
}

// The same order as RoundTrip above, given as an OrderDetail whose names a
// writer resolved per batch: the same fields back, the same 31 bytes.
TEST(PackedDetail, OrderWithResolvedNamesPacksTheSameFields) {
  OrderDetail o;
  o.first_utc_ns = 10'000;
  o.first_tsc = 500;
  o.first_tsc_utc_ns = 10'000 - 1500;
  o.stamps.push_back({.tag = "x", .process_id = 1, .tid = 4242, .cpu = 0, .tsc = 500});
  o.stamps.push_back({.tag = "y", .is_span = true, .process_id = 2, .tid = 7, .cpu = -1,
                      .cpu_end = 1, .tsc = 483, .duration_ns = -250.4, .flags = 1 | 8});
  o.samples.push_back({.stage = "x->y", .start_utc_ns = 10'000, .process_begin = 1,
                       .process_end = 2, .cpu_begin = 0, .cpu_end = -1});
  o.samples.push_back({.stage = "total", .start_utc_ns = 9'991, .process_begin = -1,
                       .process_end = -1, .cpu_begin = 5, .cpu_end = 6});
  const uint32_t ids[] = {3, 4};
  std::string bytes = "kept";  // appended to, not replaced
  PackOrderDetail(o, ids, &bytes);
  ASSERT_EQ(bytes.substr(0, 4), "kept");
  absl::StatusOr<PackedDetail> back = UnpackDetail(std::string_view(bytes).substr(4));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->first_tsc_utc_delta_ns, -1500);
  ASSERT_EQ(back->stamps.size(), 2u);
  EXPECT_EQ(back->stamps[0].name_id, 3u);
  EXPECT_EQ(back->stamps[0].tid, 4242u);
  EXPECT_EQ(back->stamps[0].tsc_delta, 0);
  EXPECT_EQ(back->stamps[1].name_id, 4u);
  EXPECT_TRUE(back->stamps[1].is_span);
  EXPECT_EQ(back->stamps[1].cpu, -1);
  EXPECT_EQ(back->stamps[1].cpu_end, 1);
  EXPECT_EQ(back->stamps[1].tsc_delta, -17);
  EXPECT_EQ(back->stamps[1].duration_ns, -250);
  EXPECT_EQ(back->stamps[1].flags, 9u);
  ASSERT_EQ(back->samples.size(), 2u);
  EXPECT_EQ(back->samples[0].start_delta_ns, 0);
  EXPECT_EQ(back->samples[1].start_delta_ns, -9);
  EXPECT_EQ(back->samples[1].process_begin, -1);
  EXPECT_EQ(back->samples[1].cpu_begin, 5);
  EXPECT_EQ(back->samples[1].cpu_end, 6);
  EXPECT_EQ(bytes.size(), 4u + 31u);
}

TEST(PackedDetail, RejectsLiesAndTruncation) {
  EXPECT_FALSE(UnpackDetail("").ok());
  EXPECT_FALSE(UnpackDetail(std::string("\x01\x00\x7f", 3)).ok());  // 127 stamps in 3 bytes
  PackedDetail d;
  d.stamps.push_back({});
  std::string bytes;
  PackDetail(d, &bytes);
  EXPECT_FALSE(UnpackDetail(bytes.substr(0, bytes.size() - 2)).ok());
  EXPECT_TRUE(UnpackDetail(bytes).ok());
}

TEST(ZigZagTest, HandValues) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  EXPECT_EQ(UnZigZag(ZigZag(INT64_MIN)), INT64_MIN);
  EXPECT_EQ(UnZigZag(ZigZag(INT64_MAX)), INT64_MAX);
}

TEST(Names, CounterTableIsInEnumOrderAndUnique) {
  for (size_t i = 0; i < kCounters.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(kCounters[i].counter), i) << kCounters[i].name;
    EXPECT_EQ(CounterByName(kCounters[i].name), kCounters[i].counter);
  }
  EXPECT_EQ(CounterName(Counter::kLateRecords), "late_records");
  EXPECT_FALSE(CounterByName("no_such_counter").has_value());
  EXPECT_EQ(TransitionStageName("a", "b"), "a->b");
  // Its inverse: the first arrow splits; a span's or the total's name has none.
  const auto tags = TransitionTags("wire_tx->venue_rx");
  ASSERT_TRUE(tags.has_value());
  EXPECT_EQ(tags->first, "wire_tx");
  EXPECT_EQ(tags->second, "venue_rx");
  EXPECT_FALSE(TransitionTags("decide").has_value());
  EXPECT_FALSE(TransitionTags("total").has_value());
}

}  // namespace
}  // namespace ticktrace::store
