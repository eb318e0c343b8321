// The viewer's time axis (docs/viewer.md#intervals, #diff): `intervals`, `diff` and its noise test,
// on real stores written through the collector's writer with values chosen
// so that every expected number is computed by hand below. Latencies are
// midpoints of store::Histogram buckets (in [512, 1024) ns buckets are 4 ns
// wide with midpoints 514 + 4k; in [1024, 2048) 8 ns wide, 1028 + 8k), so a
// histogram percentile is the value itself.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/cli/commands.h"
#include "viewer/views/diff_report.h"
#include "viewer/format/format_units.h"

namespace ticktrace::view {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Cli {
  int exit_code = -1;
  std::string out, err;
};

Cli View(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Cli r;
  r.exit_code = RunViewer(args, out, err, /*stdout_is_tty=*/false);
  r.out = out.str();
  r.err = err.str();
  return r;
}

nlohmann::json Json(const Cli& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

int64_t RunBase(int run) {  // run 1 at 2026-11-30T08:00:00Z, run 2 an hour later
  return testing::KnownStore::BaseUtcNs() + (run - 1) * 3'600'000'000'000;
}

// One run of pipeline a -> b: interval k (1 ms each) holds 5 orders whose
// a->b latency (and total) is values[k].
testing::FixtureRun TimeRun(int run, const std::vector<double>& values) {
  testing::FixtureRun r;
  const int64_t base = RunBase(run);
  r.meta.session = absl::StrCat("time", run);
  r.meta.host = "testhost";
  r.meta.started_utc_ns = base;
  r.ended_utc_ns = base + static_cast<int64_t>(values.size()) * kMs;
  r.meta.tsc_hz = 1e9;
  r.meta.calibration_source = "given";
  r.meta.anchor_tsc = 1000;
  r.meta.anchor_utc_ns = base;
  r.meta.pipeline = "a,b";
  r.meta.interval_ns = kMs;
  store::ProcessRow p;
  p.process_id = 1;
  p.pid = 4000 + run;
  p.name = "app";
  p.segment = absl::StrCat("ticktrace.time", run);
  r.snapshot.processes.push_back(p);
  r.stage_order = {"a->b", "total"};
  uint64_t id = 1;
  for (size_t k = 0; k < values.size(); ++k) {
    for (int j = 0; j < 5; ++j, ++id) {
      store::OrderDetail o;
      o.order_id = id;
      o.first_utc_ns = base + static_cast<int64_t>(k) * kMs + j * 1000;
      store::StampDetail s;
      s.tag = "a";
      s.process_id = 1;
      s.tid = 1;
      s.cpu = 0;
      s.tsc = 1000 + static_cast<uint64_t>(o.first_utc_ns - base);
      s.utc_ns = o.first_utc_ns;
      o.stamps.push_back(s);
      s.tag = "b";
      s.tsc += static_cast<uint64_t>(values[k]);
      s.utc_ns += static_cast<int64_t>(values[k]);
      o.stamps.push_back(s);
      o.first_tsc = o.stamps[0].tsc;
      o.first_tsc_utc_ns = o.first_utc_ns;
      for (const char* stage : {"a->b", "total"}) {
        store::SampleDetail d;
        d.stage = stage;
        d.start_utc_ns = o.first_utc_ns;
        d.latency_ns = values[k];
        d.process_begin = d.process_end = 1;
        d.cpu_begin = d.cpu_end = 0;
        o.samples.push_back(d);
      }
      o.total_ns = values[k];
      o.complete = true;
      r.orders.push_back(std::move(o));
    }
  }
  return r;
}

class TimeAxisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("time.db");
    // Run 1: intervals 982, 1002, 1022, 1002 ns; run 2: 1084, 1100, 1116, 1100 ns.
    testing::WriteStore(db_, {TimeRun(1, {982, 1002, 1022, 1002}),
                              TimeRun(2, {1084, 1100, 1116, 1100})});
  }
  std::string Utc(int run, int64_t ms) { return FormatUtcNs(RunBase(run) + ms * kMs); }

  testing::TempDir dir_;
  std::string db_;
};

// ---- intervals --------------------------------------------------------------

