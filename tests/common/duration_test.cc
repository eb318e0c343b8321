// The one duration syntax (common/duration.h), with the values worked out by
// hand: 7d = 7 x 86400 s = 604800 s; 500ms = 0.5 s; 1h30m = 5400 s.

#include "common/duration.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace ticktrace
