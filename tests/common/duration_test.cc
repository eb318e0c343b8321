// The one duration syntax (common/duration.h), with the values worked out by
// hand: 7d = 7 x 86400 s = 604800 s; 500ms = 0.5 s; 1h30m = 5400 s. The
// collector's flags take it (now with ms), and the viewer's (now with d).

#include "common/duration.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "collector/app/command_line.h"
#include "gtest/gtest.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

int64_t Ns(absl::string_view text, DurationRules rules = {}) {
  absl::StatusOr<int64_t> ns = ParseDurationNs("--x", text, rules);
  EXPECT_TRUE(ns.ok()) << text << ": " << ns.status();
  return ns.value_or(-1);
}

TEST(DurationTest, EveryUnit) {
  EXPECT_EQ(Ns("100ns"), 100);
  EXPECT_EQ(Ns("250us"), 250'000);
  EXPECT_EQ(Ns("500ms"), kSecondNs / 2);  // 0.5 s
  EXPECT_EQ(Ns("30s"), 30 * kSecondNs);
  EXPECT_EQ(Ns("10m"), 600 * kSecondNs);
  EXPECT_EQ(Ns("8h"), 28'800 * kSecondNs);
  EXPECT_EQ(Ns("7d"), 604'800 * kSecondNs);  // 7 x 86400 s
}

// What the viewer took before (absl::ParseDuration): fractions and sums.
TEST(DurationTest, FractionsAndCompoundForms) {
  EXPECT_EQ(Ns("1h30m"), 5'400 * kSecondNs);
  EXPECT_EQ(Ns("1.5s"), 1'500'000'000);
  EXPECT_EQ(Ns(".5m"), 30 * kSecondNs);
  EXPECT_EQ(Ns("1m30s500ms"), 90'500'000'000);
  EXPECT_EQ(Ns("2d12h"), 216'000 * kSecondNs);  // 2.5 x 86400 s
}

TEST(DurationTest, ZeroAndBareNumbersOnlyWhereAllowed) {
  EXPECT_FALSE(ParseDurationNs("--x", "0").ok());
  EXPECT_FALSE(ParseDurationNs("--x", "0s").ok());
  EXPECT_EQ(Ns("0", {.allow_zero = true}), 0);
  EXPECT_EQ(Ns("0ms", {.allow_zero = true}), 0);
  EXPECT_FALSE(ParseDurationNs("--x", "600").ok());
  EXPECT_EQ(Ns("600", {.bare_number_is_seconds = true}), 600 * kSecondNs);
  EXPECT_EQ(Ns("1.5", {.bare_number_is_seconds = true}), 1'500'000'000);
  // A bare number is the whole text, never a term among others.
  EXPECT_FALSE(ParseDurationNs("--x", "1m30", {.bare_number_is_seconds = true}).ok());
}

TEST(DurationTest, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "s", "5x", "5 s", "-5s", "+5s", "1..5s", "5sm", "ms", "inf",
                          "1e3s", "300000d"}) {
    const absl::StatusOr<int64_t> ns = ParseDurationNs("--retain", bad);
    EXPECT_TRUE(absl::IsInvalidArgument(ns.status())) << "'" << bad << "'";
  }
}

// One line naming the flag, the text, and the units.
TEST(DurationTest, ErrorNamesTheFlagAndTheUnits) {
  const absl::Status s = ParseDurationNs("--every", "soon").status();
  EXPECT_EQ(s.message(),
            "--every: expected a positive duration like 500ms, 30s, 10m, 8h or 7d (units ns, us, "
            "ms, s, m, h, d), got 'soon'");
  EXPECT_TRUE(absl::StrContains(
      ParseDurationNs("--skew-interval", "x", {.allow_zero = true, .bare_number_is_seconds = true})
          .status()
          .message(),
      "a bare number is seconds"));
}

// The collector's duration flags now take ms (and still d); by hand:
// 7d = 604800 s, 500ms = 0.5 s, 1500ms rounds up to a 2 s skew interval.
TEST(DurationTest, CollectorFlagsTakeMilliseconds) {
  collect::CollectorFlags flags;
  flags.db = "";  // no store: nothing to check on disk
  flags.retain = "7d";
  flags.retain_detail = "500ms";
  flags.checkpoint_interval = "500ms";
  flags.skew_interval = "1500ms";
  absl::StatusOr<collect::CollectorOptions> o = collect::OptionsFromFlags(flags);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->store.retain_ns, 604'800 * kSecondNs);
  EXPECT_EQ(o->store.retain_detail_ns, kSecondNs / 2);
  EXPECT_EQ(o->checkpoint_interval.count(), 500);  // ms
  EXPECT_EQ(o->skew_interval_s, 2);
  // The bare seconds they always took.
  flags.checkpoint_interval = "5";
  flags.skew_interval = "600";
  o = collect::OptionsFromFlags(flags);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->checkpoint_interval.count(), 5000);
  EXPECT_EQ(o->skew_interval_s, 600);
  flags.retain = "soon";
  EXPECT_TRUE(absl::StartsWith(collect::OptionsFromFlags(flags).status().message(),
                               "--retain: expected a positive duration like 500ms"));
}

// The viewer's relative times and --every now take d.
TEST(DurationTest, ViewerFlagsTakeDays) {
  absl::StatusOr<view::TimeArg> since = view::ParseTimeArg("--since", "-7d");
  ASSERT_TRUE(since.ok()) << since.status();
  EXPECT_EQ(since->anchor, view::TimeArg::Anchor::kRunEnd);
  EXPECT_EQ(since->ns, -604'800 * kSecondNs);
  absl::StatusOr<view::TimeArg> until = view::ParseTimeArg("--until", "+500ms");
  ASSERT_TRUE(until.ok()) << until.status();
  EXPECT_EQ(until->ns, kSecondNs / 2);
  EXPECT_EQ(Ns("1d"), 86'400 * kSecondNs);  // --every 1d
}

}  // namespace
}  // namespace ticktrace