TEST_F(TimeAxisTest, IntervalsJsonHasOneRowPerStagePerInterval) {
  const nlohmann::json j = Json(View({"intervals", "--db", db_, "--run", "1", "--json"}));
  EXPECT_EQ(j["run"], 1);
  EXPECT_EQ(j["interval_ns"], kMs);
  EXPECT_EQ(j["bucket_ns"], kMs);
  ASSERT_EQ(j["intervals"].size(), 8u);  // 2 stages x 4 intervals
  const double p50[] = {982, 1002, 1022, 1002};
  for (int k = 0; k < 4; ++k) {
    const nlohmann::json& row = j["intervals"][k];
    EXPECT_EQ(row["stage"], "a->b");
    EXPECT_EQ(row["start_utc_ns"], RunBase(1) + k * kMs);
    EXPECT_EQ(row["count"], 5);
    EXPECT_EQ(row["p50_ns"], p50[k]);
    EXPECT_EQ(row["max_ns"], p50[k]);
    EXPECT_TRUE(row["p99_ns"].is_null()) << "5 samples are too few for a p99";
    EXPECT_EQ(row["orders"], 5);
    EXPECT_EQ(row["orders_kept"], 5);
  }
  EXPECT_EQ(j["intervals"][4]["stage"], "total");
}

TEST_F(TimeAxisTest, IntervalsEveryMergesBuckets) {
  const nlohmann::json j =
      Json(View({"intervals", "--db", db_, "--run", "1", "--stage", "a->b", "--every", "2ms",
                "--json"}));
  ASSERT_EQ(j["intervals"].size(), 2u);
  // Bucket 0: 5 x 982, 5 x 1002: p50 is rank 5 = 982, max 1002.
  EXPECT_EQ(j["intervals"][0]["count"], 10);
  EXPECT_EQ(j["intervals"][0]["p50_ns"], 982.0);
  EXPECT_EQ(j["intervals"][0]["max_ns"], 1002.0);
  // Bucket 2 ms: 5 x 1022, 5 x 1002: rank 5 = 1002, max 1022.
  EXPECT_EQ(j["intervals"][1]["start_utc_ns"], RunBase(1) + 2 * kMs);
  EXPECT_EQ(j["intervals"][1]["p50_ns"], 1002.0);
  EXPECT_EQ(j["intervals"][1]["max_ns"], 1022.0);
}

