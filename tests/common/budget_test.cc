// common/budget.h: the budget syntax, the samples a quantile needs, the
// verdicts, and the budget file. Expected values from the syntax's rules.

#include "common/budget.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace {
namespace {

TEST(BudgetTest, ParsesTheThreeFormsOfTheSyntax) {
  absl::StatusOr<Budget> b = ParseBudget("--budget", "decide:p99<20us");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->stage, "decide");
  EXPECT_EQ(b->stat, "p99");
  ASSERT_TRUE(b->quantile.has_value());
  EXPECT_DOUBLE_EQ(*b->quantile, 0.99);
  EXPECT_EQ(b->min_samples, 100);
  EXPECT_EQ(b->limit_ns, 20'000);
  EXPECT_FALSE(b->limit_passes);
  EXPECT_EQ(b->text, "decide:p99<20us");

  b = ParseBudget("--budget", " total:p99.9<150us ");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->stage, "total");
  EXPECT_DOUBLE_EQ(*b->quantile, 0.999);
  EXPECT_EQ(b->min_samples, 1000);  // 100 / (100 - 99.9)
  EXPECT_EQ(b->limit_ns, 150'000);
  EXPECT_EQ(b->text, "total:p99.9<150us");

  // A stage named by its two tags; max; `<=`.
  b = ParseBudget("--budget", "gw_in->gw_sent:max<=1ms");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->stage, "gw_in->gw_sent");
  EXPECT_EQ(b->stat, "max");
  EXPECT_FALSE(b->quantile.has_value());
  EXPECT_EQ(b->min_samples, 1);
  EXPECT_EQ(b->limit_ns, 1'000'000);
  EXPECT_TRUE(b->limit_passes);
}

TEST(BudgetTest, SamplesAQuantileNeeds) {
  // ceil(100 / (100 - Q)).
  struct Case {
    const char* text;
    int64_t min_samples;
  } cases[] = {{"s:p50<1us", 2},    {"s:p90<1us", 10},      {"s:p99<1us", 100},
               {"s:p99.9<1us", 1000}, {"s:p99.99<1us", 10000}, {"s:p75<1us", 4},
               {"s:p95<1us", 20},   {"s:p1<1us", 2}};  // 100/99 = 1.01 -> 2
  for (const Case& c : cases) {
    absl::StatusOr<Budget> b = ParseBudget("--budget", c.text);
    ASSERT_TRUE(b.ok()) << c.text << ": " << b.status();
    EXPECT_EQ(b->min_samples, c.min_samples) << c.text;
  }
  // The quantile is the decimal written, not Q / 100 rounded twice.
  EXPECT_EQ(*ParseBudget("--budget", "s:p99.99<1us")->quantile, 0.9999);
  EXPECT_EQ(*ParseBudget("--budget", "s:p5<1us")->quantile, 0.05);
  EXPECT_EQ(*ParseBudget("--budget", "s:p07.5<1us")->quantile, 0.075);
  EXPECT_EQ(*ParseBudget("--budget", "s:p.5<1us")->quantile, 0.005);
}

TEST(BudgetTest, StageNamesMayHoldColons) {
  absl::StatusOr<Budget> b = ParseBudget("--budget", "ns:gw:p50<2ms");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->stage, "ns:gw");
  EXPECT_EQ(b->stat, "p50");
  EXPECT_EQ(b->limit_ns, 2'000'000);
}

