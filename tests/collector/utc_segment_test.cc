#include "collector/sinks/utc_segment.h"

#include <cstdint>

#include "collector/time/time_base.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kU0 = 1'800'000'000'000'000'000;

// 1 GHz (1 ns per tick). Anchors at TSC 1000 (kU0), 2000 (kU0 + 1010: the
// realtime clock ran 1% fast) and 3000 (kU0 + 2000: 1% slow after that).
TimeBase ThreeAnchors() {
  TimeBase t = TimeBase::FromHz(1e9, 1000, kU0);
  EXPECT_TRUE(t.AddAnchor(2000, kU0 + 1010));
  EXPECT_TRUE(t.AddAnchor(3000, kU0 + 2000));
  return t;
}

// Values by hand: linear between two anchors, the calibrated rate outside.
TEST(UtcSegmentTest, InsideOneSegmentByHand) {
  const TimeBase t = ThreeAnchors();
  const UtcSegment between(t, 1500);
  EXPECT_EQ(between.UtcNs(1500), kU0 + 505);  // half of 1010
  EXPECT_EQ(between.UtcNs(1800), kU0 + 808);  // 0.8 of 1010
  EXPECT_EQ(between.UtcNs(1000), kU0);        // the segment's first anchor
  const UtcSegment after(t, 3200);
  EXPECT_EQ(after.UtcNs(3200), kU0 + 2200);
  EXPECT_EQ(after.UtcNs(3500), kU0 + 2500);
  const UtcSegment before(t, 900);
  EXPECT_EQ(before.UtcNs(900), kU0 - 100);
  EXPECT_EQ(before.UtcNs(400), kU0 - 600);
}

// An order whose stamps straddle a re-anchor: the stamps past the segment's
// end map through the next segment, as TimeBase::UtcNs maps them.
TEST(UtcSegmentTest, AcrossAReAnchorByHand) {
  const TimeBase t = ThreeAnchors();
  const UtcSegment s(t, 1900);
  EXPECT_EQ(s.UtcNs(1900), kU0 + 909);        // 0.9 of 1010
  EXPECT_EQ(s.UtcNs(2000), kU0 + 1010);       // the next anchor itself
  EXPECT_EQ(s.UtcNs(2100), kU0 + 1010 + 99);  // 0.1 of 990
  EXPECT_EQ(s.UtcNs(3100), kU0 + 2100);       // past the last anchor
  EXPECT_EQ(s.UtcNs(999), kU0 - 1);           // before the first
}

