// BudgetJudge (collector/sinks/budget_judge.h): which intervals close when,
// what is judged on what, the counters, the rate-limited lines, a resume.
// Every expected figure is worked out by hand in the comment above it.
#include "collector/sinks/budget_judge.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/budget.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;  // an interval start

Budget MustParse(const char* text) {
  absl::StatusOr<Budget> b = ParseBudget("test", text);
  EXPECT_TRUE(b.ok()) << b.status();
  return *b;
}

// A delta of `stage` in the interval at `start` holding `fast` values of 1 us
// and `slow` values of 100 us.
store::IntervalDelta Delta(const char* stage, int64_t start, int fast, int slow) {
  store::IntervalDelta d;
  d.stage = stage;
  d.start_utc_ns = start;
  for (int i = 0; i < fast; ++i) d.histogram.Add(1000);
  for (int i = 0; i < slow; ++i) d.histogram.Add(100'000);
  d.samples_all = static_cast<uint64_t>(fast + slow);
  return d;
}

BudgetJudgeOptions Options(std::vector<std::string>* lines) {
  BudgetJudgeOptions o;
  o.budgets = {MustParse("decide:p99<20us"), MustParse("decide:p50<20us"),
               MustParse("total:max<=1ms")};
  o.interval_ns = kSecond;
  o.settle_ns = 3 * kSecond;
  o.say = [lines](const std::string& line) { lines->push_back(line); };
  return o;
}

std::map<std::string, int64_t> Counters(const BudgetJudge& j) {
  std::vector<std::pair<std::string, int64_t>> c;
  j.PutCounters(&c);
  return std::map<std::string, int64_t>(c.begin(), c.end());
}

// An interval [s, s + 1 s) closes once the newest first stamp is 3 s (the
// settle) past its end: at s + 4 s, not at s + 4 s - 1 ns.
TEST(BudgetJudgeTest, AnIntervalClosesOnceTheSettleIsPastItsEnd) {
  std::vector<std::string> lines;
  BudgetJudge j(Options(&lines));
  // 98 fast + 2 slow: p99 is rank 99 of 100, a slow one (100 us > 20 us);
  // p50 is rank 50, a fast one (1 us).
  j.Add({Delta("decide", kT0, 98, 2)});
  std::vector<store::BudgetBreachRow> out;
  j.Close(kT0 + 4 * kSecond - 1, false, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(j.judged_through_utc_ns(), INT64_MIN);
  j.Close(kT0 + 4 * kSecond, false, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].budget, "decide:p99<20us");
  EXPECT_EQ(out[0].stage, "decide");
  EXPECT_EQ(out[0].stat, "p99");
  EXPECT_EQ(out[0].interval_start_utc_ns, kT0);
  EXPECT_EQ(out[0].limit_ns, 20'000);
  EXPECT_EQ(out[0].samples, 100);
  // The histogram's bucket of 100 us, within 1/256.
  EXPECT_NEAR(out[0].measured_ns, 100'000, 100'000 / 256.0);
  EXPECT_EQ(j.judged_through_utc_ns(), kT0);
  EXPECT_EQ(j.counts()[0].judged, 1u);
  EXPECT_EQ(j.counts()[0].breaches, 1u);
  EXPECT_EQ(j.counts()[1].judged, 1u);  // p50 within its budget
  EXPECT_EQ(j.counts()[1].breaches, 0u);
  EXPECT_EQ(j.counts()[2].judged, 0u);  // no sample of total
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("budget decide:p99<20us broken: p99 "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("over 100 samples"), std::string::npos) << lines[0];
}

// p99 needs 100 samples: an interval of 99 is counted unjudged, never OK or
// over; max needs one.
TEST(BudgetJudgeTest, TooFewSamplesForTheRankAreUnjudged) {
  std::vector<std::string> lines;
  BudgetJudge j(Options(&lines));
  j.Add({Delta("decide", kT0, 97, 2), Delta("total", kT0, 1, 0)});
  std::vector<store::BudgetBreachRow> out;
  j.Close(INT64_MIN, /*all=*/true, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(j.counts()[0].unjudged, 1u);
  EXPECT_EQ(j.counts()[0].judged, 0u);
  EXPECT_EQ(j.counts()[1].judged, 1u);  // p50 needs 2
  EXPECT_EQ(j.counts()[2].judged, 1u);  // max of one 1 us sample <= 1 ms
  EXPECT_EQ(j.counts()[2].breaches, 0u);
  const auto c = Counters(j);
  EXPECT_EQ(c.at("budget_unjudged:decide:p99<20us"), 1);
  EXPECT_EQ(c.at("budget_breaches"), 0);
}

// Deltas of one interval from several transactions add up before it is
// judged: 60 fast then 38 fast + 2 slow are 98 + 2 (p99 over, as above);
// either alone has too few samples or no slow one.
TEST(BudgetJudgeTest, DeltasOfOneIntervalAddUp) {
  std::vector<std::string> lines;
  BudgetJudge j(Options(&lines));
  j.Add({Delta("decide", kT0, 60, 0)});
  j.Add({Delta("decide", kT0, 38, 2), Delta("other", kT0, 5, 5)});
  std::vector<store::BudgetBreachRow> out;
  j.Close(kT0 + 10 * kSecond, false, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].samples, 100);
  // A delta of an interval judged already (an order later than the settle)
  // is left out: nothing more is judged for kT0.
  j.Add({Delta("decide", kT0, 0, 100)});
  j.Close(kT0 + 20 * kSecond, true, &out);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(j.counts()[0].judged, 1u);
}

// Breaches of one budget in intervals 0, 1, ..., 70 s: a line for 0 s, then
// none until 60 s (60 s after the last said), which says the 59 not said
// (1 .. 59 s); 61 .. 70 s are again unsaid. Every breach is a row.
TEST(BudgetJudgeTest, ABudgetIsSaidAtMostOncePerMinuteOfRunTime) {
  std::vector<std::string> lines;
  BudgetJudge j(Options(&lines));
  std::vector<store::BudgetBreachRow> out;
  for (int s = 0; s <= 70; ++s) {
    j.Add({Delta("decide", kT0 + s * kSecond, 98, 2)});
    j.Close(kT0 + (s + 4) * kSecond, false, &out);
  }
  EXPECT_EQ(out.size(), 71u);
  EXPECT_EQ(j.counts()[0].breaches, 71u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].find("more breach"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("59 more breaches of it since the last such line"), std::string::npos)
      << lines[1];
  EXPECT_EQ(Counters(j).at("budget_breaches"), 71);
}

// A resume takes the counts and the mark from the stored counters, and the
// open interval from the store (Seed): the interval at kT0 + 1 s holds 60
// fast samples in the store and 38 fast + 2 slow after the restart, so it is
// judged on 100 samples (over); kT0, judged before the restart, is not again.
TEST(BudgetJudgeTest, AResumeContinuesTheCountsAndJudgesWholeIntervals) {
  std::vector<std::string> lines;
  BudgetJudge before(Options(&lines));
  before.Add({Delta("decide", kT0, 98, 2)});
  std::vector<store::BudgetBreachRow> out;
  before.Close(kT0 + 4 * kSecond, false, &out);
  ASSERT_EQ(out.size(), 1u);

  BudgetJudge after(Options(&lines));
  after.Resume(Counters(before));
  EXPECT_EQ(after.judged_through_utc_ns(), kT0);
  EXPECT_EQ(after.counts()[0].breaches, 1u);
  EXPECT_TRUE(after.Budgeted("decide"));
  EXPECT_FALSE(after.Budgeted("other"));
  store::Histogram stored_kt0, stored_kt1;
  for (int i = 0; i < 100; ++i) stored_kt0.Add(100'000);
  for (int i = 0; i < 60; ++i) stored_kt1.Add(1000);
  after.Seed("decide", kT0, stored_kt0);  // judged already: ignored
  after.Seed("decide", kT0 + kSecond, stored_kt1);
  after.Add({Delta("decide", kT0 + kSecond, 38, 2)});
  out.clear();
  after.Close(INT64_MIN, true, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].interval_start_utc_ns, kT0 + kSecond);
  EXPECT_EQ(out[0].samples, 100);
  EXPECT_EQ(after.counts()[0].breaches, 2u);
  EXPECT_EQ(after.counts()[0].judged, 2u);
  EXPECT_EQ(Counters(after).at("budget_judged_through_utc_ns"), kT0 + kSecond);
}

}  // namespace
}  // namespace ticktrace::collect