TEST(BudgetTest, BadBudgetsAreOneLineNamingTheSource) {
  const char* bad[] = {"decide",          "decide:p99",     ":p99<1us",     "decide:p100<1us",
                       "decide:p0<1us",   "decide:q99<1us", "decide:p<1us", "decide:p9x<1us",
                       "decide:p99<20",   "decide:p99<0us", "decide:p99<",  "decide:p99>1us",
                       "decide:mean<1us", "decide:p-5<1us"};
  for (const char* text : bad) {
    absl::StatusOr<Budget> b = ParseBudget("--budget", text);
    ASSERT_FALSE(b.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(b.status())) << text;
    const std::string message(b.status().message());
    EXPECT_EQ(message.rfind(absl::StrCat("--budget '", text, "': "), 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(BudgetTest, VerdictsAtAndAroundTheLimit) {
  const Budget strict = *ParseBudget("--budget", "decide:p99<20us");
  EXPECT_EQ(JudgeBudget(strict, 19'999.0, 100), BudgetVerdict::kOk);
  EXPECT_EQ(JudgeBudget(strict, 20'000.0, 100), BudgetVerdict::kBreach);  // not below 20 us
  EXPECT_EQ(JudgeBudget(strict, 25'000.0, 5000), BudgetVerdict::kBreach);
  // 99 samples: the 99th percentile's rank is the largest sample.
  EXPECT_EQ(JudgeBudget(strict, 1'000.0, 99), BudgetVerdict::kNotEnoughSamples);
  EXPECT_EQ(JudgeBudget(strict, std::nullopt, 0), BudgetVerdict::kNotEnoughSamples);

  const Budget inclusive = *ParseBudget("--budget", "decide:max<=20us");
  EXPECT_EQ(JudgeBudget(inclusive, 20'000.0, 1), BudgetVerdict::kOk);
  EXPECT_EQ(JudgeBudget(inclusive, 20'001.0, 1), BudgetVerdict::kBreach);
  EXPECT_EQ(JudgeBudget(inclusive, std::nullopt, 0), BudgetVerdict::kNotEnoughSamples);

  EXPECT_EQ(BudgetVerdictName(BudgetVerdict::kOk), "OK");
  EXPECT_EQ(BudgetVerdictName(BudgetVerdict::kBreach), "BREACH");
  EXPECT_EQ(BudgetVerdictName(BudgetVerdict::kNotEnoughSamples), "not enough samples");
}

TEST(BudgetTest, FileLinesCommentsAndErrorsByLine) {
  absl::StatusOr<std::vector<Budget>> budgets = ParseBudgetLines(
      "budgets.txt",
      "# the desk's budgets\n"
      "decide:p99<20us   # the strategy\n"
      "\n"
      "   \t\n"
      "total:p99.9<150us\n");
  ASSERT_TRUE(budgets.ok()) << budgets.status();
  ASSERT_EQ(budgets->size(), 2u);
  EXPECT_EQ((*budgets)[0].text, "decide:p99<20us");
  EXPECT_EQ((*budgets)[1].stage, "total");

  budgets = ParseBudgetLines("budgets.txt", "decide:p99<20us\n\ndecide:p99<\n");
  ASSERT_FALSE(budgets.ok());
  EXPECT_EQ(std::string(budgets.status().message()).rfind("budgets.txt:3 'decide:p99<': ", 0), 0u)
      << budgets.status();

  // The same stage and statistic twice: which limit holds is not guessed.
  budgets = ParseBudgetLines("budgets.txt", "decide:p99<20us\ndecide:p99<=30us\n");
  ASSERT_FALSE(budgets.ok());
  EXPECT_EQ(budgets.status().message(),
            "budgets.txt:2: budget 'decide:p99<=30us' budgets decide:p99 again (after "
            "'decide:p99<20us'); give one limit");
  // Another statistic of the same stage is another budget.
  budgets = ParseBudgetLines("budgets.txt", "decide:p99<20us\ndecide:max<1ms\n");
  ASSERT_TRUE(budgets.ok()) << budgets.status();
  EXPECT_EQ(budgets->size(), 2u);
}

TEST(BudgetTest, ReadsAFileAndSaysWhenItCannot) {
  char path[] = "/tmp/ticktrace_budget_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string contents = "gw_in->gw_sent:max<1ms\n";
  ASSERT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  close(fd);
  absl::StatusOr<std::vector<Budget>> budgets = ReadBudgetFile(path);
  unlink(path);
  ASSERT_TRUE(budgets.ok()) << budgets.status();
  ASSERT_EQ(budgets->size(), 1u);
  EXPECT_EQ((*budgets)[0].limit_ns, 1'000'000);

  budgets = ReadBudgetFile(path);  // removed
  ASSERT_FALSE(budgets.ok());
  EXPECT_TRUE(absl::IsNotFound(budgets.status()));
  EXPECT_EQ(budgets.status().message(), absl::StrCat(path, ": cannot read the budget file"));
}

}  // namespace
}  // namespace ticktrace
