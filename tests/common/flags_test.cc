// The one flag parser (common/flags.h): its grammar, its one error wording,
// its help layout, and flags bound to variables with durations in the one
// syntax (collector flags now take ms, viewer flags d: by hand, 7d = 604800 s
// and 500ms = 0.5 s).

#include "common/flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/duration.h"
#include "gtest/gtest.h"

namespace ticktrace {
namespace {

CommandSpec OrderSpec() {
  CommandSpec spec;
  spec.name = "order";
  spec.flags = {{"db", "PATH", "the store", /*required=*/true},
                {"run", "N", "the run"},
                {"json", "", "print JSON"},
                {"interval-ms", "MS", "test hook", false, /*hidden=*/true}};
  spec.positional_name = "ID";
  return spec;
}

std::string ErrorOf(const CommandSpec& spec, const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(spec, args);
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << parsed.status();
  return std::string(parsed.status().message());
}

TEST(FlagsTest, ValuesBooleansAndPositionals) {
  auto a = ParseArgs(OrderSpec(), {"--db", "x.db", "--run=3", "--json", "-42"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Value("db"), "x.db");
  EXPECT_EQ(**a->IntValue("run", 0), 3);
  EXPECT_TRUE(a->Has("json"));
  EXPECT_EQ(a->positionals(), std::vector<std::string>{"-42"});  // a negative number
  // After "--" everything is positional.
  auto b = ParseArgs(OrderSpec(), {"--db", "x", "--", "--json"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->Has("json"));
  EXPECT_EQ(b->positionals(), std::vector<std::string>{"--json"});
}

// A repeated flag keeps every value in order; others still refuse a second.
TEST(FlagsTest, RepeatedFlagsKeepEveryValue) {
  CommandSpec spec = OrderSpec();
  spec.positional_name.clear();
  FlagSpec budget{"budget", "B", "a budget"};
  budget.repeated = true;
  spec.flags.push_back(budget);
  auto a = ParseArgs(spec, {"--budget", "a:p99<1us", "--db", "x", "--budget=b:max<2ms"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Values("budget"), (std::vector<std::string>{"a:p99<1us", "b:max<2ms"}));
  EXPECT_EQ(a->Value("budget"), "b:max<2ms");
  EXPECT_TRUE(a->Values("db").empty());  // not a repeated flag
  auto none = ParseArgs(spec, {"--db", "x"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->Values("budget").empty());
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "--budget", "a:p99<1us", "--db", "y"}),
            "--db given twice");
}

// The spellings earlier releases took: underscores, one dash, --no-name.
TEST(FlagsTest, UnderscoresSingleDashAndNegation) {
  auto a = ParseArgs(OrderSpec(), {"-db=x", "--interval_ms", "5", "--json", "--no-json", "1"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Value("db"), "x");
  EXPECT_EQ(a->Value("interval-ms"), "5");
  EXPECT_FALSE(a->Has("json"));
  EXPECT_TRUE(a->IsOff("json"));
  auto b = ParseArgs(OrderSpec(), {"--db", "x", "--nojson", "--json=true", "1"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->Has("json"));
}

// One wording for each problem, in every program.
TEST(FlagsTest, OneWordingPerError) {
  const CommandSpec spec = OrderSpec();
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "--bogus=1", "1"}), "unknown flag '--bogus'");
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "1", "--run"}), "--run needs a value (N)");
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "--db", "y", "1"}), "--db given twice");
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "--json=1", "1"}), "--json: expected true or false, got '1'");
  EXPECT_EQ(ErrorOf(spec, {"--run", "1", "7"}), "'order' needs --db PATH");
  EXPECT_EQ(ErrorOf(spec, {"--db", "x"}), "'order' needs ID");
  EXPECT_EQ(ErrorOf(spec, {"--db", "x", "1", "2"}), "'order' takes one ID, got 2");
  CommandSpec none;
  EXPECT_EQ(ErrorOf(none, {"stray"}), "unexpected argument 'stray'");
  auto bad_int = ParseArgs(spec, {"--db", "x", "--run", "two", "1"});
  ASSERT_TRUE(bad_int.ok());
  EXPECT_EQ(bad_int->IntValue("run", 0).status().message(),
            "--run: expected an integer >= 0, got 'two'");
  // The value flag takes the next word whatever it looks like.
  auto dash = ParseArgs(spec, {"--db", "--json", "1"});
  ASSERT_TRUE(dash.ok());
  EXPECT_EQ(dash->Value("db"), "--json");
}

