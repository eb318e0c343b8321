// The report's model: the numbers that go into each plot (report_model.h),
// on hand-made inputs and on the viewer's known store (store_fixture.h), and
// the escaping of hostile names in the rendered page.
#include "viewer/html/report_model.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store_fixture.h"
#include "ticktrace/store/reader.h"
#include "viewer/html/svg.h"

namespace ticktrace::view {
namespace {

using testing::KnownStore;

int64_t SumOfBins(const LogHistogram& h) {
  int64_t sum = 0;
  for (const HistogramBin& b : h.bins) sum += b.count;
  return sum;
}

TEST(LogHistogramTest, BinsHoldEveryPositiveValueAndCountTheRestApart) {
  std::vector<double> values = {-5, 0, 1, 9.99, 10, 10, 99, 100, 1000, 12345};
  std::sort(values.begin(), values.end());
  const LogHistogram h = BuildLogHistogram(values, 10);
  EXPECT_EQ(h.total, 10);
  EXPECT_EQ(h.nonpositive, 2);
  EXPECT_EQ(SumOfBins(h) + h.nonpositive, h.total);
  // First bin starts at 1 ns (10^0), the last holds 12345 ns.
  ASSERT_FALSE(h.bins.empty());
  EXPECT_DOUBLE_EQ(h.bins.front().lo_ns, 1.0);
  EXPECT_LE(h.bins.back().lo_ns, 12345);
  EXPECT_GT(h.bins.back().hi_ns, 12345);
  // Contiguous, and each value lands in the bin whose edges hold it: exactly
  // 10 and 100 ns sit at the lower edge of their bins.
  for (size_t i = 1; i < h.bins.size(); ++i) {
    EXPECT_DOUBLE_EQ(h.bins[i].lo_ns, h.bins[i - 1].hi_ns);
  }
  for (const HistogramBin& b : h.bins) {
    const auto n = std::count_if(values.begin(), values.end(),
                                 [&](double v) { return v >= b.lo_ns && v < b.hi_ns; });
    EXPECT_EQ(b.count, n) << "bin [" << b.lo_ns << ", " << b.hi_ns << ")";
  }
}

TEST(LogHistogramTest, EmptyAndAllNonPositive) {
  EXPECT_TRUE(BuildLogHistogram({}, 10).bins.empty());
  const LogHistogram h = BuildLogHistogram({-3, -1, 0}, 10);
  EXPECT_TRUE(h.bins.empty());
  EXPECT_EQ(h.nonpositive, 3);
  EXPECT_EQ(h.total, 3);
}

TEST(PercentileCurveTest, PointsAreMonotoneWithXOfOneOverOneMinusP) {
  std::vector<double> values;
  for (int i = 1; i <= 20000; ++i)
    values.push_back(1000 + (i % 997) * 3 + (i % 5000 == 0 ? 1e6 : 0));
  std::sort(values.begin(), values.end());
  const PercentileCurve c = BuildPercentileCurve(values);
  EXPECT_EQ(c.count, 20000);
  EXPECT_DOUBLE_EQ(c.max_ns, values.back());
  EXPECT_DOUBLE_EQ(c.x_max, 1e5);
  ASSERT_GT(c.points.size(), 20u);
  EXPECT_DOUBLE_EQ(c.points.front().percentile, 0);
  EXPECT_DOUBLE_EQ(c.points.front().value_ns, values.front());
  for (size_t i = 0; i < c.points.size(); ++i) {
    const PercentilePoint& p = c.points[i];
    EXPECT_LT(p.percentile, 1.0);
    EXPECT_NEAR(p.x, 1.0 / (1.0 - p.percentile), 1e-9 * p.x);
    EXPECT_LE(p.x, c.x_max);
    EXPECT_LE(p.value_ns, c.max_ns);
    if (i > 0) {
      EXPECT_GT(p.percentile, c.points[i - 1].percentile) << i;
      EXPECT_GT(p.x, c.points[i - 1].x) << i;
      EXPECT_GE(p.value_ns, c.points[i - 1].value_ns) << i;
    }
  }
  // The tail is resolved: there are points beyond p99.9.
  EXPECT_GT(c.points.back().x, 1000);
}

TEST(PercentileCurveTest, OneValueIsOnePoint) {
  for (const std::vector<double>& values :
       {std::vector<double>{700}, std::vector<double>{5, 5, 5}}) {
    const PercentileCurve c = BuildPercentileCurve(values);
    ASSERT_EQ(c.points.size(), 1u);
    EXPECT_DOUBLE_EQ(c.points[0].x, 1);
    EXPECT_DOUBLE_EQ(c.points[0].value_ns, values[0]);
    EXPECT_DOUBLE_EQ(c.max_ns, values[0]);
  }
  EXPECT_TRUE(BuildPercentileCurve({}).points.empty());
}

TEST(OrderWaterfallTest, BarsStartAtTheFirstStampInStampOrderWithTotalApart) {
  SlowOrder slow;
  slow.order.order_id = 42;
  slow.order.first_utc_ns = 1'000'000;
  slow.order.complete = true;
  slow.latency_ns = 900;
  const auto sample = [](const std::string& stage, int64_t start, double latency) {
    store::SampleRow s;
    s.order_id = 42;
    s.stage = stage;
    s.start_utc_ns = start;
    s.latency_ns = latency;
    return s;
  };
  // Pipeline order as FindSlowestOrders gives it; the span "risk" starts
  // later than the stage after it in the pipeline list.
  slow.samples = {sample("a->b", 1'000'000, 300), sample("risk", 1'000'250, 40),
                  sample("b->c", 1'000'300, 600), sample("total", 1'000'000, 900)};
  std::swap(slow.samples[1], slow.samples[2]);  // b->c listed before risk
  const OrderWaterfall w = BuildOrderWaterfall(slow);
  ASSERT_EQ(w.bars.size(), 3u);
  EXPECT_EQ(w.bars[0].stage, "a->b");
  EXPECT_DOUBLE_EQ(w.bars[0].offset_ns, 0);
  EXPECT_EQ(w.bars[1].stage, "risk");
  EXPECT_DOUBLE_EQ(w.bars[1].offset_ns, 250);
  EXPECT_EQ(w.bars[2].stage, "b->c");
  EXPECT_DOUBLE_EQ(w.bars[2].offset_ns, 300);
  ASSERT_TRUE(w.total_ns.has_value());
  EXPECT_DOUBLE_EQ(*w.total_ns, 900);
  EXPECT_DOUBLE_EQ(w.span_ns, 900);
  EXPECT_EQ(w.order_id, 42);
}

TEST(MedianStackTest, SegmentsArePipelineMediansEndToEnd) {
  Summary summary;
  const auto row = [](const std::string& stage, std::optional<double> p50) {
    SummaryStage s;
    s.stage = stage;
    s.stats.p50_ns = p50;
    s.stats.count = p50.has_value() ? 1 : 0;
    return s;
  };
  summary.stages = {row("md->strategy", 300), row("risk", 50), row("strategy->gateway", 1200),
                    row("gateway->wire", -10), row("total", 1450)};
  const MedianStack stack = BuildMedianStack(summary, "md, strategy,gateway,wire");
  ASSERT_EQ(stack.segments.size(), 3u);
  double offset = 0;
  for (const StackSegment& seg : stack.segments) {
    EXPECT_DOUBLE_EQ(seg.offset_ns, offset) << seg.stage;
    offset += seg.width_ns;
  }
  EXPECT_DOUBLE_EQ(stack.sum_ns, 300 + 1200 + 0);  // a negative median stacks as 0
  EXPECT_DOUBLE_EQ(offset, stack.sum_ns);
  EXPECT_EQ(stack.left_out, std::vector<std::string>{"risk"});
  ASSERT_TRUE(stack.total_p50_ns.has_value());
  EXPECT_DOUBLE_EQ(*stack.total_p50_ns, 1450);

  // Without a pipeline that names the stages: every "a->b" stage stacks.
  const MedianStack fallback = BuildMedianStack(summary, "");
  EXPECT_EQ(fallback.segments.size(), 3u);
}

TEST(SlugTest, IdsAreSafeAndReadable) {
  EXPECT_EQ(StageSlug("md->strategy"), "md-to-strategy");
  EXPECT_EQ(StageSlug("total"), "total");
  EXPECT_EQ(StageSlug("<img src=x>"), "-img-src-x-");
  EXPECT_EQ(StageSlug(""), "unnamed");
  EXPECT_NE(StageColour(0), StageColour(1));
}

class ReportModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("known.db");
    testing::WriteKnownStore(path_);
  }
  std::unique_ptr<store::StoreReader> Open() {
    auto store = store::StoreReader::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }
  // The report's model of the known store (the model holds no reference to
  // the store it was read from).
  absl::StatusOr<ReportModel> Model(std::optional<int64_t> run_id, int slowest) {
    std::unique_ptr<store::StoreReader> store = Open();
    if (store == nullptr) return absl::InternalError("the known store did not open");
    return BuildReportModel(*store, run_id, slowest);
  }