TEST_F(TimeAxisTest, IntervalsWindowAndText) {
  const Cli r = View({"intervals", "--db", db_, "--run", "1", "--stage", "a->b", "--since",
                     Utc(1, 2), "--until", Utc(1, 2)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("intervals of 1.00 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage a->b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(Utc(1, 2)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(Utc(1, 1)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(Utc(1, 3)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.02 \xc2\xb5s"), std::string::npos) << r.out;  // 1022 ns
}

TEST_F(TimeAxisTest, IntervalsRejectsBadEvery) {
  for (const char* every : {"1.5ms", "0s", "-1m", "soon"}) {
    const Cli r = View({"intervals", "--db", db_, "--every", every});
    EXPECT_EQ(r.exit_code, 2) << every;
    EXPECT_NE(r.err.find("--every"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// ---- the noise test, by hand -------------------------------------------------

TEST(JudgeChangeTest, BeyondPrecisionAndNoise) {
  // sd^2 = 8/3 on both sides (deviations -2, 2, -2... : 0, 2, -2, 0);
  // noise = 2 * sqrt(8/3/4 + 8/3/4) = 2 * sqrt(4/3) = 2.3094.
  const ChangeVerdict v = JudgeChange(100, 110, {100, 102, 98, 100}, {110, 112, 108, 110});
  ASSERT_TRUE(v.change_pct.has_value());
  EXPECT_DOUBLE_EQ(*v.change_pct, 10.0);
  EXPECT_DOUBLE_EQ(*v.precision_ns, 210.0 / 256);
  EXPECT_NEAR(*v.noise_ns, 2 * std::sqrt(4.0 / 3), 1e-12);
  EXPECT_TRUE(*v.beyond_precision);
  EXPECT_TRUE(*v.beyond_noise);
  EXPECT_TRUE(v.significant);
}

TEST(JudgeChangeTest, WithinNoise) {
  // Intervals 50, 150, 50, 150: sd^2 = 4 * 2500 / 3; noise = 2 * sqrt(2 * 10000/3 / 4) = 81.65.
  const ChangeVerdict v = JudgeChange(100, 110, {50, 150, 50, 150}, {60, 160, 60, 160});
  EXPECT_NEAR(*v.noise_ns, 2 * std::sqrt(2 * 10000.0 / 3 / 4), 1e-9);
  EXPECT_TRUE(*v.beyond_precision);
  EXPECT_FALSE(*v.beyond_noise);
  EXPECT_FALSE(v.significant);
}

TEST(JudgeChangeTest, WithinPrecision) {
  // Steady intervals (no noise), but 3 ns on 1000 is under (1000 + 1003) / 256 = 7.82 ns.
  const ChangeVerdict v = JudgeChange(1000, 1003, {1000, 1000}, {1003, 1003});
  EXPECT_DOUBLE_EQ(*v.noise_ns, 0);
  EXPECT_TRUE(*v.beyond_noise);
  EXPECT_FALSE(*v.beyond_precision);
  EXPECT_FALSE(v.significant);
}

TEST(JudgeChangeTest, UnknownNoiseAndMissingSides) {
  const ChangeVerdict one = JudgeChange(100, 200, {100}, {200, 200});
  EXPECT_FALSE(one.noise_ns.has_value());
  EXPECT_FALSE(one.beyond_noise.has_value());
  EXPECT_TRUE(*one.beyond_precision);
  EXPECT_FALSE(one.significant) << "unknown noise is not significant";
  const ChangeVerdict missing = JudgeChange(std::nullopt, 100, {}, {100, 100});
  EXPECT_FALSE(missing.change_pct.has_value());
  EXPECT_FALSE(missing.beyond_precision.has_value());
  EXPECT_FALSE(missing.significant);
  const ChangeVerdict zero = JudgeChange(0, 5, {0, 0}, {5, 5});
  EXPECT_FALSE(zero.change_pct.has_value()) << "no % of zero";
  EXPECT_TRUE(zero.significant);
}

// ---- diff ----------------------------------------------------------------------

TEST_F(TimeAxisTest, DiffTwoRunsIsSignificant) {
  const nlohmann::json j =
      Json(View({"diff", "--db", db_, "--run", "2", "--against", "1", "--json"}));
  EXPECT_EQ(j["before"]["run"], 1);
  EXPECT_EQ(j["after"]["run"], 2);
  EXPECT_EQ(j["before"]["buckets"], 4);
  ASSERT_EQ(j["stages"].size(), 2u);
  const nlohmann::json& s = j["stages"][0];
  EXPECT_EQ(s["stage"], "a->b");
  EXPECT_EQ(s["count_before"], 20);
  EXPECT_EQ(s["count_after"], 20);
  // Run 1: 5 x 982, 10 x 1002, 5 x 1022: p50 = rank 10 = 1002. Run 2: 1100.
  EXPECT_EQ(s["p50"]["before_ns"], 1002.0);
  EXPECT_EQ(s["p50"]["after_ns"], 1100.0);
  EXPECT_NEAR(s["p50"]["change_pct"].get<double>(), 100.0 * 98 / 1002, 1e-9);
  EXPECT_NEAR(s["p50"]["precision_ns"].get<double>(), 2102.0 / 256, 1e-9);
  // Interval p50s: run 1 sd^2 = 800/3, run 2 sd^2 = 512/3, 4 intervals each.
  EXPECT_NEAR(s["p50"]["noise_ns"].get<double>(), 2 * std::sqrt((800.0 / 3 + 512.0 / 3) / 4),
              1e-9);
  EXPECT_EQ(s["p50"]["significant"], true);
  EXPECT_TRUE(s["p99"]["before_ns"].is_null()) << "20 samples: no p99";
  EXPECT_EQ(s["p99"]["significant"], false);
  EXPECT_EQ(j["stages"][1]["stage"], "total");

  const Cli text = View({"diff", "--db", db_, "--run", "2", "--against", "1"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("+9.8% *"), std::string::npos) << text.out;
}

TEST_F(TimeAxisTest, DiffTwoWindowsWithinNoise) {
  // Before: intervals 0-1 of run 1 (5 x 982, 5 x 1002: p50 982); after:
  // intervals 2-3 (5 x 1002, 5 x 1022: p50 1002). 20 ns is beyond the
  // precision (1984 / 256 = 7.75 ns) but not the noise: each side's interval
  // p50s differ by 20 (sd^2 = 200), 2 * sqrt(200/2 + 200/2) = 28.3 ns.
  const nlohmann::json j = Json(View({"diff", "--db", db_, "--run", "1", "--stage", "a->b",
                                     "--since", Utc(1, 2), "--until", Utc(1, 3),
                                     "--against-since", Utc(1, 0), "--against-until", Utc(1, 1),
                                     "--json"}));
  ASSERT_EQ(j["stages"].size(), 1u);
  const nlohmann::json& p50 = j["stages"][0]["p50"];
  EXPECT_EQ(p50["before_ns"], 982.0);
  EXPECT_EQ(p50["after_ns"], 1002.0);
  EXPECT_EQ(p50["beyond_precision"], true);
  EXPECT_NEAR(p50["noise_ns"].get<double>(), 2 * std::sqrt(200.0), 1e-9);
  EXPECT_EQ(p50["beyond_noise"], false);
  EXPECT_EQ(p50["significant"], false);
}

TEST_F(TimeAxisTest, DiffTwoStores) {
  const std::string other = dir_.File("other.db");
  testing::WriteStore(other, {TimeRun(1, {1084, 1100, 1116, 1100})});
  // After: run 1 of this store (p50 1002); before: the other store's latest (1100).
  const nlohmann::json j =
      Json(View({"diff", "--db", db_, "--run", "1", "--against-db", other, "--json"}));
  EXPECT_EQ(j["before"]["store"], other);
  EXPECT_EQ(j["stages"][0]["p50"]["before_ns"], 1100.0);
  EXPECT_EQ(j["stages"][0]["p50"]["after_ns"], 1002.0);
  EXPECT_EQ(j["stages"][0]["p50"]["significant"], true);
}

TEST_F(TimeAxisTest, DiffRefusesToCompareARunWithItself) {
  const Cli r = View({"diff", "--db", db_, "--run", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("with itself"), std::string::npos) << r.err;
  const Cli missing = View({"diff", "--db", db_, "--against", "7"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("run 7 not found"), std::string::npos) << missing.err;
}

// ---- --since/--until on orders, export and report ---------------------------------

TEST_F(TimeAxisTest, OrdersWindowIsByFirstStampUntilInclusive) {
  // Whole run 1: the slowest total is 1022 ns (interval 2, orders 11-15; ties
  // by id: 11). Until 1 ms: interval 0 (982) and order 6, whose first stamp
  // is exactly at 1 ms (1002); orders 7-10 start 1 us later and are out.
  nlohmann::json j = Json(View({"orders", "--db", db_, "--run", "1", "--slowest", "1", "--json"}));
  ASSERT_EQ(j["orders"].size(), 1u);
  EXPECT_EQ(j["orders"][0]["order_id"], "11");
  EXPECT_EQ(j["orders"][0]["latency_ns"], 1022.0);
  j = Json(View({"orders", "--db", db_, "--run", "1", "--slowest", "2", "--until", Utc(1, 1),
                 "--json"}));
  ASSERT_EQ(j["orders"].size(), 2u);
  EXPECT_EQ(j["orders"][0]["order_id"], "6");
  EXPECT_EQ(j["orders"][0]["latency_ns"], 1002.0);
  EXPECT_EQ(j["orders"][1]["latency_ns"], 982.0);
  // Relative: +3ms after the first sample (order 1 at 0 ms): orders 16-20 (1002).
  j = Json(View({"orders", "--db", db_, "--run", "1", "--slowest", "9", "--since", "+3ms",
                 "--json"}));
  EXPECT_EQ(j["orders"].size(), 5u);
  EXPECT_EQ(j["orders"][0]["order_id"], "16");
  const Cli text = View({"orders", "--db", db_, "--run", "1", "--slowest", "1", "--since",
                         Utc(1, 2)});
  EXPECT_NE(text.out.find("since " + Utc(1, 2)), std::string::npos) << text.out;
  EXPECT_EQ(View({"orders", "--db", db_, "--slowest", "1", "--since", "noon"}).exit_code, 2);
}

TEST_F(TimeAxisTest, ExportWindowKeepsOrdersByFirstStamp) {
  // [2 ms, 3 ms]: orders 11-15 (interval 2) and 16 (first stamp at 3 ms): 6
  // orders, 2 samples each.
  const std::string csv = dir_.File("w.csv");
  const nlohmann::json j =
      Json(View({"export", "--db", db_, "--run", "1", "--format", "csv", "--since", Utc(1, 2),
                 "--until", Utc(1, 3), "--out", csv, "--json"}));
  EXPECT_EQ(j["orders"], 6);
  EXPECT_EQ(j["rows"], 12);
  EXPECT_EQ(j["format"], "csv");
  const std::string text = testing::ReadFile(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 13) << text;
  EXPECT_NE(text.find("\n1,11,a->b,"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n1,10,"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n1,17,"), std::string::npos) << text;
  // --limit applies after the window: the first 2 of those 6.
  const std::string chrome = dir_.File("w.json");
  const nlohmann::json c =
      Json(View({"export", "--db", db_, "--run", "1", "--format", "chrome", "--since", Utc(1, 2),
                 "--limit", "2", "--out", chrome, "--json"}));
  EXPECT_EQ(c["orders"], 2);
  EXPECT_EQ(View({"export", "--db", db_, "--format", "csv", "--out", "-", "--json"}).exit_code,
            2);
}

TEST_F(TimeAxisTest, ReportWindow) {
  // [2 ms, 2 ms]: only order 11 has its first stamp there: one slowest order.
  const std::string html = dir_.File("r.html");
  const nlohmann::json j =
      Json(View({"report", "--db", db_, "--run", "1", "--since", Utc(1, 2), "--until", Utc(1, 2),
                 "--out", html, "--json"}));
  EXPECT_EQ(j["run"], 1);
  EXPECT_EQ(j["slowest"], 1);
  EXPECT_EQ(j["stages"], 2);
  EXPECT_EQ(j["losses"].size(), 0u);
}

}  // namespace
}  // namespace ticktrace::view
