// The report's model: the numbers that go into each plot (report_model.h),
// on hand-made inputs and on the viewer's known store (store_fixture.h), and
// the escaping of hostile names in the rendered page.
#include "ticktrace/view/report_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "gtest/gtest.h"
#include "store_fixture.h"
#include "ticktrace/view/store.h"
#include "ticktrace/view/svg.h"

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
    SampleRow s;
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
    StageSummary s;
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
  std::unique_ptr<Store> Open() {
    auto store = Store::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  testing::TempDir dir_;
  std::string path_;
};

TEST_F(ReportModelStoreTest, PlotsHoldTheStageCounts) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto model = BuildReportModel(*store, std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->summary.run.run_id, KnownStore::kLatestRun);
  ASSERT_EQ(model->stages.size(), model->summary.stages.size());
  ASSERT_EQ(model->stages.size(), 4u);
  for (size_t i = 0; i < model->stages.size(); ++i) {
    const StagePlots& p = model->stages[i];
    const StageSummary& s = model->summary.stages[i];
    EXPECT_EQ(p.stage, s.stage);
    // The histogram holds exactly the samples the summary counted.
    EXPECT_EQ(SumOfBins(p.histogram) + p.histogram.nonpositive, s.stats.count) << p.stage;
    EXPECT_EQ(p.histogram.total, s.stats.count) << p.stage;
    EXPECT_EQ(p.percentiles.count, s.stats.count) << p.stage;
    if (s.stats.max_ns.has_value()) {
      EXPECT_DOUBLE_EQ(p.percentiles.max_ns, *s.stats.max_ns) << p.stage;
    }
  }
  EXPECT_EQ(model->stages.back().stage, "total");
  // Distinct colours for the stages.
  EXPECT_NE(model->stages[0].colour, model->stages[1].colour);
  EXPECT_NE(model->stages[1].colour, model->stages[2].colour);

  // The stacked bar: the pipeline's two stages, not the span.
  ASSERT_EQ(model->stack.segments.size(), 2u);
  EXPECT_EQ(model->stack.segments[0].stage, "md->strategy");
  EXPECT_EQ(model->stack.segments[1].stage, "strategy->gateway");
  EXPECT_DOUBLE_EQ(model->stack.sum_ns,
                   *model->summary.stages[0].stats.p50_ns + *model->summary.stages[2].stats.p50_ns);
  EXPECT_EQ(model->stack.left_out, std::vector<std::string>{"risk"});

  // The known store lost data: both loss counters are reported.
  ASSERT_EQ(model->losses.size(), 2u);
  EXPECT_EQ(model->losses[0].name, "dropped");
  EXPECT_EQ(model->losses[0].value, 3);
  EXPECT_EQ(model->losses[1].name, "malformed");
}

TEST_F(ReportModelStoreTest, WaterfallsAreTheSlowestOrdersFromTheirFirstStamp) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto model = BuildReportModel(*store, std::nullopt, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->slowest.size(), 3u);
  int linked_orders = 0;
  for (size_t i = 0; i < model->slowest.size(); ++i) {
    const OrderWaterfall& w = model->slowest[i];
    if (i > 0) {
      EXPECT_LE(w.ranked_ns, model->slowest[i - 1].ranked_ns);
    }
    ASSERT_FALSE(w.bars.empty());
    EXPECT_DOUBLE_EQ(w.bars.front().offset_ns, 0) << "order " << w.order_id;
    for (size_t b = 1; b < w.bars.size(); ++b) {
      EXPECT_GE(w.bars[b].offset_ns, w.bars[b - 1].offset_ns) << "order " << w.order_id;
    }
    ASSERT_TRUE(w.total_ns.has_value());
    EXPECT_DOUBLE_EQ(*w.total_ns, w.ranked_ns);
    // The bars are the order's samples (and its parent's, for a linked
    // order) as the store has them, placed from the earliest stamp.
    const auto check = [&](int64_t order_id, bool linked) {
      auto samples = store->SamplesOfOrder(KnownStore::kLatestRun, order_id);
      ASSERT_TRUE(samples.ok());
      size_t expected = 0;
      for (const SampleRow& s : *samples) {
        if (s.stage == "total") continue;
        ++expected;
        const auto it = std::find_if(w.bars.begin(), w.bars.end(), [&](const WaterfallBar& bar) {
          return bar.stage == s.stage && bar.linked == linked;
        });
        ASSERT_NE(it, w.bars.end()) << s.stage;
        EXPECT_DOUBLE_EQ(it->offset_ns, static_cast<double>(s.start_utc_ns - w.first_utc_ns));
        EXPECT_DOUBLE_EQ(it->latency_ns, s.latency_ns);
      }
      EXPECT_EQ(static_cast<size_t>(
                    std::count_if(w.bars.begin(), w.bars.end(),
                                  [&](const WaterfallBar& bar) { return bar.linked == linked; })),
                expected);
    };
    check(w.order_id, false);
    if (w.parent_order_id.has_value()) {
      ++linked_orders;
      check(*w.parent_order_id, true);
    } else {
      EXPECT_DOUBLE_EQ(w.total_offset_ns, 0);
    }
  }
  // Order 102 (linked to 50) is among the slowest: its parent's stages count.
  EXPECT_EQ(linked_orders, 1);
}

TEST_F(ReportModelStoreTest, UnknownRunIsNotFound) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto model = BuildReportModel(*store, 99, 3);
  EXPECT_TRUE(absl::IsNotFound(model.status())) << model.status();
}

TEST_F(ReportModelStoreTest, HostileNamesFromTheStoreAreEscaped) {
  const std::string hostile_tag = "<img src=x onerror=alert(1)>";
  const std::string hostile_host = "\"><script>alert('host')</script>";
  {
    testing::StoreWriter w(path_, /*schema_version=*/0);
    for (const char* table : {"samples", "stage_stats"}) {
      w.Exec(
          absl::StrCat("UPDATE ", table, " SET stage = '", hostile_tag, "' WHERE stage = 'risk'"));
    }
    w.Exec(
        "UPDATE runs SET host = '\"><script>alert(''host'')</script>', "
        "session = '<b>&amp;</b>' WHERE run_id = 2");
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto model = BuildReportModel(*store, std::nullopt, 100);
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
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto model = BuildReportModel(*store, std::nullopt, 5);
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
