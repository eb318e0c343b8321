// Times read by another clock (stamp_at: kExternal records) placed on the
// TSC timeline through the UTC anchors, with their uncertainty
// (collector/time/external_clock.h, docs/calibration.md "Other clocks").
// Every expected value is worked out by hand in the comment beside it.
//
// The time base of every case: 1 GHz (one tick is one ns), a first anchor
// (TSC 0, UTC U0) and, where said, a second one (TSC 1'000'000,
// UTC U0 + 1'000'100): CLOCK_REALTIME ran 100 ppm faster than the calibrated
// TSC between them (1'000'100 ns of realtime over 1'000'000 ticks).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collector/app/collector.h"
#include "collector/time/external_clock.h"
#include "collector/time/time_base.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kU0 = 1'700'000'000'000'000'000;

TimeBase TwoAnchors() {
  TimeBase t = TimeBase::FromHz(1e9, 0, kU0);
  EXPECT_TRUE(t.AddAnchor(1'000'000, kU0 + 1'000'100));
  return t;
}

// Anchor error 20 ns, CLOCK_REALTIME's resolution 1 ns, a PHC synced within
// 1000 ns, an exchange clock of unknown error.
ExternalClockErrors Errors() {
  ExternalClockErrors e;
  e.anchor_error_ns = 20;
  e.realtime_error_ns = 1;
  e.phc_error_ns = 1000;
  return e;
}

