// Regression tests for how far the numbers can be trusted: order
// instances (an id used again) and late records, out-of-order stamps, skew measured against the
// cores' bounds, and UTC mapped piecewise through anchors. Expected values
// are by hand from the inputs. Archives use 1 GHz, so one tick is one ns;
// the collector's linger is min(order timeout, 100 ms) = 100 ms = 1e8 ticks.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/app/collector.h"
#include "collector/app/run_info.h"
#include "collector/stream/stream.h"
#include "collector/time/time_base.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/live_fixture.h"
#include "tests/collector/replay_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {
namespace {

constexpr uint64_t kLingerTicks = 100'000'000;  // 100 ms at 1 GHz
constexpr uint32_t kCpu0 = 0, kCpu1 = 1;         // aux values: cpu number, node 0

std::string CoresUpdate(std::vector<CoreSkew> cores) {
  RunInfoUpdate u;
  u.kind = RunInfoUpdate::Kind::kCores;
  u.cores = std::move(cores);
  std::string chunk;
  ChunkEncoder::RunInfo(u.ToJson(), &chunk);
  return chunk;
}

std::string AnchorUpdate(uint64_t tsc, int64_t utc_ns) {
  RunInfoUpdate u;
  u.kind = RunInfoUpdate::Kind::kAnchor;
  u.anchor = UtcAnchor{tsc, utc_ns};
  std::string chunk;
  ChunkEncoder::RunInfo(u.ToJson(), &chunk);
  return chunk;
}

// An archive whose cores were measured: cpu 1 reads 30 ns ahead of cpu 0,
// within 50 ns; process 1 with tags a and b.
ArchiveBuilder SkewedCoresArchive() {
  ArchiveBuilder b;
  b.Raw(CoresUpdate({CoreSkew{0, 0, 0, true, 1}, CoreSkew{1, 30, 50, true, 1}}));
  b.Process(1, {"a", "b"});
  return b;
}

CollectorOptions Declared(const std::string& db, std::vector<std::string> pipeline) {
  CollectorOptions o;
  if (db.empty()) {
    o.store_uri.reset();  // "": no store
  } else {
    o.store_uri = store::StoreUri::LocalFile(db);
  }
  o.pipeline = std::move(pipeline);
  return o;
}

// A TimeBase with two anchors maps piecewise.
TEST(TimeBasePiecewise, MapsBetweenAndBeyondTwoAnchors) {
  // 1 GHz; anchor (1000, 5000); then (2000, 6100): over those 1000 ticks
  // (1000 ns by the TSC) CLOCK_REALTIME advanced 1100 ns.
  TimeBase tb = TimeBase::FromHz(1e9, 1000, 5000);
  EXPECT_FALSE(tb.DriftPpm().has_value());
  ASSERT_TRUE(tb.AddAnchor(2000, 6100));
  EXPECT_FALSE(tb.AddAnchor(1500, 0));  // not after the last: ignored
  EXPECT_EQ(tb.UtcNs(1000), 5000);
  EXPECT_EQ(tb.UtcNs(1500), 5550);  // halfway: 5000 + 1100 / 2
  EXPECT_EQ(tb.UtcNs(1900), 5990);  // 5000 + 0.9 * 1100
  EXPECT_EQ(tb.UtcNs(2000), 6100);
  EXPECT_EQ(tb.UtcNs(2500), 6600);  // past the last anchor: the calibrated rate
  EXPECT_EQ(tb.UtcNs(500), 4500);   // before the first: the calibrated rate
  ASSERT_TRUE(tb.DriftPpm().has_value());
  EXPECT_NEAR(*tb.DriftPpm(), 100000, 1e-6);  // (1100 / 1000 - 1) * 1e6
}

// Piecewise UTC end to end: a stamp between two anchors of the stream gets the
// piecewise UTC, and the run stores the drift.
TEST(TimeBasePiecewise, StampUtcFollowsTheStreamsAnchors) {
  ArchiveBuilder b;  // anchor (0, 1.7e18)
  b.Process(1, {"a", "b"});
  constexpr int64_t kUtc0 = 1700000000000000000;
  // After 1e9 ticks (1 s by the TSC) CLOCK_REALTIME had advanced 1 s + 100 us (+100 ppm).
  b.Raw(AnchorUpdate(1'000'000'000, kUtc0 + 1'000'100'000));
  b.Records(1, {Stamp(0, 7, 500'000'000), Stamp(1, 7, 500'000'100)});
  b.Clock(500'000'200).Clock(500'000'300).Clock(500'000'300 + kLingerTicks);
  TempDir dir;
  const testing::Replayed r = ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b"}));
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(dir.File("s.db"));
  // Halfway between the anchors: 0.5 * 1 000 100 000 = 500 050 000 ns.
  EXPECT_EQ(q.Int("SELECT utc_ns FROM stamps WHERE tag = 'a'"), kUtc0 + 500'050'000);
  EXPECT_NEAR(q.Real("SELECT utc_drift_ppm FROM runs"), 100, 1e-6);
  EXPECT_EQ(q.Int("SELECT count(*) FROM anchors"), 2);
}

// A record of a finished order that arrives within the linger
// window joins it; no second order.
TEST(OrderInstances, LateRecordWithinLingerJoinsItsOrder) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "c"});
  // Order 1: a and c (the last stage) first; b 50 ms later.
  b.Records(1, {Stamp(0, 1, 1000), Stamp(2, 1, 1300)});
  b.Clock(2000).Clock(3000);  // two ticks: finished, lingering from 3000
  b.Clock(3000 + kLingerTicks / 2);
  b.Records(1, {Stamp(1, 1, 1100)});
  b.Clock(3000 + kLingerTicks);  // linger over: emitted
  b.Clock(3000 + 3 * kLingerTicks);
  TempDir dir;
  const testing::Replayed r =
      ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b", "c"}));
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.summary.counter("orders_complete"), 1) << r.log;
  EXPECT_EQ(r.summary.counter("orders_incomplete"), 0);
  EXPECT_EQ(r.summary.counter("late_records"), 0);
  StoreQuery q(dir.File("s.db"));
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders"), 1);
  EXPECT_EQ(q.Int("SELECT complete FROM orders"), 1);
  EXPECT_DOUBLE_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'a->b'"), 100);
  EXPECT_DOUBLE_EQ(q.Real("SELECT latency_ns FROM samples WHERE stage = 'b->c'"), 200);
}

