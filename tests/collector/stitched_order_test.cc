// The stitcher's output is tick-domain (stitched_order.h): stage ids, TSC
// ends and flags, no strings and no ns; the statistics sink and the rows
// (order_rows.h) convert. Every expected value is hand-computed from the
// TSC values below on a 2 GHz clock (0.5 ns per tick), anchored at TSC 0 =
// UTC 1,700,000,000 s.

#include <string>
#include <vector>

#include "collector/sinks/order_rows.h"
#include "collector/sinks/stage_stats.h"
#include "collector/stitch/stitched_order.h"
#include "collector/stitch/stitcher.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kAnchorUtcNs = 1'700'000'000'000'000'000;
constexpr uint32_t kCpu1 = 1, kCpu2 = 2;  // aux values: cpu number, node 0

struct Seen {
  StitchedOrder order;
  std::vector<std::string> stage_names;  // samples' stage names, via the view
  FinishedOrder rows;                    // ToFinishedOrder of it
};

// Keeps a copy of each order, and its rows.
class TickRecorder : public StitchedOrderSink {
 public:
  explicit TickRecorder(bool wants_stamps) : wants_stamps_(wants_stamps) {}
  bool WantsStamps() const override { return wants_stamps_; }
  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override {
    Seen& s = seen.emplace_back();
    s.order = order;
    for (const StitchedSample& x : order.samples) {
      s.stage_names.push_back(view.stages->StageName(x.stage_id));
    }
    if (wants_stamps_) s.rows = ToFinishedOrder(order, view);
  }
  std::vector<Seen> seen;

 private:
  bool wants_stamps_;
};

// An OrderSink whose store is behind: no rows, only counts.
class Behind : public OrderSink {
 public:
  void OnFinishedOrder(FinishedOrder&&) override { ++rows; }
  bool WantsRows() const override { return false; }
  void OnOrderNotStored(size_t samples_count, size_t stamps_count) override {
    samples += samples_count;
    stamps += stamps_count;
  }
  size_t rows = 0, samples = 0, stamps = 0;
};

class StitchedOrderTest : public ::testing::Test {
 protected:
  StitchedOrderTest() {
    for (const char* n : {"a", "b", "c", "s"}) names_.Intern(n);
    settings_.pipeline = {"a", "b", "c"};
  }

  StitchEvent Ev(const char* tag, uint64_t order, uint64_t tsc, uint32_t aux) {
    StitchEvent e;
    e.tsc = tsc;
    e.order_id = order;
    e.aux = aux;
    e.name_id = static_cast<uint32_t>(names_.Find(tag));
    e.process_id = 1;
    e.tid = 11;
    return e;
  }
  StitchEvent SpanEv(uint64_t order, uint64_t tsc, uint32_t duration, uint32_t aux,
                     uint32_t end_aux, uint8_t record_flags) {
    StitchEvent e = Ev("s", order, tsc, aux);
    e.kind = abi::kSpan;
    e.duration_ticks = duration;
    e.end_aux = end_aux;
    e.flags = record_flags;
    return e;
  }
  // Order 7: a@1000 (cpu 1), span s@1200 lasting 100 ticks (cpu 1 -> 2),
  // b@1600 (cpu 1), c@3000 (cpu 2). Order 8: a@5000, a span s@5100 that ran
  // 40 ticks backwards, c@5400; no b.
  void Feed(Stitcher& st) {
    st.AddEvent(Ev("a", 7, 1000, kCpu1));
    st.AddEvent(SpanEv(7, 1200, 100, kCpu1, kCpu2, 0));
    st.AddEvent(Ev("b", 7, 1600, kCpu1));
    st.AddEvent(Ev("c", 7, 3000, kCpu2));
    st.AddEvent(Ev("a", 8, 5000, abi::kAuxUnknown));
    st.AddEvent(SpanEv(8, 5100, 40, abi::kAuxUnknown, abi::kAuxUnknown,
                       abi::kRecordSpanBackwards));
    st.AddEvent(Ev("c", 8, 5400, abi::kAuxUnknown));
    st.Finish();
  }

  NameTable names_;
  StitchSettings settings_;
  TimeBase time_ = TimeBase::FromHz(2e9, 0, kAnchorUtcNs);
};

