// summary: counts, percentiles, stage order, filters and the --json contract
// on the known store (store_fixture.h).
#include "viewer/views/summary.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/cli/query.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

using testing::FindStage;
using testing::KnownStore;

// The interval histograms' percentiles are within 1/256 of a sample
// (ticktrace/store/histogram.h); exact ones come from --exact or a filter they cannot
// answer.
constexpr double kHistogramRelativeError = 1.0 / 256;

// Order 7's strategy->gateway sample is only cross-core. The documented
// policy (docs/store.md, "Flagged samples": "`migrated` and `negative`
// samples are kept out of the `stage_stats` percentiles unless the run's
// `include_flagged` is 1; `cross_core` alone never is"; docs/viewer.md,
// "Filters") keeps it in the percentiles. Hard-coded here, not taken from
// the viewer's kExcludedFlags, so that a change of the code fails this test.
constexpr int64_t kCrossCoreOnlyKept = 1;

using SummaryTest = testing::KnownStoreTest;

TEST_F(SummaryTest, UnfilteredMergesIntervalsOfLatestRunInPipelineOrder) {
  auto summary = BuildSummary(*store_, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->run.run_id, KnownStore::kLatestRun);
  EXPECT_TRUE(summary->from_intervals);
  EXPECT_FALSE(summary->detail_sampled);
  ASSERT_EQ(summary->stages.size(), 4u);
  EXPECT_EQ(summary->stages[0].stage, "md->strategy");
  EXPECT_EQ(summary->stages[1].stage, "risk");
  EXPECT_EQ(summary->stages[2].stage, "strategy->gateway");
  EXPECT_EQ(summary->stages[3].stage, "total");
  EXPECT_EQ(CounterValue(*summary, "drained"), 405);
  EXPECT_EQ(CounterValue(*summary, "dropped"), 3);
  EXPECT_EQ(CounterValue(*summary, "orders_incomplete"), 1);
}

// The numbers are the intervals' merge, not the stage_stats the collector
// keeps for users' SQL (schema 2): a marker there never shows.
TEST_F(SummaryTest, IntervalsNotStageStatsGiveTheNumbers) {
  testing::TempDir dir;
  const std::string marked = dir.File("marked.db");
  testing::KnownStoreOptions options;
  options.stats_marker = 12345.0;
  testing::WriteKnownStore(marked, options);
  auto store = store::StoreReader::Open(marked);
  ASSERT_TRUE(store.ok()) << store.status();
  auto summary = BuildSummary(**store, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->stages.size(), 4u);
  for (const SummaryStage& s : summary->stages) {
    ASSERT_TRUE(s.stats.p50_ns.has_value()) << s.stage;
    EXPECT_NE(*s.stats.p50_ns, 12345.0) << s.stage;
    // Every stage has fewer than 1000 samples: no p99.9.
    EXPECT_EQ(s.stats.p999_ns, std::nullopt) << s.stage;
  }
  EXPECT_NEAR(*FindStage(*summary, "total")->stats.p50_ns, 1561.0, 1561.0 * kHistogramRelativeError);
  // --exact computes from the samples instead: the nearest rank itself.
  QueryOptions q;
  q.exact = true;
  auto exact = BuildSummary(**store, q);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_FALSE(exact->from_intervals);
  EXPECT_EQ(FindStage(*exact, "total")->stats.p50_ns, 1561.0);
}