// Every value near each anchor, from a segment found at each of them: the
// same as the per-value conversion, to the ns (non-integral rates too).
TEST(UtcSegmentTest, SameAsPerValueConversion) {
  TimeBase t = TimeBase::FromHz(2.6e9, 1'000'000, kU0);
  ASSERT_TRUE(t.AddAnchor(2'600'001'000, kU0 + 1'000'000'123));
  ASSERT_TRUE(t.AddAnchor(5'200'003'000, kU0 + 2'000'000'007));
  for (uint64_t start : {uint64_t{999'000}, uint64_t{1'000'000}, uint64_t{1'300'000'000},
                         uint64_t{2'600'000'990}, uint64_t{2'600'001'000}, uint64_t{5'200'002'990},
                         uint64_t{5'200'003'000}, uint64_t{9'000'000'000}}) {
    const UtcSegment s(t, start);
    for (int64_t d = -3000; d <= 3000; d += 7) {
      const uint64_t tsc = start + static_cast<uint64_t>(d);
      ASSERT_EQ(s.UtcNs(tsc), t.UtcNs(tsc)) << "segment at " << start << ", tsc " << tsc;
    }
  }
  const TimeBase one = TimeBase::FromHz(2.6e9, 1'000'000, kU0);  // a single anchor
  const UtcSegment s(one, 5);
  for (uint64_t tsc : {uint64_t{0}, uint64_t{5}, uint64_t{1'000'000}, uint64_t{1} << 50}) {
    EXPECT_EQ(s.UtcNs(tsc), one.UtcNs(tsc));
  }
}

// The TSC values of a UTC window, by hand. 2 GHz, one anchor at TSC 1000
// (kU0): UTC = kU0 + llround((t - 1000) / 2), halves rounded up. kU0 + 100 is
// first reached at t = 1199 (99.5 -> 100); kU0 + 200 at t = 1399, so the
// window [kU0 + 100, kU0 + 200) is t in [1199, 1398].
TEST(UtcSegmentTest, TscRangeOfAUtcWindowByHand) {
  const TimeBase t = TimeBase::FromHz(2e9, 1000, kU0);
  const UtcSegment s(t, 1300);
  const UtcSegment::TscRange wide = s.TscRangeAround(1300, 1000, kU0 + 100, kU0 + 200);
  EXPECT_EQ(wide.first_tsc, 1199u);
  EXPECT_EQ(wide.last_tsc, 1398u);
  // A reach of 50 ticks cuts it to [1250, 1350].
  const UtcSegment::TscRange near = s.TscRangeAround(1300, 50, kU0 + 100, kU0 + 200);
  EXPECT_EQ(near.first_tsc, 1250u);
  EXPECT_EQ(near.last_tsc, 1350u);
  // The value itself at the window's edges.
  EXPECT_EQ(s.TscRangeAround(1199, 1000, kU0 + 100, kU0 + 200).first_tsc, 1199u);
  EXPECT_EQ(s.TscRangeAround(1398, 1000, kU0 + 100, kU0 + 200).last_tsc, 1398u);
}

// Between two anchors the range stops at the segment's ends, though the UTC
// window goes on: ThreeAnchors' segment [1000, 1999] maps 1000 -> kU0 and
// 1900 -> kU0 + 909 (1.01 ns a tick), and kU0 + 500 is first reached at
// t = 1495 (495 x 1.01 = 499.95 -> 500).
TEST(UtcSegmentTest, TscRangeStopsAtTheSegmentsEnds) {
  const TimeBase t = ThreeAnchors();
  const UtcSegment s(t, 1900);
  const UtcSegment::TscRange r = s.TscRangeAround(1900, 5000, kU0 + 500, kU0 + 5000);
  EXPECT_EQ(r.first_tsc, 1495u);
  EXPECT_EQ(r.last_tsc, 1999u);  // the next anchor (2000) starts the next segment
  const UtcSegment::TscRange all = s.TscRangeAround(1900, 5000, kU0 - 5000, kU0 + 5000);
  EXPECT_EQ(all.first_tsc, 1000u);
}

// Every value inside a range maps into the window and its neighbours just
// outside do not (per-value conversion), at a non-integral rate.
TEST(UtcSegmentTest, TscRangeAgreesWithThePerValueConversion) {
  TimeBase t = TimeBase::FromHz(2.6e9, 1'000'000, kU0);
  ASSERT_TRUE(t.AddAnchor(2'600'001'000, kU0 + 1'000'000'123));
  for (uint64_t tsc : {uint64_t{1'002'000}, uint64_t{1'300'000'000}, uint64_t{2'700'000'000}}) {
    const UtcSegment s(t, tsc);
    const int64_t u = t.UtcNs(tsc);
    const int64_t from = u - 337, to = u + 1000;
    const UtcSegment::TscRange r = s.TscRangeAround(tsc, 1'000'000, from, to);
    for (uint64_t v = r.first_tsc; v <= r.last_tsc; ++v) {
      ASSERT_GE(t.UtcNs(v), from) << v;
      ASSERT_LT(t.UtcNs(v), to) << v;
    }
    EXPECT_LT(t.UtcNs(r.first_tsc - 1), from);
    EXPECT_GE(t.UtcNs(r.last_tsc + 1), to);
  }
}

}  // namespace
}  // namespace ticktrace::collect
