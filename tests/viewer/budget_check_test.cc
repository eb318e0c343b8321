// `ticktrace-view check` on the known store (store_fixture.h), run 2, whose
// intervals are 1 ms with order i alone in interval i (102 shares 50's):
//   md->strategy      10*i ns for i = 1..100, but 13 is -5 ns and flagged
//                     negative, so kept out: 99 samples, max 1000 ns, p50 at
//                     rank ceil(49.5) = 50 of 10..120,140..1000 = 510 ns;
//                     p99 needs 100 samples: not enough.
//   strategy->gateway 1000+i ns for i = 1..100, and 1200 ns (order 102, in
//                     interval 50): 101 samples, p99 at rank ceil(99.99) = 100
//                     = 1100 ns; max 1200 ns.
// The figures come from the interval histograms, within 0.4% of the sample
// values, so every limit below is further than that from its figure.

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store_fixture.h"
#include "viewer/cli/commands.h"

namespace ticktrace::view {
namespace {

struct Cli {
  int exit_code = -1;
  std::string out, err;
};

class BudgetCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteKnownStore(db_); }

  Cli Check(std::vector<std::string> args) {
    args.insert(args.begin(), {"check", "--db", db_});
    std::ostringstream out, err;
    Cli r;
    r.exit_code = RunViewer(args, out, err, /*stdout_is_tty=*/false);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  testing::TempDir dir_;
  const std::string db_ = dir_.File("known.db");
};

int64_t IntervalOf(int64_t order) { return testing::KnownStore::FirstUtcNs(order); }

TEST_F(BudgetCheckTest, BudgetsWithinTheirLimitsExitZero) {
  const Cli r = Check({"--budget", "md->strategy:p50<600ns", "--budget", "md->strategy:max<=1us",
                       "--budget", "strategy->gateway:p99<1.2us", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["run"], 2);
  EXPECT_EQ(j["breaches"], 0);
  ASSERT_EQ(j["budgets"].size(), 3u);
  const nlohmann::json& p50 = j["budgets"][0];
  EXPECT_EQ(p50["verdict"], "OK");
  EXPECT_EQ(p50["samples"], 99);
  EXPECT_NEAR(p50["measured_ns"].get<double>(), 510, 510 * 0.004);
  // One sample per interval: no interval has the two a median needs.
  EXPECT_TRUE(p50["worst_intervals"].empty());
  const nlohmann::json& max = j["budgets"][1];
  EXPECT_EQ(max["verdict"], "OK");  // 1000 ns, and <= lets the limit pass
  EXPECT_EQ(max["measured_ns"], 1000.0);
  ASSERT_EQ(max["worst_intervals"].size(), 3u);
  EXPECT_EQ(max["worst_intervals"][0]["start_utc_ns"], IntervalOf(100));
  EXPECT_EQ(max["worst_intervals"][0]["measured_ns"], 1000.0);
  EXPECT_EQ(max["worst_intervals"][1]["start_utc_ns"], IntervalOf(99));
  EXPECT_EQ(max["worst_intervals"][2]["start_utc_ns"], IntervalOf(98));
  const nlohmann::json& p99 = j["budgets"][2];
  EXPECT_EQ(p99["verdict"], "OK");
  EXPECT_EQ(p99["samples"], 101);
  EXPECT_NEAR(p99["measured_ns"].get<double>(), 1100, 1100 * 0.004);
}

TEST_F(BudgetCheckTest, ABreachExitsOneAndNamesTheWorstIntervals) {
  const Cli r = Check({"--budget", "md->strategy:max<1us", "--budget", "md->strategy:p50<500ns",
                       "--budget", "strategy->gateway:max<1.1us", "--worst", "2"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_EQ(r.err, "");
  // The text: a row per budget, the tally last.
  EXPECT_NE(r.out.find("md->strategy:max<1us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BREACH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 budgets: 3 breaches, 0 OK, 0 not enough samples\n"), std::string::npos)
      << r.out;
  const Cli j = Check({"--budget", "strategy->gateway:max<1.1us", "--worst", "2", "--json"});
  ASSERT_EQ(j.exit_code, 1) << j.err;
  const nlohmann::json b = nlohmann::json::parse(j.out)["budgets"][0];
  EXPECT_EQ(b["verdict"], "BREACH");
  EXPECT_EQ(b["measured_ns"], 1200.0);
  ASSERT_EQ(b["worst_intervals"].size(), 2u);
  EXPECT_EQ(b["worst_intervals"][0]["start_utc_ns"], IntervalOf(50));  // 1050 and 102's 1200
  EXPECT_EQ(b["worst_intervals"][0]["samples"], 2);
  EXPECT_EQ(b["worst_intervals"][1]["start_utc_ns"], IntervalOf(100));
}

TEST_F(BudgetCheckTest, TooFewSamplesIsNeverOkAndABreachOnlyWhenAsked) {
  Cli r = Check({"--budget", "md->strategy:p99<1ms", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["not_enough_samples"], 1);
  EXPECT_EQ(j["budgets"][0]["verdict"], "not enough samples");  // 99 < 100
  EXPECT_EQ(j["budgets"][0]["samples_needed"], 100);

  r = Check({"--budget", "strategy->gateway:p99<1.2us", "--min-samples", "200", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["budgets"][0]["verdict"], "BREACH");
  EXPECT_EQ(j["budgets"][0]["too_few"], "101 samples, fewer than --min-samples 200");
}

TEST_F(BudgetCheckTest, BudgetsFromAFileAndTheFlags) {
  const std::string file = dir_.File("budgets.txt");
  {
    std::ofstream f(file);
    f << "# the desk's budgets\nmd->strategy:max<=1us\n\nstrategy->gateway:p99<1.2us  # gw\n";
  }
  const Cli r = Check({"--budgets", file, "--budget", "md->strategy:p50<600ns", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["budgets"].size(), 3u);
  EXPECT_EQ(j["budgets"][0]["budget"], "md->strategy:max<=1us");
  EXPECT_EQ(j["budgets"][2]["budget"], "md->strategy:p50<600ns");
}

TEST_F(BudgetCheckTest, BadBudgetsAreUsageErrorsInOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  } cases[] = {
      {{"--budget", "mdd->strategy:p99<1us"},
       "ticktrace-view: budget 'mdd->strategy:p99<1us': run 2 has no stage 'mdd->strategy' (its "
       "stages: md->strategy, risk, strategy->gateway, total) (see ticktrace-view check --help)\n"},
      {{"--budget", "md->strategy:p99<20"},
       "ticktrace-view: --budget 'md->strategy:p99<20': limit: expected a positive duration like "
       "500ms, 30s, 10m, 8h or 7d (units ns, us, ms, s, m, h, d), got '20' (see ticktrace-view "
       "check --help)\n"},
      {{"--budget", "total:max<1ms", "--budget", "total:max<2ms"},
       "ticktrace-view: budget 'total:max<2ms' budgets total:max again (after 'total:max<1ms'); "
       "give one limit (see ticktrace-view check --help)\n"},
      {{}, "ticktrace-view: no budget: give --budget STAGE:STAT<LIMIT or --budgets FILE (see "
           "ticktrace-view check --help)\n"},
  };
  for (const Case& c : cases) {
    const Cli r = Check(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.out, "");
  }
  const Cli missing = Check({"--budgets", dir_.File("none.txt")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "ticktrace-view: " + dir_.File("none.txt") + ": cannot read the budget file\n");
}

}  // namespace
}  // namespace ticktrace::view
