// Units, time syntax, argument parsing and the percentile distribution.
#include <cmath>

#include "gtest/gtest.h"
#include "viewer/cli/args.h"
#include "viewer/format/format_units.h"
#include "viewer/views/percentile_report.h"
#include "viewer/views/stats.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace::view {
namespace {

TEST(FormatTest, DurationUnitsPerValue) {
  EXPECT_EQ(FormatDurationNs(0.0), "0.00 ns");
  EXPECT_EQ(FormatDurationNs(5.0), "5.00 ns");
  EXPECT_EQ(FormatDurationNs(83.33), "83.3 ns");
  EXPECT_EQ(FormatDurationNs(999.0), "999 ns");
  EXPECT_EQ(FormatDurationNs(999.6), "1.00 µs");
  EXPECT_EQ(FormatDurationNs(1234.0), "1.23 µs");
  EXPECT_EQ(FormatDurationNs(301200.0), "301 µs");
  EXPECT_EQ(FormatDurationNs(12.0e6), "12.0 ms");
  EXPECT_EQ(FormatDurationNs(2.5e9), "2.50 s");
  EXPECT_EQ(FormatDurationNs(-5.0), "-5.00 ns");
  EXPECT_EQ(FormatDurationNs(std::optional<double>()), "-");
}

TEST(FormatTest, UtcAndFlags) {
  EXPECT_EQ(FormatUtcNs(1'796'025'600'123'456'789), "2026-11-30T08:00:00.123456789Z");
  EXPECT_EQ(FormatOrderId(42), "42");
  EXPECT_EQ(FormatOrderId(-1), "18446744073709551615");
  EXPECT_EQ(FormatOrderId(INT64_MIN), "9223372036854775808");
  EXPECT_EQ(FlagLetters(0), "");
  EXPECT_EQ(FlagLetters(7), "MNX");
  EXPECT_EQ(FlagWords(6), "negative,cross_core");
  // store.md's bit 8: saturated.
  EXPECT_EQ(FlagLetters(15), "MNXS");
  EXPECT_EQ(FlagWords(8), "saturated");
  // store.md's bit 256: external; with skew (16), as a stage from a kernel
  // timestamp a little below zero.
  EXPECT_EQ(FlagLetters(256 | 16), "KE");
  EXPECT_EQ(FlagWords(256 | 16), "skew,external");
}

TEST(TimeArgTest, Rfc3339) {
  auto t = ParseTimeArg("--since", "2026-11-30T08:00:00Z");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->anchor, TimeArg::Anchor::kAbsolute);
  EXPECT_EQ(t->ns, 1'796'025'600'000'000'000);
  auto frac = ParseTimeArg("--since", "2026-11-30T09:00:00.5+01:00");
  ASSERT_TRUE(frac.ok()) << frac.status();
  EXPECT_EQ(frac->ns, 1'796'025'600'500'000'000);
}

TEST(TimeArgTest, Relative) {
  auto end = ParseTimeArg("--since", "-5m");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->anchor, TimeArg::Anchor::kRunEnd);
  EXPECT_EQ(ResolveTimeArg(*end, 1000, 600'000'000'000), 300'000'000'000);
  auto start = ParseTimeArg("--until", "+1h30m");
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(start->anchor, TimeArg::Anchor::kRunStart);
  EXPECT_EQ(ResolveTimeArg(*start, 10, 0), 10 + 5'400'000'000'000);
  auto ms = ParseTimeArg("--since", "-250ms");
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->ns, -250'000'000);
}

TEST(TimeArgTest, BadTimes) {
  for (const char* bad : {"", "yesterday", "2026-13-01T00:00:00Z", "2026-11-30", "-5", "--5m",
                          "-5parsecs", "+", "12:00"}) {
    auto t = ParseTimeArg("--since", bad);
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << bad;
    EXPECT_NE(std::string(t.status().message()).find("--since: bad time"), std::string::npos);
  }
}