TEST_F(SummaryTest, ComputedFromSamplesMatchesKnownAnswers) {
  QueryOptions q;
  q.since = TimeArg{TimeArg::Anchor::kRunStart, 0};  // everything
  q.exact = true;                                     // from the samples
  auto summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->from_intervals);

  // md->strategy: 10*i ns for i = 1..100; order 13 is negative+cross-core,
  // so out of the percentiles: 99 values.
  const SummaryStage* md = FindStage(*summary, "md->strategy");
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->stats.count, 99);
  EXPECT_EQ(md->stats.min_ns, 10.0);
  EXPECT_EQ(md->stats.max_ns, 1000.0);
  EXPECT_EQ(md->stats.p50_ns, 510.0);  // rank 50 of 99, skipping 130
  EXPECT_EQ(md->stats.p90_ns, 910.0);
  // 99 values: fewer than the 100 a p99 needs (its rank would be the max).
  EXPECT_EQ(md->stats.p99_ns, std::nullopt);
  EXPECT_NEAR(*md->stats.mean_ns, 50370.0 / 99.0, 1e-9);
  EXPECT_EQ(md->negative, 1);
  EXPECT_EQ(md->cross_core, 1);
  EXPECT_EQ(md->migrated, 0);

  // total: 1000 + 11*i, order 13 is 1008, linked order 102 is 301.2 µs.
  const SummaryStage* total = FindStage(*summary, "total");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->stats.count, 101);
  EXPECT_EQ(total->stats.min_ns, 1008.0);
  EXPECT_EQ(total->stats.p50_ns, 1561.0);
  EXPECT_EQ(total->stats.p99_ns, 2100.0);
  EXPECT_EQ(total->stats.p999_ns, std::nullopt);  // 101 values: a p99.9 needs 1000
  EXPECT_EQ(total->stats.max_ns, 301200.0);

  const SummaryStage* risk = FindStage(*summary, "risk");
  ASSERT_NE(risk, nullptr);
  EXPECT_EQ(risk->stats.count, 99);
  EXPECT_EQ(risk->migrated, 1);

  const SummaryStage* gw = FindStage(*summary, "strategy->gateway");
  ASSERT_NE(gw, nullptr);
  EXPECT_EQ(gw->stats.count, 100 + kCrossCoreOnlyKept);  // 101 samples, order 7 cross-core
  EXPECT_EQ(gw->cross_core, 1);
  EXPECT_EQ(gw->stats.max_ns, 1200.0);
}

// The intervals' merge and the exact statistics of the same samples agree:
// counts and flags exactly, percentiles within the histogram's precision
// (schema 2: the whole run's numbers are the intervals', no longer
// stage_stats computed exactly by the fixture).
TEST_F(SummaryTest, IntervalsAndSamplesAgreeOnTheKnownStore) {
  auto from_stats = BuildSummary(*store_, QueryOptions());
  QueryOptions q;
  q.until = TimeArg{TimeArg::Anchor::kRunEnd, 0};
  q.exact = true;
  auto from_samples = BuildSummary(*store_, q);
  ASSERT_TRUE(from_stats.ok() && from_samples.ok());
  ASSERT_EQ(from_stats->stages.size(), from_samples->stages.size());
  for (size_t i = 0; i < from_stats->stages.size(); ++i) {
    const SummaryStage& a = from_stats->stages[i];
    const SummaryStage& b = from_samples->stages[i];
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.stats.count, b.stats.count) << a.stage;
    ASSERT_TRUE(a.stats.p50_ns.has_value() && b.stats.p50_ns.has_value()) << a.stage;
    EXPECT_NEAR(*a.stats.p50_ns, *b.stats.p50_ns,
                std::fabs(*b.stats.p50_ns) * kHistogramRelativeError)
        << a.stage;
    EXPECT_EQ(a.stats.min_ns, b.stats.min_ns) << a.stage;  // exact in both
    EXPECT_EQ(a.stats.max_ns, b.stats.max_ns) << a.stage;
    EXPECT_EQ(a.stats.p999_ns, b.stats.p999_ns) << a.stage;
    EXPECT_EQ(a.migrated, b.migrated) << a.stage;
    EXPECT_EQ(a.negative, b.negative) << a.stage;
    EXPECT_EQ(a.cross_core, b.cross_core) << a.stage;
  }
}