// Later than the linger window, a record of a finished order is a late partial instance:
// counted, stored and flagged, not merged and not a ghost order of its own.
TEST(OrderInstances, RecordAfterLingerIsALateFlaggedInstance) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "c"});
  b.Records(1, {Stamp(0, 1, 1000), Stamp(2, 1, 1300)});
  b.Clock(2000).Clock(3000);
  b.Clock(3000 + kLingerTicks);  // emitted: a, c (b missing)
  b.Records(1, {Stamp(1, 1, 1100)});  // b, too late
  b.Clock(3000 + 2 * kLingerTicks);
  TempDir dir;
  const testing::Replayed r =
      ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b", "c"}));
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.summary.counter("orders_incomplete"), 1) << r.log;  // instance 0
  EXPECT_EQ(r.summary.counter("orders_late"), 1);
  EXPECT_EQ(r.summary.counter("late_records"), 1);
  StoreQuery q(dir.File("s.db"));
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE order_id = 1"), 2);
  EXPECT_EQ(q.Int("SELECT (flags & 64) != 0 FROM orders WHERE instance = 1"), 1);
  EXPECT_EQ(q.Int("SELECT (flags & 64) != 0 FROM orders WHERE instance = 0"), 0);
  EXPECT_EQ(q.Text("SELECT missing FROM orders WHERE instance = 0"), "b");
  EXPECT_EQ(q.Int("SELECT flags FROM stamps WHERE instance = 1 AND tag = 'b'"), 64);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'late_records'"), 1);
}

// Replay: an id used again after its order was emitted is a new
// instance; both are stored and the statistics count exactly what is stored.
TEST(OrderInstances, ReusedIdStoresBothUses) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  uint64_t t = 1000;
  const uint64_t latencies[] = {100, 500, 300};  // uses 1 and 2 of id 1, then id 2
  const uint64_t ids[] = {1, 1, 2};
  for (int i = 0; i < 3; ++i) {
    b.Records(1, {Stamp(0, ids[i], t), Stamp(1, ids[i], t + latencies[i])});
    b.Clock(t + 1000).Clock(t + 2000).Clock(t + 2000 + kLingerTicks);
    t += 2 * kLingerTicks;
  }
  TempDir dir;
  const testing::Replayed r = ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b"}));
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(dir.File("s.db"));
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders"), 3);
  EXPECT_EQ(q.Int("SELECT max(instance) FROM orders WHERE order_id = 1"), 1);
  EXPECT_DOUBLE_EQ(
      q.Real("SELECT latency_ns FROM samples WHERE order_id = 1 AND instance = 1 AND stage = "
             "'a->b'"),
      500);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage = 'a->b'"),
            q.Int("SELECT count(*) FROM samples WHERE stage = 'a->b'"));
  EXPECT_EQ(q.Int("SELECT count(*) FROM samples WHERE stage = 'a->b'"), 3);
  EXPECT_EQ(r.summary.counter("late_records"), 0);
  EXPECT_EQ(r.summary.counter("orders_already_stored"), 0);
}