TEST(FlagsTest, LastValueWinsWhereTheTableSaysSo) {
  CommandSpec spec = OrderSpec();
  spec.last_value_wins = true;
  auto a = ParseArgs(spec, {"--db", "x", "--db", "y", "1"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Value("db"), "y");
}

TEST(FlagsTest, HelpAndVersionBeforeTheEndOfFlags) {
  EXPECT_TRUE(WantsHelp({"--db", "x", "--help"}));
  EXPECT_TRUE(WantsHelp({"-h"}));
  EXPECT_FALSE(WantsHelp({"--", "--help"}));
  EXPECT_TRUE(WantsVersion({"--bogus", "--version"}));
  EXPECT_FALSE(WantsVersion({"--", "--version"}));
}

TEST(FlagsTest, HelpLayout) {
  CommandSpec spec = OrderSpec();
  spec.synopsis = "One order's timeline.";
  spec.example = "prog order --db t.db 7";
  const std::string help = CommandHelp("prog", spec);
  EXPECT_EQ(help.rfind("usage: prog order --db PATH [--run N] [--json] ID\n\nOne order's timeline.\n"
                       "\nflags:\n",
                       0),
            0u)
      << help;
  EXPECT_TRUE(absl::StrContains(help, "  --run N    the run\n")) << help;
  EXPECT_TRUE(absl::StrContains(help, "  --help     print this text and exit\n")) << help;
  EXPECT_TRUE(absl::StrContains(help, "  --version  print the version and the git commit"))
      << help;
  EXPECT_FALSE(absl::StrContains(help, "interval-ms")) << help;  // hidden
  EXPECT_TRUE(absl::StrContains(help, "\nexample:\n  prog order --db t.db 7\n")) << help;
}

TEST(FlagsTest, SectionsDefaultsAndWrapping) {
  CommandSpec spec;
  spec.usage = {"[OPTIONS]", "--replay ARCHIVE [OPTIONS]"};
  std::string timeout = "1000";
  bool flagged = false;
  BoundFlags flags(spec);
  flags.AddString({"order-timeout-ms", "MS",
                   "an order with no new record for this long is finished, however long the "
                   "pipeline takes to get there",
                   false, false, "", "orders"},
                  &timeout);
  flags.AddBool({"include-flagged", "", "count flagged samples", false, false, "", "orders"},
                &flagged);
  const std::string help = CommandHelp("prog", flags.spec());
  EXPECT_EQ(help.rfind("usage: prog [OPTIONS]\n       prog --replay ARCHIVE [OPTIONS]\n", 0), 0u)
      << help;
  EXPECT_TRUE(absl::StrContains(help, "\norders:\n  --order-timeout-ms MS  an order")) << help;
  EXPECT_TRUE(absl::StrContains(help, "(default:\n                         1000)\n")) << help;
  EXPECT_TRUE(absl::StrContains(help, "\nother:\n  --help")) << help;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

TEST(FlagsTest, BoundFlagsWriteTheirVariables) {
  std::string session = "default";
  uint64_t ticks = 10;
  int pin = -1;
  double rate = 1;
  bool verbose = false;
  int64_t retain_ns = 0;
  BoundFlags flags(CommandSpec{});
  flags.AddString({"session", "NAME", ""}, &session);
  flags.AddUint64({"ticks", "N", ""}, &ticks);
  flags.AddInt({"pin", "CPU", ""}, &pin);
  flags.AddDouble({"rate", "X", ""}, &rate);
  flags.AddBool({"verbose", "", ""}, &verbose);
  flags.AddCustom({"retain", "AGE", ""}, [&](absl::string_view flag, absl::string_view text) {
    absl::StatusOr<int64_t> ns = ParseDurationNs(flag, text);
    if (ns.ok()) retain_ns = *ns;
    return ns.status();
  });
  const char* argv[] = {"prog",   "--session", "s1",     "--ticks=5", "--pin", "-1",
                        "--rate", "2.5",       "--verbose", "--retain", "7d"};
  absl::StatusOr<BoundFlags::Outcome> outcome = flags.Parse(11, argv);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, BoundFlags::Outcome::kRun);
  EXPECT_EQ(session, "s1");
  EXPECT_EQ(ticks, 5u);
  EXPECT_EQ(pin, -1);
  EXPECT_EQ(rate, 2.5);
  EXPECT_TRUE(verbose);
  EXPECT_EQ(retain_ns, 604'800'000'000'000);  // 7 x 86400 s

  const char* bad[] = {"prog", "--ticks", "lots"};
  EXPECT_EQ(flags.Parse(3, bad).status().message(),
            "--ticks: expected a non-negative integer, got 'lots'");
  const char* help[] = {"prog", "--ticks", "lots", "--help"};
  EXPECT_EQ(*flags.Parse(4, help), BoundFlags::Outcome::kHelp);
  const char* version[] = {"prog", "--version"};
  EXPECT_EQ(*flags.Parse(2, version), BoundFlags::Outcome::kVersion);
}

// The collector's duration flags now take ms, and the viewer's take d.
TEST(FlagsTest, CollectorTakesMillisecondsViewerTakesDays) {
  // --checkpoint-interval (the collector: seconds, or a duration).
  EXPECT_EQ(*ParseDurationNs("--checkpoint-interval", "500ms",
                             {.allow_zero = true, .bare_number_is_seconds = true}),
            500'000'000);  // 0.5 s
  EXPECT_EQ(*ParseDurationNs("--retain", "1500ms"), 1'500'000'000);
  // --every (the viewer): a week.
  EXPECT_EQ(*ParseDurationNs("--every", "7d"), 604'800'000'000'000);
}

}  // namespace
}  // namespace ticktrace
