// One meaning of "flagged" (viewer/views/flag_words.h) in the report, the
// summary and `intervals`, on the known store (tests/viewer/store_fixture.h)
// whose flags are known by hand:
//   order 13: md->strategy negative and cross-core (kept out: flagged);
//   order 21: risk migrated (kept out: flagged);
//   order 7:  strategy->gateway cross-core only (marked, kept in: not flagged).
// Intervals are 1 ms and order i has interval i to itself.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "ticktrace/store/reader.h"
#include "viewer/html/report_model.h"
#include "viewer/html/svg.h"
#include "viewer/views/intervals_report.h"
#include "viewer/views/summary.h"

namespace ticktrace::view {
namespace {

using testing::KnownStore;

constexpr char kRule[] =
    "flagged (migrated, negative, saturated, out_of_order): kept out of the percentiles; "
    "marked only (cross_core, skew, late, cross_host): kept in";

class FlagWordingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("known.db");
    testing::WriteKnownStore(path_);
    store_ = testing::OpenStore(path_);
    ASSERT_NE(store_, nullptr);
  }
  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<store::StoreReader> store_;
};

// How many times `what` occurs in `text`.
int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(FlagWordingTest, SummarySaysWhichFlagsKeepASampleOut) {
  auto summary = BuildSummary(*store_, QueryOptions());
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string text = RenderSummaryText(*summary);
  EXPECT_NE(text.find(absl::StrCat("statistics: interval histograms merged over the whole run (",
                                   kRule, ")\n")),
            std::string::npos)
      << text;
}

TEST_F(FlagWordingTest, IntervalsCountOnlyFlaggedSamples) {
  QueryOptions q;
  auto report = BuildIntervals(*store_, q, std::nullopt);
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string text = RenderIntervalsText(*report);
  EXPECT_NE(text.find(absl::StrCat("percentiles from the merged interval histograms (within "
                                   "0.4%); ",
                                   kRule, "; the flagged column counts flagged samples")),
            std::string::npos)
      << text;
  // By hand: md->strategy's interval 13 has one flagged sample (negative);
  // strategy->gateway's interval 7 none (cross-core only); risk's 21 one.
  int64_t flagged_md = 0, flagged_gw = 0, flagged_risk = 0;
  for (const store::IntervalRow& r : report->rows) {
    const int64_t flagged = r.samples_all - r.count;
    if (r.stage == "md->strategy") flagged_md += flagged;
    if (r.stage == "strategy->gateway") flagged_gw += flagged;
    if (r.stage == "risk") flagged_risk += flagged;
    if (r.stage == "strategy->gateway" && r.start_utc_ns == KnownStore::FirstUtcNs(7)) {
      EXPECT_EQ(r.flag_counts[2], 1) << "order 7 is cross-core";  // kFlagNames[2]: cross_core
    }
  }
  EXPECT_EQ(flagged_md, 1);
  EXPECT_EQ(flagged_gw, 0);
  EXPECT_EQ(flagged_risk, 1);
}

TEST_F(FlagWordingTest, ReportMarkersAndFlagsSectionAgree) {
  auto model = BuildReportModel(*store_, std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  // The buckets' flagged samples: 13 and 21 one each; 7 (cross-core) none.
  int64_t buckets_flagged = 0;
  for (const TimeBucket& b : model->time.buckets) {
    if (b.start_utc_ns == KnownStore::FirstUtcNs(13) ||
        b.start_utc_ns == KnownStore::FirstUtcNs(21)) {
      EXPECT_EQ(b.flagged, 1) << b.start_utc_ns;
    } else {
      EXPECT_EQ(b.flagged, 0) << b.start_utc_ns;
    }
    buckets_flagged += b.flagged;
  }
  EXPECT_EQ(buckets_flagged, 2);
  const std::string html = RenderReportHtml(*model);
  // An amber marker over buckets 13 and 21 in each of the six plots over
  // time (the stacked medians, the stacked means, one per stage of four),
  // each saying what flagged means; none over bucket 7.
  EXPECT_EQ(CountOf(html, "class=\"marker flagged\""), 2 * 6);
  EXPECT_EQ(CountOf(html, "1 flagged samples (kept out of the percentiles)</title></path>"), 2 * 6);
  // The section's rule, in the same words as the summary's.
  EXPECT_NE(html.find("<p class=\"note\" id=\"flag-rule\">A sample is <b>flagged</b> when it is "
                      "migrated, negative, saturated, out_of_order: flagged samples are <b>kept "
                      "out of</b> the percentiles and plots above (as the collector counted them "
                      "for this run). cross_core, skew, late, cross_host only <b>mark</b> a "
                      "sample: it stays in the percentiles."),
            std::string::npos);
  EXPECT_NE(html.find(kRule), std::string::npos) << "the header's statistics line";
  // Its table: flagged, migrated, negative, out of order, then the marks.
  const auto row = [](const std::string& stage, const std::vector<int>& n) {
    std::string out = absl::StrCat(EscapeHtml(stage), "</td>");
    for (size_t i = 0; i < n.size(); ++i) {
      absl::StrAppend(&out, n[i] > 0 && i < 4 ? "<td class=\"num flagged\">" : "<td class=\"num\">",
                      n[i], "</td>");
    }
    return out;
  };
  const size_t section = html.find("<section id=\"flags\">");
  ASSERT_NE(section, std::string::npos);
  for (const auto& [stage, counts] : std::vector<std::pair<std::string, std::vector<int>>>{
           {"md->strategy", {1, 0, 1, 0, 1, 0, 0}},
           {"risk", {1, 1, 0, 0, 0, 0, 0}},
           {"strategy->gateway", {0, 0, 0, 0, 1, 0, 0}},
           {"total", {0, 0, 0, 0, 0, 0, 0}}}) {
    EXPECT_NE(html.find(row(stage, counts), section), std::string::npos) << stage;
  }
}

}  // namespace
}  // namespace ticktrace::view
