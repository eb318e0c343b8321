#include "viewer/html/report_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ticktrace/store/names.h"
#include "common/status_macros.h"
#include "viewer/views/percentile_report.h"
#include "viewer/cli/query.h"
#include "viewer/html/svg.h"

namespace ticktrace::view {
namespace {

// Okabe-Ito's colour-blind-safe colours first, then Tableau's muted ones.
constexpr const char* kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00",
                                    "#56b4e9", "#8c6d31", "#7570b3", "#b8a000", "#e7298a"};
constexpr char kTotalColour[] = "#5f6368";

// The lower edge of log bin k: 10^(k / bins_per_decade).
double BinEdge(int64_t k, int bins_per_decade) {
  return std::pow(10.0, static_cast<double>(k) / bins_per_decade);
}

// The log bin holding `v` (> 0), exact at the edges despite rounding in log10.
int64_t BinOf(double v, int bins_per_decade) {
  auto k = static_cast<int64_t>(std::floor(std::log10(v) * bins_per_decade));
  if (v < BinEdge(k, bins_per_decade)) --k;
  if (v >= BinEdge(k + 1, bins_per_decade)) ++k;
  return k;
}

std::vector<EnvironmentFact> ParseEnvironment(const std::string& text) {
  std::vector<EnvironmentFact> facts;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return facts;
  const auto as_text = [](const nlohmann::json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump();
  };
  for (const nlohmann::json& e : j) {
    if (!e.is_object()) continue;
    EnvironmentFact f;
    if (e.contains("name")) f.name = as_text(e["name"]);
    if (e.contains("value")) f.value = as_text(e["value"]);
    if (e.contains("meaning")) f.meaning = as_text(e["meaning"]);
    if (e.contains("warning")) {
      const nlohmann::json& w = e["warning"];
      f.warning = w.is_boolean() ? w.get<bool>() : (w.is_string() && !w.get<std::string>().empty());
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

}  // namespace

LogHistogram BuildLogHistogram(const std::vector<double>& sorted_ns, int bins_per_decade) {
  LogHistogram h;
  h.bins_per_decade = bins_per_decade;
  h.total = static_cast<int64_t>(sorted_ns.size());
  const auto first_positive = std::upper_bound(sorted_ns.begin(), sorted_ns.end(), 0.0);
  h.nonpositive = first_positive - sorted_ns.begin();
  if (first_positive == sorted_ns.end()) return h;
  const int64_t k0 = BinOf(*first_positive, bins_per_decade);
  const int64_t k1 = BinOf(sorted_ns.back(), bins_per_decade);
  for (int64_t k = k0; k <= k1; ++k) {
    h.bins.push_back({BinEdge(k, bins_per_decade), BinEdge(k + 1, bins_per_decade), 0});
  }
  for (auto it = first_positive; it != sorted_ns.end(); ++it) {
    const int64_t k = std::clamp(BinOf(*it, bins_per_decade), k0, k1);
    ++h.bins[static_cast<size_t>(k - k0)].count;
  }
  return h;
}

int BinsPerDecadeFor(double min_ns, double max_ns) {
  if (min_ns <= 0 || max_ns <= min_ns) return 40;
  const double decades = std::log10(max_ns / min_ns);
  if (decades < 1) return 40;
  if (decades < 2) return 20;
  return 10;
}

PercentileCurve BuildPercentileCurve(const std::vector<double>& sorted_ns) {
  PercentileCurve curve;
  curve.count = static_cast<int64_t>(sorted_ns.size());
  if (sorted_ns.empty()) return curve;
  curve.max_ns = sorted_ns.back();
  for (const PercentileLine& line : PercentileDistribution(sorted_ns, 5)) {
    if (line.percentile >= 1.0) continue;
    curve.points.push_back({line.percentile, 1.0 / (1.0 - line.percentile), line.value_ns});
  }
  // Every value equal (or one sample): the distribution is one point, at p0.
  if (curve.points.empty()) curve.points.push_back({0, 1, sorted_ns.front()});
  curve.x_max = std::max(100.0, CeilPowerOfTen(static_cast<double>(curve.count)));
  return curve;
}

MedianStack BuildMedianStack(const Summary& summary, const std::string& pipeline) {
  std::set<std::string> pairs;
  const std::vector<std::string> tags = absl::StrSplit(pipeline, ',', absl::SkipWhitespace());
  for (size_t i = 0; i + 1 < tags.size(); ++i) {
    pairs.insert(absl::StrCat(absl::StripAsciiWhitespace(tags[i]), "->",
                              absl::StripAsciiWhitespace(tags[i + 1])));
  }
  const bool pipeline_matches =
      std::any_of(summary.stages.begin(), summary.stages.end(),
                  [&](const SummaryStage& s) { return pairs.count(s.stage) > 0; });
  MedianStack stack;
  for (const SummaryStage& s : summary.stages) {
    if (s.stage == store::kTotalStage) {
      stack.total_p50_ns = s.stats.p50_ns;
      continue;
    }
    const bool in_pipeline =
        pipeline_matches ? pairs.count(s.stage) > 0 : s.stage.find("->") != std::string::npos;
    if (!in_pipeline || !s.stats.p50_ns.has_value()) {
      stack.left_out.push_back(s.stage);
      continue;
    }
    const double width = std::max(0.0, *s.stats.p50_ns);
    stack.segments.push_back({s.stage, stack.sum_ns, width});
    stack.sum_ns += width;
  }
  return stack;
}

OrderWaterfall BuildOrderWaterfall(const SlowOrder& slow,
                                   const std::vector<store::SampleRow>& parent_samples) {
  OrderWaterfall w;
  w.order_id = slow.order.order_id;
  w.parent_order_id = slow.order.parent_order_id;
  w.ranked_ns = slow.latency_ns;
  w.ranked_flags = slow.flags;
  w.complete = slow.order.complete;
  w.missing = slow.order.missing;
  int64_t t0 = slow.order.first_utc_ns;
  const auto earliest = [&](const std::vector<store::SampleRow>& samples) {
    for (const store::SampleRow& s : samples) {
      if (t0 == 0 || s.start_utc_ns < t0) t0 = s.start_utc_ns;
    }
  };
  earliest(slow.samples);
  earliest(parent_samples);
  w.first_utc_ns = t0;
  // The parent's first: on equal starts its stages come earlier in the pipeline.
  for (const store::SampleRow& s : parent_samples) {
    if (s.stage == store::kTotalStage) continue;
    w.bars.push_back({s.stage, static_cast<double>(s.start_utc_ns - t0), s.latency_ns, s.flags,
                      /*linked=*/true});
  }
  for (const store::SampleRow& s : slow.samples) {
    if (s.stage == store::kTotalStage) {
      w.total_ns = s.latency_ns;
      w.total_offset_ns = static_cast<double>(s.start_utc_ns - t0);
      continue;
    }
    w.bars.push_back({s.stage, static_cast<double>(s.start_utc_ns - t0), s.latency_ns, s.flags,
                      /*linked=*/false});
  }
  // Stamp order; samples arrive in pipeline order, which breaks ties.
  std::stable_sort(w.bars.begin(), w.bars.end(), [](const WaterfallBar& a, const WaterfallBar& b) {
    return a.offset_ns < b.offset_ns;
  });
  double span = w.total_offset_ns + std::max(0.0, w.total_ns.value_or(0));
  for (const WaterfallBar& b : w.bars) {
    span = std::max(span, b.offset_ns + std::max(0.0, b.latency_ns));
  }
  w.span_ns = std::max(span, 1.0);
  return w;
}

std::string StageSlug(const std::string& stage) {
  std::string slug;
  for (size_t i = 0; i < stage.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(stage[i]);
    if (c == '-' && i + 1 < stage.size() && stage[i + 1] == '>') {
      slug += "-to-";
      ++i;
    } else if (std::isalnum(c) || c == '_' || c == '-') {
      slug += static_cast<char>(c);
    } else {
      slug += '-';
    }
  }
  return slug.empty() ? "unnamed" : slug;
}

std::string StageColour(size_t index) {
  return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

const std::vector<std::pair<std::string, std::string>>& LossCounterMeanings() {
  // Every way a record, an order's detail or a segment can be lost, with the
  // schema owner's wording (store/common/names.cc).
  static const auto* meanings = [] {
    using store::Counter;
    auto* m = new std::vector<std::pair<std::string, std::string>>;
    for (Counter c :
         {Counter::kDropped, Counter::kMalformed, Counter::kSamplesNotStored,
          Counter::kStampsNotStored, Counter::kOrdersNotStored, Counter::kMalformedChunks,
          Counter::kJournalChunksCorrupt, Counter::kUnattributed, Counter::kIndexGaps,
          Counter::kSegmentsCorrupt, Counter::kSegmentsForeign, Counter::kSegmentsUnreadable,
          Counter::kSegmentsOversized, Counter::kSegmentsTruncated,
          Counter::kRecordsInRefusedSegments, Counter::kSlotsCorrupt, Counter::kTagsRejected,
          Counter::kThreadsWithoutSlot, Counter::kSlotlessDropped}) {
      const store::CounterInfo& info = store::kCounters[static_cast<size_t>(c)];
      m->emplace_back(std::string(info.name), std::string(info.meaning));
    }
    return m;
  }();
  return *meanings;
}

namespace {

// A stage's histogram and percentile curve from every stored sample the
// query selects; returns how many samples were read (flagged ones too).
absl::StatusOr<int64_t> PlotStoredSamples(store::StoreReader& store, const QueryOptions& query,
                                          StagePlots* plots) {
  TICKTRACE_ASSIGN_OR_RETURN(StageValues values, CollectStageValues(store, query));
  plots->excluded_flagged = values.excluded;
  const auto first_positive =
      std::upper_bound(values.sorted_ns.begin(), values.sorted_ns.end(), 0.0);
  const int bins_per_decade = first_positive == values.sorted_ns.end()
                                  ? 10
                                  : BinsPerDecadeFor(*first_positive, values.sorted_ns.back());
  plots->histogram = BuildLogHistogram(values.sorted_ns, bins_per_decade);
  plots->percentiles = BuildPercentileCurve(values.sorted_ns);
  return static_cast<int64_t>(values.sorted_ns.size()) + values.excluded;
}

}  // namespace

absl::StatusOr<ReportModel> BuildReportModel(store::StoreReader& store, std::optional<int64_t> run_id,
                                             int64_t slowest,
                                             const std::optional<TimeArg>& since,
                                             const std::optional<TimeArg>& until) {
  ReportModel model;
  model.store_path = store.path();
  QueryOptions query;
  query.run_id = run_id;
  query.since = since;
  query.until = until;
  // The plots read every stored sample anyway: where those are every order
  // the breakdown is exact from them too; where the detail is sampled it is
  // the intervals' merge, which counts every order (and the page says so).
  TICKTRACE_ASSIGN_OR_RETURN(const store::RunRow run_info, store.GetRun(run_id));
  store::TimeWindow window;
  if (since.has_value() || until.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(const ResolvedQuery resolved, ResolveQuery(store, query));
    window = resolved.window;
  }
  TICKTRACE_ASSIGN_OR_RETURN(const store::DetailCoverage coverage,
                             store.DetailCompleteness(run_info.run_id, window));
  query.run_id = run_info.run_id;
  query.exact = coverage.complete();
  TICKTRACE_ASSIGN_OR_RETURN(model.summary, BuildSummary(store, query));
  const store::RunRow& run = model.summary.run;
  model.environment = ParseEnvironment(run.environment);
  for (const auto& [name, meaning] : LossCounterMeanings()) {
    if (const int64_t v = CounterValue(model.summary, name); v > 0) {
      model.losses.push_back({name, v, meaning});
    }
  }
  model.stack = BuildMedianStack(model.summary, run.pipeline);

  std::set<std::string> slugs;
  size_t colour_index = 0;
  bool has_total = false;
  for (const SummaryStage& row : model.summary.stages) {
    StagePlots plots;
    plots.stage = row.stage;
    plots.slug = StageSlug(row.stage);
    for (int n = 2; slugs.count(plots.slug) > 0; ++n) {
      plots.slug = absl::StrCat(StageSlug(row.stage), "-", n);
    }
    slugs.insert(plots.slug);
    if (row.stage == store::kTotalStage) {
      has_total = true;
      plots.colour = kTotalColour;
    } else {
      plots.colour = StageColour(colour_index++);
    }
    QueryOptions stage_query;
    stage_query.run_id = run.run_id;
    stage_query.stage = row.stage;
    stage_query.include_flagged = model.summary.include_flagged;
    stage_query.since = since;
    stage_query.until = until;
    TICKTRACE_ASSIGN_OR_RETURN(const int64_t read, PlotStoredSamples(store, stage_query, &plots));
    model.samples_stored += read;
    model.stages.push_back(std::move(plots));
  }

  if (has_total) {
    TICKTRACE_ASSIGN_OR_RETURN(SlowestReport report,
                               FindSlowestOrders(store, run.run_id, std::string(store::kTotalStage),
                                                 std::max<int64_t>(1, slowest), since, until));
    model.slowest_stage = report.stage;
    for (const SlowOrder& slow : report.orders) {
      model.slowest.push_back(BuildOrderWaterfall(slow, slow.parent_samples));
    }
  }
  TICKTRACE_ASSIGN_OR_RETURN(model.time,
                             BuildTimeAxis(store, run, window, model.stages, model.stack,
                                           kSlowestPerInterval));
  return model;
}

}  // namespace ticktrace::view