TEST_F(SummaryTest, IncludeFlaggedCountsFlaggedSamples) {
  QueryOptions q;
  q.include_flagged = true;  // the histograms were written without: computed
  auto summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->from_intervals);
  EXPECT_EQ(FindStage(*summary, "md->strategy")->stats.count, 100);
  EXPECT_EQ(FindStage(*summary, "md->strategy")->stats.min_ns, -5.0);
}

TEST_F(SummaryTest, FlaggedSamplesCountAsTheCollectorCountedThemByDefault) {
  testing::TempDir dir;
  const std::string path = dir.File("included.db");
  testing::KnownStoreOptions options;
  options.include_flagged = true;  // a run collected with --include-flagged
  testing::WriteKnownStore(path, options);
  const std::unique_ptr<store::StoreReader> store = testing::OpenStore(path);
  ASSERT_NE(store, nullptr);
  auto unfiltered = BuildSummary(*store, QueryOptions());
  ASSERT_TRUE(unfiltered.ok()) << unfiltered.status();
  EXPECT_TRUE(unfiltered->from_intervals);
  EXPECT_EQ(FindStage(*unfiltered, "md->strategy")->stats.count, 100);  // order 13 included
  EXPECT_TRUE(unfiltered->include_flagged);

  QueryOptions q;
  q.since = TimeArg{TimeArg::Anchor::kRunStart, 0};
  q.exact = true;
  auto filtered = BuildSummary(*store, q);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  EXPECT_FALSE(filtered->from_intervals);
  EXPECT_EQ(FindStage(*filtered, "md->strategy")->stats.count, 100);  // order 13 included

  q.include_flagged = false;  // --exclude-flagged
  auto excluded = BuildSummary(*store, q);
  ASSERT_TRUE(excluded.ok()) << excluded.status();
  EXPECT_EQ(FindStage(*excluded, "md->strategy")->stats.count, 99);
  EXPECT_FALSE(excluded->include_flagged);
}

// A run whose detail was sampled (--detail tail: of orders 1..102 only the
// ten multiples of 10, the flagged 7, 13 and 21, and 101 and 102 keep their
// detail: 15 of 102). The intervals still count every order; numbers from
// the samples say "detail sampled", and the text says it either way.
TEST(SummarySampledTest, SampledDetailIsNeverPresentedAsComplete) {
  testing::TempDir dir;
  const std::string path = dir.File("tail.db");
  testing::KnownStoreOptions options;
  options.detail_sampled = true;
  testing::WriteKnownStore(path, options);
  const std::unique_ptr<store::StoreReader> store = testing::OpenStore(path);
  ASSERT_NE(store, nullptr);

  auto summary = BuildSummary(*store, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->from_intervals);
  EXPECT_TRUE(summary->detail_sampled);
  EXPECT_EQ(summary->detail.orders, 102);
  EXPECT_EQ(summary->detail.orders_kept, 15);
  ASSERT_EQ(summary->stages.size(), 4u);
  EXPECT_EQ(summary->stages[0].stats.count, 99);  // every order's md->strategy but 13's
  const std::string text = RenderSummaryText(*summary);
  EXPECT_NE(text.find("detail sampled: 15 of 102 orders have detail (--detail tail)"),
            std::string::npos)
      << text;

  QueryOptions q;
  q.exact = true;
  auto exact = BuildSummary(*store, q);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_FALSE(exact->from_intervals);
  ASSERT_EQ(exact->stages[0].stage, "md->strategy");
  EXPECT_EQ(exact->stages[0].stats.count, 12);  // 10, 20, ..., 100, 7 and 21
  for (const SummaryStage& s : exact->stages) {
    EXPECT_NE(std::find(s.confidence.begin(), s.confidence.end(), "detail sampled"),
              s.confidence.end())
        << s.stage;
  }
  EXPECT_NE(RenderSummaryText(*exact).find("detail sampled"), std::string::npos);

  // A window: orders 51..101 (by first stamp; 102's is 50's), of which 60,
  // 70, 80, 90, 100 and 101 kept detail.
  q = QueryOptions();
  q.since = TimeArg{TimeArg::Anchor::kAbsolute, KnownStore::FirstUtcNs(51)};
  auto window = BuildSummary(*store, q);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->detail.orders, 51);
  EXPECT_EQ(window->detail.orders_kept, 6);
  EXPECT_EQ(window->stages[0].stats.count, 50);
}