// Below zero on one core is out_of_order (own bit, own count,
// out of the percentiles), not negative.
TEST(OutOfOrder, NegativeOnOneCoreIsOutOfOrder) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  // Order 1: b read 100 ns before a, both on cpu 0. Order 2: a normal 50 ns hop.
  b.Records(1, {Stamp(0, 1, 1000, kCpu0), Stamp(1, 1, 900, kCpu0),
                Stamp(0, 2, 2000, kCpu0), Stamp(1, 2, 2050, kCpu0)});
  b.Clock(3000).Clock(4000).Clock(4000 + kLingerTicks);
  TempDir dir;
  const testing::Replayed r = ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b"}));
  const StageSummary* s = StageOf(r, "a->b");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->out_of_order, 1u);
  EXPECT_EQ(s->negative, 0u);
  EXPECT_EQ(s->count, 1u);  // only the 50 ns hop in the percentiles
  EXPECT_DOUBLE_EQ(s->max_ns, 50);
  StoreQuery q(dir.File("s.db"));
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE order_id = 1 AND stage = 'a->b'"), 32);
  EXPECT_EQ(q.Int("SELECT out_of_order FROM stage_stats WHERE stage = 'a->b'"), 1);
}

// A cross-core difference below zero within the two cores' bounds
// is skew (kept in the percentiles); beyond them, negative. The stage
// carries the cores' uncertainty.
TEST(Skew, WithinTheBoundIsSkewBeyondIsNegative) {
  ArchiveBuilder b = SkewedCoresArchive();
  // a on cpu 0, b on cpu 1. Uncertainty 0 + 50 = 50 ns.
  b.Records(1, {Stamp(0, 1, 1000, kCpu0), Stamp(1, 1, 980, kCpu1),     // -20: skew
                Stamp(0, 2, 2000, kCpu0), Stamp(1, 2, 1900, kCpu1),     // -100: negative
                Stamp(0, 3, 3000, kCpu0), Stamp(1, 3, 3200, kCpu1)});   // +200
  b.Clock(4000).Clock(5000).Clock(5000 + kLingerTicks);
  TempDir dir;
  const testing::Replayed r = ReplayArchive(b, dir, Declared(dir.File("s.db"), {"a", "b"}));
  const StageSummary* s = StageOf(r, "a->b");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->cross_core, 3u);
  EXPECT_EQ(s->skew, 1u);
  EXPECT_EQ(s->negative, 1u);
  EXPECT_EQ(s->count, 2u);  // -20 and +200; -100 excluded
  EXPECT_DOUBLE_EQ(s->min_ns, -20);
  EXPECT_DOUBLE_EQ(s->uncertainty_ns, 50);
  StoreQuery q(dir.File("s.db"));
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE order_id = 1"), 4 | 16);
  EXPECT_EQ(q.Int("SELECT flags FROM samples WHERE order_id = 2"), 4 | 2);
  EXPECT_DOUBLE_EQ(q.Real("SELECT uncertainty_ns FROM stage_stats WHERE stage = 'a->b'"), 50);
  EXPECT_EQ(q.Int("SELECT count(*) FROM cores"), 2);
}

// --correct-skew subtracts the measured offsets: cpu 1 reads 30 ns ahead.
TEST(Skew, CorrectSkewSubtractsTheOffsets) {
  ArchiveBuilder b = SkewedCoresArchive();
  b.Records(1, {Stamp(0, 1, 1000, kCpu0), Stamp(1, 1, 1100, kCpu1)});
  b.Clock(2000).Clock(3000).Clock(3000 + kLingerTicks);
  TempDir dir;
  CollectorOptions o = Declared("", {"a", "b"});
  o.correct_skew = true;
  const testing::Replayed r = ReplayArchive(b, dir, o);
  const StageSummary* s = StageOf(r, "a->b");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->min_ns, 70);  // 100 - (30 - 0)
}

// An id used again, with real processes: a producer that restarts and uses ids
// 1..N again under a live collector has both uses stored, and stage_stats
// count exactly the stored samples.
class LiveReuseTest : public testing::LiveTest {};

TEST_F(LiveReuseTest, ProducerRestartReusingIdsStoresBothUses) {
  constexpr int kOrders = 200;
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "50"});
  for (int use = 0; use < 2; ++use) {
    const pid_t p = StartProducer(
        {"--mode", "spin", "--pace-ns", "20000", "--orders", absl::StrCat(kOrders)});
    WaitProducers({p});
    // Past the linger window (50 ms here) before the ids come again.
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          try {
            StoreQuery q(db());
            return q.Int("SELECT count(*) FROM orders") >= (use + 1) * kOrders;
          } catch (...) {
            return false;
          }
        },
        std::chrono::seconds(30)))
        << testing::ReadFile(log());
  }
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders"), 2 * kOrders);
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE instance = 1"), kOrders);
  EXPECT_EQ(q.Int("SELECT count(*) FROM samples WHERE stage = 'a->b'"), 2 * kOrders);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage = 'a->b'") +
                q.Int("SELECT migrated + negative + out_of_order FROM stage_stats "
                      "WHERE stage = 'a->b'"),
            2 * kOrders);
  EXPECT_EQ(q.Int("SELECT samples_all FROM stage_stats WHERE stage = 'a->b'"),
            q.Int("SELECT count(*) FROM samples WHERE stage = 'a->b'"));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'samples_not_stored'"), 0);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'orders_already_stored'"), 0);
}

}  // namespace
}  // namespace ticktrace::collect::testing