  testing::TempDir dir_;
  std::string path_;
};

// The known store's run 2, by hand (store_fixture.h tells the story): the
// values in each stage's percentiles under the documented flag rule
// (docs/store.md: migrated and negative out, cross_core alone in).
//   md->strategy       10*i ns for i = 1..100, without order 13 (-5 ns, negative)
//   risk               100 + i ns, without order 21 (migrated)
//   strategy->gateway  1000 + i ns for i = 1..100 (order 7 only cross-core: in),
//                      and order 102's 1200 ns
//   total              1000 + 11*i ns, order 13's 1008 ns, order 102's 301200 ns
std::vector<double> HandValues(const std::string& stage) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) {
    if (stage == "md->strategy" && i != 13) v.push_back(10.0 * i);
    if (stage == "risk" && i != 21) v.push_back(100.0 + i);
    if (stage == "strategy->gateway") v.push_back(1000.0 + i);
    if (stage == "total") v.push_back(i == 13 ? 1008.0 : 1000.0 + 11 * i);
  }
  if (stage == "strategy->gateway") v.push_back(1200);
  if (stage == "total") v.push_back(301200);
  std::sort(v.begin(), v.end());
  return v;
}

// Nearest rank: the smallest value with at least p of the values at or below it.
double HandRank(const std::vector<double>& sorted, double p) {
  const double exact = p * static_cast<double>(sorted.size());
  size_t rank = static_cast<size_t>(std::ceil(exact - 1e-9));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

TEST_F(ReportModelStoreTest, PlotsHoldTheHandCountedValues) {
  auto model = Model(std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->summary.run.run_id, KnownStore::kLatestRun);
  ASSERT_EQ(model->stages.size(), 4u);
  const std::vector<std::string> order = {"md->strategy", "risk", "strategy->gateway", "total"};
  const std::vector<int64_t> counts = {99, 99, 101, 101};
  for (size_t i = 0; i < model->stages.size(); ++i) {
    const StagePlots& p = model->stages[i];
    ASSERT_EQ(p.stage, order[i]);
    const std::vector<double> values = HandValues(p.stage);
    ASSERT_EQ(static_cast<int64_t>(values.size()), counts[i]) << p.stage;  // the story itself
    // The histogram holds exactly these values: each bin counts the hand
    // values between its edges, and none is at or below zero.
    EXPECT_EQ(p.histogram.total, counts[i]) << p.stage;
    EXPECT_EQ(p.histogram.nonpositive, 0) << p.stage;
    EXPECT_EQ(SumOfBins(p.histogram), counts[i]) << p.stage;
    for (const HistogramBin& b : p.histogram.bins) {
      const auto n = std::count_if(values.begin(), values.end(),
                                   [&](double v) { return v >= b.lo_ns && v < b.hi_ns; });
      EXPECT_EQ(b.count, n) << p.stage << " [" << b.lo_ns << ", " << b.hi_ns << ")";
    }
    // Every point of the percentile curve is the hand list's nearest rank.
    EXPECT_EQ(p.percentiles.count, counts[i]) << p.stage;
    EXPECT_EQ(p.percentiles.max_ns, values.back()) << p.stage;
    ASSERT_FALSE(p.percentiles.points.empty()) << p.stage;
    for (const PercentilePoint& pt : p.percentiles.points) {
      EXPECT_EQ(pt.value_ns, HandRank(values, pt.percentile)) << p.stage << " at " << pt.percentile;
    }
  }
  // The excluded flagged samples: order 13 (negative) and order 21 (migrated).
  EXPECT_EQ(model->stages[0].excluded_flagged, 1);
  EXPECT_EQ(model->stages[1].excluded_flagged, 1);
  EXPECT_EQ(model->stages[2].excluded_flagged, 0);
  EXPECT_EQ(model->stages.back().stage, "total");
  EXPECT_NE(model->stages[0].colour, model->stages[1].colour);
  EXPECT_NE(model->stages[1].colour, model->stages[2].colour);

  // The stacked bar: the pipeline's two stages by hand, p50 of md->strategy
  // (rank 50 of 99: 510 ns) and of strategy->gateway (rank 51 of 101:
  // 1051 ns), not the span; the total's own p50 is rank 51 of 101: 1561 ns.
  ASSERT_EQ(model->stack.segments.size(), 2u);
  EXPECT_EQ(model->stack.segments[0].stage, "md->strategy");
  EXPECT_EQ(model->stack.segments[0].width_ns, 510.0);
  EXPECT_EQ(model->stack.segments[1].stage, "strategy->gateway");
  EXPECT_EQ(model->stack.segments[1].offset_ns, 510.0);
  EXPECT_EQ(model->stack.segments[1].width_ns, 1051.0);
  EXPECT_EQ(model->stack.sum_ns, 1561.0);
  ASSERT_TRUE(model->stack.total_p50_ns.has_value());
  EXPECT_EQ(*model->stack.total_p50_ns, 1561.0);
  EXPECT_EQ(model->stack.left_out, std::vector<std::string>{"risk"});

  // The known store lost data (counters dropped 3, malformed 1).
  ASSERT_EQ(model->losses.size(), 2u);
  EXPECT_EQ(model->losses[0].name, "dropped");
  EXPECT_EQ(model->losses[0].value, 3);
  EXPECT_EQ(model->losses[1].name, "malformed");
  EXPECT_EQ(model->losses[1].value, 1);
}

// The text of each cell of each row of the page's breakdown table.
std::vector<std::vector<std::string>> BreakdownCells(const std::string& html) {
  const size_t begin = html.find("<section id=\"breakdown\">");
  const size_t end = html.find("</table>", begin);
  std::vector<std::vector<std::string>> rows;
  if (begin == std::string::npos || end == std::string::npos) return rows;
  const std::string table = html.substr(begin, end - begin);
  for (size_t tr = table.find("<tr"); tr != std::string::npos; tr = table.find("<tr", tr + 1)) {
    const size_t tr_end = table.find("</tr>", tr);
    const std::string row = table.substr(tr, tr_end - tr);
    std::vector<std::string> cells;
    for (size_t td = row.find("<td"); td != std::string::npos; td = row.find("<td", td + 1)) {
      const size_t open_end = row.find('>', td);
      const size_t close = row.find("</td>", open_end);
      std::string text;
      bool in_tag = false;
      for (char c : row.substr(open_end + 1, close - open_end - 1)) {
        if (c == '<') in_tag = true;
        if (!in_tag) text += c;
        if (c == '>') in_tag = false;
      }
      cells.push_back(text);
    }
    if (!cells.empty()) rows.push_back(cells);  // the header row has <th> only
  }
  return rows;
}

// The page's breakdown, cell by cell, against the story computed by hand
// (nearest-rank percentiles of HandValues; three significant digits).
TEST_F(ReportModelStoreTest, PageBreakdownShowsTheHandComputedNumbers) {
  auto model = Model(std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string html = RenderReportHtml(*model);
  const std::vector<std::vector<std::string>> expected = {
      // stage, count, min, p50, p90, p99, p99.9, max, mean, flagged (kept out of the
      // percentiles: migrated, negative, saturated, out_of_order), cross-core, confidence
      // A p99 needs 100 samples and a p99.9 1000 (docs/viewer.md#summary): "-" below that.
      // Confidence (docs/viewer.md): the run lost 4 of 408 records (3
      // dropped, 1 malformed: 0.98%, above 1 per mille) on every stage; one
      // flagged sample of 100 is 1.0%, 99 samples are few; a cross-core stage
      // without measured offsets is otherwise ok.
      // md->strategy: mean 50370/99 = 508.8 ns; p50 rank 50 = order 51.
      {"md-&gt;strategy", "99", "10.0 ns", "510 ns", "910 ns", "-", "-", "1.00 µs", "509 ns",
       "1", "1", "records lost 0.98%; flagged 1.0%; few samples"},
      // risk: 101..200 without 121; mean 14929/99 = 150.8 ns.
      {"risk", "99", "101 ns", "151 ns", "191 ns", "-", "-", "200 ns", "151 ns", "1", "0",
       "records lost 0.98%; flagged 1.0%; few samples"},
      // strategy->gateway: 1001..1100 and 1200; mean 106250/101 = 1052 ns; p99 rank 100 = 1100.
      {"strategy-&gt;gateway", "101", "1.00 µs", "1.05 µs", "1.09 µs", "1.10 µs", "-",
       "1.20 µs", "1.05 µs", "0", "1", "records lost 0.98%"},
      // total: mean 456615/101 = 4521 ns; p99 rank 100 = 2100 ns.
      {"total", "101", "1.01 µs", "1.56 µs", "2.00 µs", "2.10 µs", "-", "301 µs", "4.52 µs",
       "0", "0", "records lost 0.98%"},
  };
  EXPECT_EQ(BreakdownCells(html), expected);
}

// The three slowest orders by total, by hand: 102 (linked to 50: 301.2 µs),
// 100 (1000 + 1100 ns) and 99 (990 + 1099 ns). Bars are placed from the
// chain's first stamp; 102's chain starts at order 50's md stamp.
// The header's first line is the records lost, as summary's: the fixture's
// run drained 405 and dropped 3 (written 408); 3 dropped and 1 malformed are
// lost, 0.98%.
TEST_F(ReportModelStoreTest, HeaderLeadsWithTheRecordsLost) {
  auto model = Model(std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string html = RenderReportHtml(*model);
  const size_t lost = html.find(
      "<div class=\"banner loss\" id=\"records-lost\">records lost: 4 of 408 (0.98%): ring_full "
      "3, malformed 1; not in any figure below</div>");
  ASSERT_NE(lost, std::string::npos) << html.substr(0, 4000);
  EXPECT_LT(html.find("id=\"run-header\""), lost);
  EXPECT_LT(lost, html.find("<dl"));  // before the run's facts
  EXPECT_LT(lost, html.find("id=\"breakdown\""));
}

TEST_F(ReportModelStoreTest, WaterfallsAreTheHandPickedSlowestOrders) {
  auto model = Model(std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->slowest.size(), 3u);
  struct Bar {
    std::string stage;
    bool linked;
    double offset_ns, latency_ns;
    bool operator==(const Bar&) const = default;
  };
  const auto bars_of = [](const OrderWaterfall& w) {
    std::vector<Bar> out;
    for (const WaterfallBar& b : w.bars)
      out.push_back({b.stage, b.linked, b.offset_ns, b.latency_ns});
    return out;
  };
  const auto print = [](const std::vector<Bar>& bars) {
    std::string s;
    for (const Bar& b : bars) {
      s += absl::StrCat(b.stage, b.linked ? " (linked)" : "", " +", b.offset_ns, " ", b.latency_ns,
                        "\n");
    }
    return s;
  };

  const OrderWaterfall& w102 = model->slowest[0];
  EXPECT_EQ(w102.order_id, 102);
  ASSERT_TRUE(w102.parent_order_id.has_value());
  EXPECT_EQ(*w102.parent_order_id, 50);
  EXPECT_EQ(w102.ranked_ns, 301200.0);
  ASSERT_TRUE(w102.total_ns.has_value());
  EXPECT_EQ(*w102.total_ns, 301200.0);
  EXPECT_EQ(w102.total_offset_ns, 0.0);
  EXPECT_EQ(w102.first_utc_ns, KnownStore::FirstUtcNs(50));
  // Order 50: md->strategy 500 ns, strategy at +500; risk 150 ns at +510;
  // strategy->gateway 1050 ns at +500. Order 102: strategy at +300 µs, 1.2 µs.
  const std::vector<Bar> expected102 = {{"md->strategy", true, 0, 500},
                                        {"strategy->gateway", true, 500, 1050},
                                        {"risk", true, 510, 150},
                                        {"strategy->gateway", false, 300000, 1200}};
  EXPECT_EQ(bars_of(w102), expected102) << print(bars_of(w102));

  const OrderWaterfall& w100 = model->slowest[1];
  EXPECT_EQ(w100.order_id, 100);
  EXPECT_FALSE(w100.parent_order_id.has_value());
  EXPECT_EQ(w100.ranked_ns, 2100.0);
  const std::vector<Bar> expected100 = {{"md->strategy", false, 0, 1000},
                                        {"strategy->gateway", false, 1000, 1100},
                                        {"risk", false, 1010, 200}};
  EXPECT_EQ(bars_of(w100), expected100) << print(bars_of(w100));

  const OrderWaterfall& w99 = model->slowest[2];
  EXPECT_EQ(w99.order_id, 99);
  EXPECT_EQ(w99.ranked_ns, 2089.0);
  const std::vector<Bar> expected99 = {{"md->strategy", false, 0, 990},
                                       {"strategy->gateway", false, 990, 1099},
                                       {"risk", false, 1000, 199}};
  EXPECT_EQ(bars_of(w99), expected99) << print(bars_of(w99));

  // The page draws them with these values as labels.
  const std::string html = RenderReportHtml(*model);
  const size_t first = html.find("id=\"slowest-1\"");
  const size_t second = html.find("id=\"slowest-2\"");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  const std::string svg = html.substr(first, second - first);
  EXPECT_NE(svg.find("waterfall of order 102"), std::string::npos);
  for (const char* label : {">500 ns  (order 50)<", ">1.05 µs  (order 50)<",
                            ">150 ns  (order 50)<", ">1.20 µs<", ">301 µs<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
}

TEST_F(ReportModelStoreTest, UnknownRunIsNotFound) {
  auto model = Model(99, 3);
  EXPECT_TRUE(absl::IsNotFound(model.status())) << model.status();
}

TEST_F(ReportModelStoreTest, HostileNamesFromTheStoreAreEscaped) {
  const std::string hostile_tag = "<img src=x onerror=alert(1)>";
  const std::string hostile_host = "\"><script>alert('host')</script>";
  {
    std::vector<testing::FixtureRun> runs = testing::KnownRuns();
    testing::FixtureRun& run = runs[1];
    for (store::OrderDetail& o : run.orders) {
      for (store::SampleDetail& s : o.samples) {
        if (s.stage == "risk") s.stage = hostile_tag;
      }
      for (store::StampDetail& s : o.stamps) {
        if (s.tag == "risk") s.tag = hostile_tag;
      }
    }
    run.stage_order[1] = hostile_tag;
    run.meta.host = hostile_host;
    run.meta.session = "<b>&amp;</b>";
    std::remove(path_.c_str());
    testing::WriteStore(path_, runs);
  }
  auto model = Model(std::nullopt, 100);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string html = RenderReportHtml(*model);
  EXPECT_EQ(html.find(hostile_tag), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>&amp;</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("&quot;&gt;&lt;script&gt;alert(&#39;host&#39;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&amp;amp;&lt;/b&gt;"), std::string::npos);
  // The hostile stage still gets its sections, under a safe id.
  EXPECT_NE(html.find("id=\"stage--img-src-x-onerror-alert-1---histogram\""), std::string::npos);
}

TEST_F(ReportModelStoreTest, PageHasEverySectionAndTheLossBanner) {
  auto model = Model(std::nullopt, 5);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string html = RenderReportHtml(*model);
  for (const char* id : {"run-header", "loss-banner", "breakdown", "median-stack", "stages",
                         "stage-md-to-strategy-histogram", "stage-md-to-strategy-percentiles",
                         "stage-risk-histogram", "stage-total-percentiles", "slowest", "slowest-1",
                         "slowest-5", "flags"}) {
    EXPECT_NE(html.find(absl::StrCat("id=\"", id, "\"")), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG xmlns
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(SvgTest, TickLabelsHaveUnitsAndDoNotOverlap) {
  EXPECT_EQ(FormatTickNs(0), "0");
  EXPECT_EQ(FormatTickNs(500), "500 ns");
  EXPECT_EQ(FormatTickNs(1000), "1 µs");
  EXPECT_EQ(FormatTickNs(2500), "2.5 µs");
  EXPECT_EQ(FormatTickNs(999.7), "1 µs");
  EXPECT_EQ(FormatTickNs(1.5e7), "15 ms");
  EXPECT_EQ(FormatTickNs(2e9), "2 s");
  EXPECT_EQ(FormatPercentileOfX(2), "50%");
  EXPECT_EQ(FormatPercentileOfX(10), "90%");
  EXPECT_EQ(FormatPercentileOfX(100), "99%");
  EXPECT_EQ(FormatPercentileOfX(1000), "99.9%");
  EXPECT_EQ(FormatPercentileOfX(1e4), "99.99%");
  const std::vector<AxisTick> p = PercentileAxisTicks(1e4);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p.back().label, "99.99%");

  // Eight decades squeezed into 200 px: labels thinned until none overlap.
  std::vector<AxisTick> ticks = LogLatencyTicks(1, 1e8);
  const auto px = [](double v) { return std::log10(v) * 25; };
  ThinLabels(ticks, 11, 8, px);
  double last_right = -1e9;
  int labelled = 0;
  for (const AxisTick& t : ticks) {
    if (t.label.empty()) continue;
    ++labelled;
    const double half = LabelWidthPx(t.label, 11) / 2;
    EXPECT_GE(px(t.value) - half, last_right + 8) << t.label;
    last_right = px(t.value) + half;
  }
  EXPECT_GE(labelled, 3);
  // Decades keep their labels over the 2x and 5x ticks.
  for (const AxisTick& t : ticks) {
    if (!t.label.empty()) {
      EXPECT_EQ(t.priority, 0) << t.label;
    }
  }
  // A narrow range still gets ticks.
  EXPECT_EQ(LogLatencyTicks(1100, 4400).size(), 3u);  // 2, 3 and 4 µs

  const LinearAxis lin = NiceLinearAxis(0, 12345, 8);
  EXPECT_LE(lin.ticks.size(), 9u);
  EXPECT_DOUBLE_EQ(lin.lo_ns, 0);
  EXPECT_GE(lin.hi_ns, 12345);
  EXPECT_EQ(lin.ticks[1].label, "2 µs");

  EXPECT_EQ(EscapeHtml("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

}  // namespace
}  // namespace ticktrace::view