TEST_F(SummaryTest, StageFilterKeepsOneRow) {
  QueryOptions q;
  q.stage = "risk";
  auto summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->stages.size(), 1u);
  EXPECT_EQ(summary->stages[0].stage, "risk");
}

TEST_F(SummaryTest, ProcessFilterByNameOrPid) {
  QueryOptions q;
  q.process = "gateway";
  auto by_name = BuildSummary(*store_, q);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  q.process = "1003";
  auto by_pid = BuildSummary(*store_, q);
  ASSERT_TRUE(by_pid.ok()) << by_pid.status();
  for (const auto* s : {&*by_name, &*by_pid}) {
    EXPECT_EQ(FindStage(*s, "md->strategy")->stats.count, 0);  // md -> strategy: no gateway end
    EXPECT_EQ(FindStage(*s, "strategy->gateway")->stats.count, 100 + kCrossCoreOnlyKept);
    EXPECT_EQ(FindStage(*s, "total")->stats.count, 101);
  }
}

TEST_F(SummaryTest, TimeWindowAbsoluteAndRelative) {
  QueryOptions q;
  q.since = TimeArg{TimeArg::Anchor::kAbsolute, KnownStore::FirstUtcNs(51)};
  auto absolute = BuildSummary(*store_, q);
  ASSERT_TRUE(absolute.ok()) << absolute.status();
  EXPECT_EQ(FindStage(*absolute, "md->strategy")->stats.count, 50);  // orders 51..100
  EXPECT_EQ(FindStage(*absolute, "md->strategy")->stats.p50_ns, 750.0);

  // Relative times count from the samples: the last starts at order 100's
  // risk span, 100 ms + 1010 ns after the base; "-50ms" keeps orders 51..100.
  q.since = TimeArg{TimeArg::Anchor::kRunEnd, -50'000'000};
  auto relative = BuildSummary(*store_, q);
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(FindStage(*relative, "md->strategy")->stats.count, 50);

  // The first sample starts at order 1 (base + 1 ms): "+10ms".."+19ms",
  // inclusive, is orders 11..20.
  q.since = TimeArg{TimeArg::Anchor::kRunStart, 10'000'000};
  q.until = TimeArg{TimeArg::Anchor::kRunStart, 19'000'000};
  auto window = BuildSummary(*store_, q);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(FindStage(*window, "total")->stats.count, 10);
  // min: order 13, whose md->strategy is -5 ns.
  EXPECT_EQ(FindStage(*window, "total")->stats.min_ns,
            KnownStore::MdToStrategyNs(13) + KnownStore::StrategyToGatewayNs(13));
}

TEST_F(SummaryTest, UnknownRunStageProcessAndReversedWindowAreErrors) {
  QueryOptions q;
  q.run_id = 9;
  EXPECT_TRUE(absl::IsNotFound(BuildSummary(*store_, q).status()));
  q = QueryOptions();
  q.stage = "nope";
  EXPECT_TRUE(absl::IsNotFound(BuildSummary(*store_, q).status()));
  q = QueryOptions();
  q.process = "nope";
  EXPECT_TRUE(absl::IsNotFound(BuildSummary(*store_, q).status()));
  q = QueryOptions();
  q.since = TimeArg{TimeArg::Anchor::kRunStart, 10};
  q.until = TimeArg{TimeArg::Anchor::kRunStart, 5};
  EXPECT_TRUE(absl::IsInvalidArgument(BuildSummary(*store_, q).status()));
}