TEST_F(StitchedOrderTest, SamplesAreTicksWithFlagsDecidedOnce) {
  StageStats stats(/*include_flagged=*/false);
  TickRecorder sink(/*wants_stamps=*/true);
  Stitcher st(settings_, time_, &names_, &stats, &sink);
  Feed(st);
  ASSERT_EQ(sink.seen.size(), 2u);

  const Seen& o7 = sink.seen[0];
  EXPECT_EQ(o7.order.seq, 1u);
  EXPECT_EQ(o7.order.order_id, 7u);
  EXPECT_TRUE(o7.order.complete);
  EXPECT_TRUE(o7.order.missing.empty());
  EXPECT_EQ(o7.order.chain_start_tsc, 1000u);
  EXPECT_EQ(o7.order.records, 4u);
  EXPECT_EQ(o7.stage_names, (std::vector<std::string>{"a->b", "b->c", "s", "total"}));
  ASSERT_EQ(o7.order.samples.size(), 4u);
  const StitchedSample& ab = o7.order.samples[0];
  EXPECT_EQ(ab.begin_tsc, 1000u);
  EXPECT_EQ(ab.end_tsc, 1600u);
  EXPECT_EQ(ab.ticks(), 600);
  EXPECT_EQ(ab.flags, 0) << "one core, forwards";
  const StitchedSample& bc = o7.order.samples[1];
  EXPECT_EQ(bc.ticks(), 1400);
  EXPECT_EQ(bc.flags, kFlagCrossCore);
  EXPECT_EQ(bc.begin_aux, kCpu1);
  EXPECT_EQ(bc.end_aux, kCpu2);
  const StitchedSample& span = o7.order.samples[2];
  EXPECT_EQ(span.begin_tsc, 1200u);
  EXPECT_EQ(span.end_tsc, 1300u);
  EXPECT_EQ(span.flags, kFlagMigrated);
  EXPECT_EQ(o7.order.total_sample, 3);
  EXPECT_EQ(o7.order.samples[3].ticks(), 2000);
  ASSERT_EQ(o7.order.stamps.size(), 4u);
  EXPECT_EQ(o7.order.stamps[1].span_sample, 2);
  EXPECT_EQ(o7.order.stamps[1].flags, kFlagMigrated);
  EXPECT_EQ(o7.order.stamps[0].span_sample, -1);

  const Seen& o8 = sink.seen[1];
  EXPECT_FALSE(o8.order.complete);
  EXPECT_EQ(o8.order.missing, std::vector<uint32_t>{1}) << "b, position 1";
  EXPECT_TRUE(o8.order.has_total);
  EXPECT_EQ(o8.order.total_sample, -1) << "no total sample for an incomplete order";
  EXPECT_EQ(o8.stage_names, (std::vector<std::string>{"a->c", "s"}))
      << "between consecutive stages present; no total: incomplete";
  ASSERT_EQ(o8.order.samples.size(), 2u);
  EXPECT_EQ(o8.order.samples[0].ticks(), 400);
  EXPECT_EQ(o8.order.samples[0].flags, 0) << "cores unknown, forwards";
  EXPECT_EQ(o8.order.samples[1].begin_tsc, 5100u);
  EXPECT_EQ(o8.order.samples[1].end_tsc, 5060u) << "backwards: begin - duration";
  EXPECT_EQ(o8.order.samples[1].ticks(), -40);
  EXPECT_EQ(o8.order.samples[1].flags, kFlagNegative);
}

