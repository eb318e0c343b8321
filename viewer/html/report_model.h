// The numbers behind `ticktrace-view report` (report.h): everything the HTML
// draws is computed here first, so that tests can check the plots' data
// without parsing SVG.
//
//   BuildReportModel(store)          one query pass per section, no SQL here:
//     Summary (summary.h)            header, counters, the breakdown table
//     CollectStageValues per stage   -> LogHistogram, PercentileCurve
//     FindSlowestOrders (waterfall.h)-> OrderWaterfall
//     Intervals, FindSlowest per bucket -> TimeAxis (report_time_model.cc)
//   RenderReportHtml(model)          the page (report_html.cc), pure
//
// The builders below the model are pure functions of their inputs.
#ifndef TICKTRACE_VIEW_REPORT_MODEL_H_
#define TICKTRACE_VIEW_REPORT_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "viewer/hosts/stitched_views.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"
#include "viewer/cli/time_arg.h"
#include "viewer/views/waterfall.h"

namespace ticktrace::view {

// --- Histograms -------------------------------------------------------------

// One bin of a log-scaled histogram: values in [lo_ns, hi_ns).
struct HistogramBin {
  double lo_ns = 0;
  double hi_ns = 0;
  int64_t count = 0;
};

// A histogram on a log latency axis. A log axis has no place for zero or
// negative latencies (a cross-core difference can be negative): they are
// counted apart, so that nothing is silently lost.
struct LogHistogram {
  std::vector<HistogramBin> bins;  // contiguous, ascending, equal width in log10
  int64_t nonpositive = 0;         // values <= 0
  int64_t total = 0;               // every value: sum of bins + nonpositive
  int bins_per_decade = 0;
};

// Bins `sorted_ns` with bin edges at 10^(k / bins_per_decade) ns, from the
// bin of the smallest positive value to the bin of the largest. Empty bins
// inside the range are kept (count 0). REQUIRES: sorted_ns ascending,
// bins_per_decade >= 1.
LogHistogram BuildLogHistogram(const std::vector<double>& sorted_ns, int bins_per_decade);

// The bins per decade for a stage whose positive values span
// [min_ns, max_ns]: finer for a narrow distribution, so it gets more than a
// handful of bars (10, 20 or 40).
int BinsPerDecadeFor(double min_ns, double max_ns);

// --- Percentile plots -----------------------------------------------------------

// One point of an HdrHistogram-style percentile plot.
struct PercentilePoint {
  double percentile = 0;  // 0 <= p < 1
  double x = 1;           // 1 / (1 - p)
  double value_ns = 0;
};

// The percentile curve of one stage: PercentileDistribution's levels (5
// ticks per half distance), without the 100% line (x would be infinite),
// which is kept as max_ns. When every value is the maximum (one sample, or
// all equal) the curve is the single point p0.
struct PercentileCurve {
  std::vector<PercentilePoint> points;  // percentile and value ascending
  double max_ns = 0;
  int64_t count = 0;
  // The right end of the x axis: the power of ten at or above `count` (the
  // largest 1/(1-p) a sample count can resolve), at least 100 (p99).
  double x_max = 100;
};

// REQUIRES: sorted_ns ascending.
PercentileCurve BuildPercentileCurve(const std::vector<double>& sorted_ns);

// --- The stacked bar of medians -----------------------------------------------

// One stage's segment of the stacked bar: [offset_ns, offset_ns + width_ns).
struct StackSegment {
  std::string stage;
  double offset_ns = 0;
  double width_ns = 0;  // the stage's p50 (negative medians count as 0)
};

// The medians of the pipeline's stages (consecutive tag pairs "a->b", which
// add up to the total) laid end to end. Spans and other stages run inside
// those and would count twice, so they are listed in `left_out`.
struct MedianStack {
  std::vector<StackSegment> segments;  // pipeline order
  double sum_ns = 0;                   // sum of widths = end of the last segment
  std::optional<double> total_p50_ns;  // the `total` stage's own median
  std::vector<std::string> left_out;
};

// The stacked bar for `summary`'s stages. `pipeline` is runs.pipeline
// ("a,b,c"); when it names no stage of the summary, every stage with "->"
// in its name is stacked instead.
MedianStack BuildMedianStack(const Summary& summary, const std::string& pipeline);

// --- Waterfalls -----------------------------------------------------------------

// One stage of one order: a bar from offset_ns to offset_ns + latency_ns,
// with 0 at the order's first stamp.
struct WaterfallBar {
  std::string stage;
  double offset_ns = 0;
  double latency_ns = 0;  // may be negative (drawn as a marker)
  uint32_t flags = 0;
  bool linked = false;  // a stage of the order this one is linked to (its parent)
};

// One of the slowest orders, ready to draw.
struct OrderWaterfall {
  int64_t order_id = 0;
  std::optional<int64_t> parent_order_id;
  int64_t first_utc_ns = 0;
  double ranked_ns = 0;  // the latency that ranked it
  uint32_t ranked_flags = 0;
  bool complete = false;
  std::string missing;
  std::vector<WaterfallBar> bars;  // stamp order (start, then pipeline order)
  std::optional<double> total_ns;  // the `total` sample, drawn apart
  double total_offset_ns = 0;      // where the `total` sample starts
  double span_ns = 0;              // the axis: end of the latest bar, >= total
};

// The waterfall of `slow`: its samples as bars relative to its first stamp
// (the earliest of the order's first_utc_ns and its samples' starts), the
// `total` sample apart. A linked order's total starts at its parent's first
// stamp, so `parent_samples` (the parent's samples, may be empty) are drawn
// too, marked `linked`; the parent's own total is left out.
OrderWaterfall BuildOrderWaterfall(const SlowOrder& slow,
                                   const std::vector<store::SampleRow>& parent_samples = {});

// --- Latency over time (the interval statistics) --------------------------------

// One stage in one bucket of time (store::IntervalRow's numbers).
struct TimePoint {
  int64_t start_utc_ns = 0;
  int64_t count = 0;
  std::optional<double> p50_ns, p99_ns, max_ns, mean_ns;
};

// One stage over the run: a point per bucket with samples, by time.
struct StageOverTime {
  std::string stage;
  std::string slug;    // for element ids: time-<slug>
  std::string colour;  // the stage's colour in every plot
  std::vector<TimePoint> points;
};

// One bucket of the run: what it holds beside the latencies, and its
// slowest orders (the report lists them under `anchor`).
struct TimeBucket {
  int64_t start_utc_ns = 0;
  int64_t flagged = 0;  // flagged samples, every stage (view::FlaggedSamples)
  int64_t orders = 0;   // orders that finished in it (by first stamp)
  int64_t orders_kept = 0;
  bool detail_deleted = false;
  std::string anchor;   // "interval-<k>"
  std::optional<double> ranked_max_ns;  // the ranking stage's max in the bucket
  std::vector<store::RankedOrder> slowest;     // by the ranking stage, slowest first
  // Not every order of the bucket has its detail (policy tail, or retention).
  bool sampled() const { return orders_kept < orders || detail_deleted; }
};

// The run (or window) over time. Buckets are the run's intervals, or a
// multiple of them so that there are at most kMaxTimeBuckets.
struct TimeAxis {
  static constexpr int64_t kMaxTimeBuckets = 120;
  int64_t bucket_ns = 0;
  std::string ranked_stage {store::kTotalStage};  // what orders and spikes are ranked by
  std::vector<StageOverTime> stages;       // the summary's order, total last
  std::vector<TimeBucket> buckets;         // by time; only buckets with samples
  // The pipeline stages the band stacks (MedianStack's segments), in order.
  std::vector<std::string> stacked;
};

struct StagePlots;

// How many slowest orders the report lists per bucket of time.
inline constexpr int64_t kSlowestPerInterval = 3;

// Reads the run's intervals in `window` (every stage of `stages`, their
// colours and slugs kept) and the `slowest` slowest orders of each bucket.
// A run with no interval length (older stores) gives an empty axis.
absl::StatusOr<TimeAxis> BuildTimeAxis(store::StoreReader& store, const store::RunRow& run,
                                       const store::TimeWindow& window,
                                       const std::vector<StagePlots>& stages,
                                       const MedianStack& stack, int64_t slowest);

// --- The report -----------------------------------------------------------------

// One environment fact of the run (runs.environment).
struct EnvironmentFact {
  std::string name;
  std::string value;
  std::string meaning;
  bool warning = false;
};

// A loss counter with a value above zero.
struct LossCounter {
  std::string name;
  int64_t value = 0;
  std::string meaning;
};

// One stage's plots.
struct StagePlots {
  std::string stage;
  std::string slug;    // for element ids: stage-<slug>-histogram
  std::string colour;  // "#rrggbb", from a fixed palette; `total` is grey
  LogHistogram histogram;
  PercentileCurve percentiles;
  int64_t excluded_flagged = 0;  // flagged samples kept out (as the summary)
};

struct ReportModel {
  std::string store_path;
  Summary summary;  // the run, counters, the breakdown rows (total last)
  std::vector<EnvironmentFact> environment;
  std::vector<LossCounter> losses;  // counters > 0 that mean lost data
  int64_t samples_stored = 0;       // samples the plots were drawn from
  MedianStack stack;
  std::vector<StagePlots> stages;  // the summary's order
  std::string slowest_stage {store::kTotalStage};
  std::vector<OrderWaterfall> slowest;
  TimeAxis time;  // latency over time, from the interval statistics
  // report --hosts: the orders stitched across hosts (stitched_views.h).
  std::optional<CrossHostReport> cross_host;
};

// An id-safe form of a stage name: letters, digits, '_' and '-' kept, "->"
// becomes "-to-", anything else '-'. "md->strategy" -> "md-to-strategy".
std::string StageSlug(const std::string& stage);

// The colour of the i-th stage (a fixed palette of 10, distinguishable by
// colour-blind readers too; then it repeats).
std::string StageColour(size_t index);

// The counters that mean lost or unusable data, with their meaning.
const std::vector<std::pair<std::string, std::string>>& LossCounterMeanings();

// Reads everything the report shows of run `run_id` (latest when unset):
// `slowest` waterfalls (>= 1). With `since`/`until` (--since/--until), only
// the window: the breakdown, the plots and the slowest orders alike.
// NotFound for an unknown run. Read-only.
absl::StatusOr<ReportModel> BuildReportModel(store::StoreReader& store, std::optional<int64_t> run_id,
                                             int64_t slowest,
                                             const std::optional<TimeArg>& since = std::nullopt,
                                             const std::optional<TimeArg>& until = std::nullopt);

// The report page: one HTML document with inline CSS and SVG, no script.
std::string RenderReportHtml(const ReportModel& model);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_REPORT_MODEL_H_