TEST_F(SummaryTest, OlderRunByNumber) {
  QueryOptions q;
  q.run_id = 1;
  auto summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->run.run_id, 1);
  ASSERT_EQ(summary->stages.size(), 2u);
  EXPECT_EQ(summary->stages.back().stage, "total");
  EXPECT_EQ(summary->stages.back().stats.p50_ns, 5000.0);
}

// The --json contract of docs/viewer.md: exactly these fields, these types.
TEST_F(SummaryTest, JsonHasExactlyTheDocumentedFieldsAndTypes) {
  auto summary = BuildSummary(*store_, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  const nlohmann::json j = nlohmann::json::parse(RenderSummaryJson(*summary));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 6u);  // records_lost, run, calibration, counters, notes, stages
  // The fixture's run: drained 405, dropped 3, malformed 1. Written 405 + 3 =
  // 408; lost 3 (ring_full) + 1 (malformed) = 4.
  const auto& lost = j.at("records_lost");
  EXPECT_EQ(lost.size(), 4u);
  EXPECT_EQ(lost.at("lost").get<int64_t>(), 4);
  EXPECT_EQ(lost.at("written").get<int64_t>(), 408);
  EXPECT_DOUBLE_EQ(lost.at("share").get<double>(), 4.0 / 408.0);
  const auto& by_cause = lost.at("by_cause");
  EXPECT_EQ(by_cause.size(), 7u);
  EXPECT_EQ(by_cause.at("ring_full").get<int64_t>(), 3);
  EXPECT_EQ(by_cause.at("malformed").get<int64_t>(), 1);
  EXPECT_EQ(by_cause.at("refused_segment").get<int64_t>(), 0);
  ASSERT_TRUE(j.at("run").is_number_integer());
  // What the collector said about the run: the fixture's writer said nothing.
  ASSERT_TRUE(j.at("notes").is_array());
  EXPECT_TRUE(j["notes"].empty());
  EXPECT_EQ(j["run"].get<int64_t>(), 2);

  const auto& cal = j.at("calibration");
  EXPECT_EQ(cal.size(), 6u);
  EXPECT_TRUE(cal.at("utc_drift_ppm").is_null());  // the fixture's run has no anchors
  ASSERT_TRUE(cal.at("cores").is_array());          // {cpu, offset_ns, bound_ns} each
  EXPECT_TRUE(cal.at("tsc_hz").is_number());
  EXPECT_EQ(cal["tsc_hz"].get<double>(), 2e9);
  EXPECT_TRUE(cal.at("source").is_string());
  EXPECT_EQ(cal["source"], "cpuid-0x15");
  EXPECT_TRUE(cal.at("spread_ppm").is_number());
  EXPECT_TRUE(cal.at("step_ns").is_number());

  // The seven always there, and every other counter of the run: the
  // fixture's samples_not_stored and two missing_stage entries.
  const auto& counters = j.at("counters");
  EXPECT_EQ(counters.size(), 10u);
  EXPECT_EQ(counters.at("missing_stage:strategy").get<int64_t>(), 1);
  EXPECT_EQ(counters.at("samples_not_stored").get<int64_t>(), 0);
  for (const char* name : {"drained", "dropped", "malformed", "orders_complete",
                           "orders_incomplete", "late_records", "orders_late"}) {
    ASSERT_TRUE(counters.at(name).is_number_integer()) << name;
  }
  EXPECT_EQ(counters["drained"].get<int64_t>(), 405);
  EXPECT_EQ(counters["orders_complete"].get<int64_t>(), 101);

  const auto& stages = j.at("stages");
  ASSERT_TRUE(stages.is_array());
  ASSERT_EQ(stages.size(), 4u);
  for (const auto& s : stages) {
    EXPECT_EQ(s.size(), 19u);
    EXPECT_TRUE(s.at("stage").is_string());
    // Every stamp of this store is a TSC stamp: no other clock to name.
    EXPECT_EQ(s.at("clocks"), nlohmann::json::array());
    // "ok" or a list of reasons; these stages have under 100 samples or not.
    EXPECT_TRUE(s.at("confidence").is_string() || s.at("confidence").is_array());
    EXPECT_TRUE(s.at("uncertainty_ns").is_null() || s.at("uncertainty_ns").is_number());
    for (const char* name : {"count", "migrated", "negative", "cross_core", "skew", "out_of_order",
                             "late", "core_unknown"}) {
      EXPECT_TRUE(s.at(name).is_number_integer()) << name;
    }
    for (const char* name : {"min_ns", "p50_ns", "p90_ns", "max_ns", "mean_ns"}) {
      EXPECT_TRUE(s.at(name).is_number()) << name;
    }
    // Every stage has fewer than 1000 samples: no p99.9 (null, never a number).
    EXPECT_TRUE(s.at("p999_ns").is_null());
    // A p99 needs 100: the two stages of 99 samples have none, those of 101 do.
    EXPECT_EQ(s.at("p99_ns").is_number(), s.at("count").get<int64_t>() >= 100) << s.at("stage");
    EXPECT_EQ(s.at("p99_ns").is_null(), s.at("count").get<int64_t>() < 100) << s.at("stage");
  }
  EXPECT_EQ(stages[0]["stage"], "md->strategy");
  EXPECT_EQ(stages[3]["stage"], "total");
  EXPECT_EQ(stages[3]["count"].get<int64_t>(), 101);
  // The intervals' merge: within the histogram's precision of the nearest rank.
  EXPECT_NEAR(stages[3]["p50_ns"].get<double>(), 1561.0, 1561.0 * kHistogramRelativeError);
}