TEST(ExternalPlacement, BetweenTwoAnchorsLinearlyWithTheAnchorAndClockError) {
  // U0 + 500'050 is half of the piece's 1'000'100 ns: half of its 1'000'000
  // ticks, TSC 500'000. Inside the anchors: no rate term, 20 + 1 = 21 ns.
  const ExternalPlacement p = PlaceExternal(TwoAnchors(), kU0 + 500'050, abi::kClockRealtime,
                                            Errors());
  EXPECT_EQ(p.tsc, 500'000u);
  ASSERT_TRUE(p.uncertainty_ns.has_value());
  EXPECT_DOUBLE_EQ(*p.uncertainty_ns, 21.0);
  // The PHC: 20 + its stated 1000 = 1020 ns.
  const ExternalPlacement phc = PlaceExternal(TwoAnchors(), kU0 + 500'050, abi::kClockPhc,
                                              Errors());
  EXPECT_EQ(phc.tsc, 500'000u);
  EXPECT_DOUBLE_EQ(*phc.uncertainty_ns, 1020.0);
}

TEST(ExternalPlacement, AfterTheLastAnchorAtTheCalibratedRateWithTheDriftOverTheDistance) {
  // 2'000 ns after the last anchor's UTC: 2'000 ticks after its TSC,
  // 1'002'000. The newest piece drifted 100 ppm, and its two anchors' 20 ns
  // errors could move that by 2 * 20 / 1'000'000 ns = 40 ppm: 140e-6 * 2'000
  // = 0.28 ns more, 21.28 ns.
  const ExternalPlacement p = PlaceExternal(TwoAnchors(), kU0 + 1'000'100 + 2'000,
                                            abi::kClockRealtime, Errors());
  EXPECT_EQ(p.tsc, 1'002'000u);
  EXPECT_NEAR(*p.uncertainty_ns, 21.28, 1e-9);
}

TEST(ExternalPlacement, OneAnchorOnlyAssumesTheLargestSlew) {
  // No drift measured yet: 500 ppm (the kernel's largest frequency
  // adjustment) over 2'000 ns is 1 ns: 22 ns. TSC 2'000.
  const TimeBase one = TimeBase::FromHz(1e9, 0, kU0);
  const ExternalPlacement p = PlaceExternal(one, kU0 + 2'000, abi::kClockRealtime, Errors());
  EXPECT_EQ(p.tsc, 2'000u);
  EXPECT_NEAR(*p.uncertainty_ns, 22.0, 1e-9);
}

TEST(ExternalPlacement, AClockOfUnknownErrorHasAnUnknownUncertainty) {
  const ExternalPlacement p = PlaceExternal(TwoAnchors(), kU0 + 500'050, abi::kClockExchange,
                                            Errors());
  EXPECT_EQ(p.tsc, 500'000u);
  EXPECT_FALSE(p.uncertainty_ns.has_value());
  EXPECT_EQ(PackUncertaintyNs(p.uncertainty_ns), kUncertaintyUnknown);
  EXPECT_EQ(PackUncertaintyNs(21.2), 22u) << "rounded up";
  EXPECT_EQ(UnpackUncertaintyNs(22u), 22.0);
}

TEST(ExternalPlacement, TscAtUtcIsUtcNsInverse) {
  // Three anchors, the middle piece 200 ppm slow: every UTC maps to a TSC
  // whose UTC is itself within a tick's rounding (1 ns at 1 GHz).
  TimeBase t = TwoAnchors();
  ASSERT_TRUE(t.AddAnchor(2'000'000, kU0 + 1'000'100 + 999'800));
  for (int64_t u : {kU0, kU0 + 1, kU0 + 777'777, kU0 + 1'000'100,
                    kU0 + 1'500'000, kU0 + 1'999'899, kU0 + 2'500'000}) {
    EXPECT_NEAR(static_cast<double>(t.UtcNs(t.TscAtUtc(u)) - u), 0.0, 1.0) << u - kU0;
  }
  // Before the first anchor (TSC 10'000 at U0): the calibrated rate back
  // from it, 5'000 ns before is TSC 5'000.
  const TimeBase later = TimeBase::FromHz(1e9, 10'000, kU0);
  EXPECT_EQ(later.TscAtUtc(kU0 - 5'000), 5'000u);
  EXPECT_EQ(later.NsOutsideAnchors(kU0 - 5'000), 5'000);
}

// The collector end to end (a crafted raw archive, replayed into SQLite):
// pipeline wire_rx -> md_rx, wire_rx an external stamp, md_rx a TSC stamp.
abi::Record External(uint16_t tag, uint64_t order, int64_t utc_ns, uint32_t clock) {
  abi::Record r = testing::MakeRecord(abi::kExternal, tag, order, /*tsc=*/900'000'000, clock);
  r.payload.external_ns = utc_ns;
  return r;
}

using ExternalReplayTest = testing::ReplayStoreTest;

TEST_F(ExternalReplayTest, StagesFromAnotherClockAreFlaggedExternalWithTheirUncertainty) {
  RunInfo info = testing::TestRunInfo("test", 1e9);
  info.anchor_utc_ns = kU0;
  info.external_clocks = Errors();
  testing::ArchiveBuilder b(info);
  b.Anchor(1'000'000, kU0 + 1'000'100);
  b.Process(1, {"wire_rx", "md_rx"});
  b.Records(1, {
                   // 1: realtime U0+500'050 -> TSC 500'000; md_rx 500'700: 700 ns.
                   External(0, 1, kU0 + 500'050, abi::kClockRealtime),
                   testing::Stamp(1, 1, 500'700),
                   // 2: U0+500'760 -> 500'760 / 1.0001 = 500'709.93 -> 500'710:
                   // -10 ns, within 21: skew.
                   External(0, 2, kU0 + 500'760, abi::kClockRealtime),
                   testing::Stamp(1, 2, 500'700),
                   // 3: U0+501'050 -> 500'999.90 -> 501'000: -300, beyond 21: negative.
                   External(0, 3, kU0 + 501'050, abi::kClockRealtime),
                   testing::Stamp(1, 3, 500'700),
                   // 4: order 1's packet, read by a PHC running 900 ns late
                   // (a known offset): U0+500'950 -> 500'899.91 -> 500'900,
                   // so the stage moves by -900 ns to -200 ns; the PHC's
                   // stated 1000 ns (+20) covers the offset: skew, not negative.
                   External(0, 4, kU0 + 500'950, abi::kClockPhc),
                   testing::Stamp(1, 4, 500'700),
                   // 5: as 3 from an exchange clock of unknown error: an
                   // unknown bound is never the benign case: negative.
                   External(0, 5, kU0 + 501'050, abi::kClockExchange),
                   testing::Stamp(1, 5, 500'700),
                   // 6: 2'000 ns after the last anchor -> 1'002'000; md_rx
                   // 1'002'500: 500 ns.
                   External(0, 6, kU0 + 1'000'100 + 2'000, abi::kClockRealtime),
                   testing::Stamp(1, 6, 1'002'500),
               });
  CollectorOptions o;
  o.pipeline = {"wire_rx", "md_rx"};
  const RunSummary s = Replay(b, o);
  testing::StoreQuery q(db());
  const auto latency = [&](int order) {
    return q.Real("SELECT latency_ns FROM samples WHERE stage = 'wire_rx->md_rx' AND order_id = " +
                  std::to_string(order));
  };
  const auto flags = [&](int order) {
    return q.Int("SELECT flags FROM samples WHERE stage = 'wire_rx->md_rx' AND order_id = " +
                 std::to_string(order));
  };
  // external 256, skew 16, negative 2 (store/include/ticktrace/store/flags.h).
  EXPECT_EQ(latency(1), 700);
  EXPECT_EQ(flags(1), 256);
  EXPECT_EQ(latency(2), -10);
  EXPECT_EQ(flags(2), 256 | 16);
  EXPECT_EQ(latency(3), -300);
  EXPECT_EQ(flags(3), 256 | 2);
  EXPECT_EQ(latency(4), -200);
  EXPECT_EQ(latency(1) - latency(4), 900) << "moved by the clock's offset";
  EXPECT_EQ(flags(4), 256 | 16);
  EXPECT_EQ(latency(5), -300);
  EXPECT_EQ(flags(5), 256 | 2);
  EXPECT_EQ(latency(6), 500);
  EXPECT_EQ(flags(6), 256);
  // The stage's largest uncertainty: order 4's 20 + 1000 ns.
  EXPECT_EQ(q.Real("SELECT uncertainty_ns FROM stage_stats WHERE stage = 'wire_rx->md_rx'"), 1020);
  EXPECT_EQ(q.Int("SELECT negative FROM stage_stats WHERE stage = 'wire_rx->md_rx'"), 2);
  EXPECT_EQ(q.Int("SELECT skew FROM stage_stats WHERE stage = 'wire_rx->md_rx'"), 2);
  // The external stamp keeps its own time: UTC of TSC 500'000 is U0+500'050.
  EXPECT_EQ(q.Int("SELECT flags FROM stamps WHERE tag = 'wire_rx' AND order_id = 1"), 256);
  EXPECT_EQ(q.Int("SELECT utc_ns FROM stamps WHERE tag = 'wire_rx' AND order_id = 1"),
            kU0 + 500'050);
  EXPECT_EQ(s.counter("malformed"), 0);
  // The clocks that read the stage's begin (wire_rx): realtime (orders 1, 2,
  // 3, 6), the PHC (4) and the exchange (5); its end (md_rx) is the TSC's.
  // 'total' runs from the same first stamp to the same last.
  const auto clocks = [&](const std::string& stage) {
    return q.Text("SELECT group_concat(side || ':' || clock, ',') FROM (SELECT side, clock FROM "
                  "stage_clocks WHERE stage = '" + stage + "' ORDER BY side, clock)");
  };
  EXPECT_EQ(clocks("wire_rx->md_rx"), "begin:exchange,begin:phc,begin:realtime");
  EXPECT_EQ(clocks("total"), "begin:exchange,begin:phc,begin:realtime");
  EXPECT_EQ(q.Int("SELECT count(*) FROM stage_clocks"), 6);
}

}  // namespace
}  // namespace ticktrace::collect