TEST_F(StitchedOrderTest, RowsConvertTicksToNsAndUtc) {
  StageStats stats(false);
  TickRecorder sink(true);
  Stitcher st(settings_, time_, &names_, &stats, &sink);
  Feed(st);
  ASSERT_EQ(sink.seen.size(), 2u);
  const FinishedOrder& r7 = sink.seen[0].rows;
  EXPECT_EQ(r7.seq, 1u);
  EXPECT_EQ(r7.order.first_utc_ns, kAnchorUtcNs + 500);  // TSC 1000 * 0.5 ns
  ASSERT_TRUE(r7.order.total_ns.has_value());
  EXPECT_DOUBLE_EQ(*r7.order.total_ns, 1000.0);
  ASSERT_EQ(r7.order.samples.size(), 4u);
  EXPECT_EQ(r7.order.samples[0].stage, "a->b");
  EXPECT_DOUBLE_EQ(r7.order.samples[0].latency_ns, 300.0);
  EXPECT_EQ(r7.order.samples[0].start_utc_ns, kAnchorUtcNs + 500);
  EXPECT_EQ(r7.order.samples[1].cpu_begin, 1);
  EXPECT_EQ(r7.order.samples[1].cpu_end, 2);
  EXPECT_DOUBLE_EQ(r7.order.samples[1].latency_ns, 700.0);
  EXPECT_EQ(r7.order.samples[2].stage, "s");
  EXPECT_DOUBLE_EQ(r7.order.samples[2].latency_ns, 50.0);
  EXPECT_EQ(r7.order.samples[3].stage, "total");
  ASSERT_EQ(r7.order.stamps.size(), 4u);
  EXPECT_EQ(r7.order.stamps[1].tag, "s");
  EXPECT_TRUE(r7.order.stamps[1].is_span);
  EXPECT_DOUBLE_EQ(r7.order.stamps[1].duration_ns, 50.0);
  EXPECT_EQ(r7.order.stamps[1].cpu_end, 2);
  EXPECT_EQ(r7.order.stamps[3].utc_ns, kAnchorUtcNs + 1500);
  EXPECT_EQ(r7.order.stamps[3].cpu_end, -1) << "a stamp has no end";

  const FinishedOrder& r8 = sink.seen[1].rows;
  EXPECT_EQ(r8.order.missing, "b");
  EXPECT_FALSE(r8.order.complete);
  ASSERT_TRUE(r8.order.total_ns.has_value());
  EXPECT_DOUBLE_EQ(*r8.order.total_ns, 200.0) << "5400 - 5000 ticks, no total sample";
  ASSERT_EQ(r8.order.samples.size(), 2u);
  EXPECT_EQ(r8.order.samples[0].stage, "a->c");
  EXPECT_DOUBLE_EQ(r8.order.samples[0].latency_ns, 200.0);
  EXPECT_EQ(r8.order.samples[0].cpu_begin, -1);
  EXPECT_DOUBLE_EQ(r8.order.samples[1].latency_ns, -20.0);
  EXPECT_DOUBLE_EQ(r8.order.stamps[1].duration_ns, -20.0);
}

TEST_F(StitchedOrderTest, StatisticsSinkConvertsThroughTheTimeBase) {
  StageStats stats(/*include_flagged=*/true);
  Stitcher st(settings_, time_, &names_, &stats, nullptr);
  Feed(st);
  EXPECT_EQ(stats.samples(), 6u);  // a->b, b->c, s, total; a->c, s of order 8
  for (const StageSummary& s : stats.Summaries()) {
    if (s.stage == "a->b") {
      EXPECT_EQ(s.samples_all, 1u);
      EXPECT_DOUBLE_EQ(s.max_ns, 300.0);
    } else if (s.stage == "s") {
      EXPECT_EQ(s.samples_all, 2u);
      EXPECT_DOUBLE_EQ(s.min_ns, -20.0);
      EXPECT_EQ(s.negative, 1u);
      EXPECT_EQ(s.migrated, 1u);
    } else if (s.stage == "total") {
      EXPECT_EQ(s.samples_all, 1u);
      EXPECT_DOUBLE_EQ(s.max_ns, 1000.0);
    }
  }
}

TEST_F(StitchedOrderTest, NoStampsWhenNoSinkWantsThemAndNotStoredKeepsCounts) {
  StageStats stats(false);
  Behind behind;
  Stitcher st(settings_, time_, &names_, &stats, &behind);
  TickRecorder ticks(/*wants_stamps=*/false);
  st.AddSink(&ticks);
  Feed(st);
  EXPECT_EQ(behind.rows, 0u);
  EXPECT_EQ(behind.samples, 6u);  // 4 of order 7, 2 of order 8
  EXPECT_EQ(behind.stamps, 7u);   // every record: 4 + 3
  ASSERT_EQ(ticks.seen.size(), 2u);
  EXPECT_TRUE(ticks.seen[0].order.stamps.empty()) << "no sink wanted them";
  EXPECT_EQ(ticks.seen[0].order.records, 4u);
  EXPECT_EQ(ticks.seen[0].order.samples.size(), 4u) << "span samples all the same";
}

}  // namespace
}  // namespace ticktrace::collect