// The documented exceptions to "number": null when not measured / no sample.
TEST_F(SummaryTest, JsonNullsWhereTheStoreHasNoValue) {
  QueryOptions q;
  q.run_id = 1;  // written without spread_ppm and tsc_step_ns
  auto summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  nlohmann::json j = nlohmann::json::parse(RenderSummaryJson(*summary));
  EXPECT_TRUE(j["calibration"]["spread_ppm"].is_null());
  EXPECT_TRUE(j["calibration"]["step_ns"].is_null());
  EXPECT_TRUE(j["counters"]["malformed"].is_number_integer());  // absent counter: 0
  EXPECT_EQ(j["counters"]["malformed"].get<int64_t>(), 0);

  q = QueryOptions();
  q.process = "gateway";  // no md->strategy sample has a gateway end
  summary = BuildSummary(*store_, q);
  ASSERT_TRUE(summary.ok()) << summary.status();
  j = nlohmann::json::parse(RenderSummaryJson(*summary));
  EXPECT_EQ(j["stages"][0]["stage"], "md->strategy");
  EXPECT_EQ(j["stages"][0]["count"].get<int64_t>(), 0);
  EXPECT_TRUE(j["stages"][0]["p50_ns"].is_null());
  EXPECT_TRUE(j["stages"][0]["migrated"].is_number_integer());
}

TEST_F(SummaryTest, TextTableHasHeaderAndUnits) {
  auto summary = BuildSummary(*store_, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string text = RenderSummaryText(*summary);
  EXPECT_NE(text.find("calibration: 2.0000 GHz (cpuid-0x15), spread 1.50 ppm"), std::string::npos)
      << text;
  EXPECT_NE(text.find("drained 405, dropped 3, malformed 1"), std::string::npos) << text;
  EXPECT_NE(text.find("missing_stage:gateway 1"), std::string::npos) << text;
  EXPECT_NE(text.find("301 µs"), std::string::npos) << text;  // total max, in µs
  EXPECT_NE(text.find("10.0 ns"), std::string::npos) << text;  // md->strategy min, in ns
  EXPECT_LT(text.find("md->strategy"), text.find("strategy->gateway"));
  EXPECT_LT(text.find("strategy->gateway"), text.find("\ntotal"));
}

}  // namespace
}  // namespace ticktrace::view