TEST(StatsTest, NearestRank) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRankPercentile(v, 0), 1);
  EXPECT_EQ(NearestRankPercentile(v, 50), 5);
  EXPECT_EQ(NearestRankPercentile(v, 51), 6);
  EXPECT_EQ(NearestRankPercentile(v, 90), 9);
  EXPECT_EQ(NearestRankPercentile(v, 99.9), 10);
  std::vector<double> thousand;
  for (int i = 1; i <= 1000; ++i) thousand.push_back(i);
  EXPECT_EQ(NearestRankPercentile(thousand, 99.9), 999);
  EXPECT_EQ(NearestRankPercentile(thousand, 99), 990);
  std::vector<double> unsorted = {3, 1, 2};
  const LatencyStats s = ComputeLatencyStats(unsorted);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.min_ns, 1);
  EXPECT_EQ(s.p50_ns, 2);
  EXPECT_EQ(s.mean_ns, 2);
  std::vector<double> empty;
  EXPECT_FALSE(ComputeLatencyStats(empty).p50_ns.has_value());
}

TEST(PercentileReportTest, HdrHistogramLevelsAndCounts) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i * 1000.0);  // 1..1000 µs
  const std::vector<PercentileLine> lines = PercentileDistribution(v, 5);
  ASSERT_GE(lines.size(), 10u);
  // HdrHistogram's levels with 5 ticks per half distance.
  const double levels[] = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.775};
  for (size_t i = 0; i < std::size(levels); ++i) {
    EXPECT_NEAR(lines[i].percentile, levels[i], 1e-12) << i;
  }
  EXPECT_EQ(lines[0].value_ns, 1000.0);
  EXPECT_EQ(lines[0].total_count, 1);
  EXPECT_EQ(lines[5].value_ns, 500'000.0);
  EXPECT_EQ(lines[5].total_count, 500);
  EXPECT_EQ(lines.back().percentile, 1.0);
  EXPECT_EQ(lines.back().total_count, 1000);
  EXPECT_EQ(lines.back().value_ns, 1'000'000.0);
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_GE(lines[i].value_ns, lines[i - 1].value_ns);
    EXPECT_GE(lines[i].total_count, lines[i - 1].total_count);
    EXPECT_GT(lines[i].percentile, lines[i - 1].percentile);
  }

  const std::string text = RenderPercentileDistribution(v, ValueUnit::kMicroseconds, "x");
  EXPECT_EQ(text.rfind("       Value     Percentile TotalCount 1/(1-Percentile)\n\n", 0), 0u);
  EXPECT_NE(text.find("     500.000 0.500000000000        500           2.00\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("    1000.000 1.000000000000       1000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#[Max     =     1000.000, Total count    =         1000]"),
            std::string::npos) << text;
}

TEST(ArgsTest, ParsesFlagsValuesAndPositionals) {
  CommandSpec spec;
  spec.name = "order";
  spec.flags = {{"db", "PATH", "", true}, {"run", "N", ""}, {"json", "", ""}};
  spec.positional_name = "ID";
  auto a = ParseArgs(spec, {"--db", "x.db", "--run=3", "--json", "42"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Value("db"), "x.db");
  EXPECT_EQ(**a->IntValue("run", 0), 3);
  EXPECT_TRUE(a->Has("json"));
  EXPECT_EQ(a->positionals(), std::vector<std::string>{"42"});
  auto negative = ParseArgs(spec, {"--db", "x.db", "-7"});
  ASSERT_TRUE(negative.ok()) << negative.status();
  EXPECT_EQ(negative->positionals(), std::vector<std::string>{"-7"});

  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--db", "x", "--bogus", "1"},
                                             {"42"},
                                             {"--db", "x"},
                                             {"--db", "x", "1", "2"},
                                             {"--db", "x", "--db", "y", "1"},
                                             {"--db", "x", "1", "--run"},
                                             {"--db", "x", "--json=1", "1"}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseArgs(spec, bad).status())) << bad.size();
  }
  auto bad_int = ParseArgs(spec, {"--db", "x", "--run", "two", "1"});
  ASSERT_TRUE(bad_int.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad_int->IntValue("run", 0).status()));
  EXPECT_TRUE(WantsHelp({"--db", "x", "--help"}));
  EXPECT_FALSE(WantsHelp({"--", "--help"}));
}

TEST(ArgsTest, OrderIdsAcceptTheFullUnsignedRange) {
  EXPECT_EQ(ParseOrderId("42"), 42);
  EXPECT_EQ(ParseOrderId("-1"), -1);
  EXPECT_EQ(ParseOrderId("18446744073709551615"), -1);
  EXPECT_EQ(ParseOrderId("9223372036854775808"), INT64_MIN);
  EXPECT_FALSE(ParseOrderId("x").has_value());
  EXPECT_FALSE(ParseOrderId("18446744073709551616").has_value());
}

}  // namespace
}  // namespace ticktrace::view
