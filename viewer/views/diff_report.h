// `ticktrace-view diff`: two runs, two windows of one run, or runs of two
// stores, stage by stage: count, p50/p99/p99.9 before -> after, the change in
// %, and whether the change is real. "Before" is the baseline (--against,
// --against-since/--against-until, --against-db/--against-store), "after"
// the run the usual flags name.
//
// Both sides come from the stored interval histograms (merged over each
// side's window: store::StoreReader::StageWindowStats), so every order counts
// whatever detail the store kept. A change is significant when it exceeds
// both (JudgeChange):
//   precision  |after - before| > e * (|before| + |after|), e = 1/256: each
//              histogram percentile is within e of its true value
//              (store/include/ticktrace/store/histogram.h), so smaller changes may be the
//              histograms' rounding;
//   noise      |after - before| > 2 * sqrt(sd_b^2 / n_b + sd_a^2 / n_a), where
//              sd is the sample standard deviation of the percentile over a
//              side's n intervals (or --every buckets) that have enough
//              samples for it: how much the percentile moves from interval to
//              interval by itself, scaled to the whole window (the standard
//              error of a mean of n), two of them (about 95%). Unknown (null)
//              with fewer than 2 such intervals on a side.
#ifndef TICKTRACE_VIEW_DIFF_REPORT_H_
#define TICKTRACE_VIEW_DIFF_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "viewer/cli/query.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// The histograms' relative error (store/include/ticktrace/store/histogram.h: a bucket's
// midpoint is within 1/256 of every value in it).
inline constexpr double kHistogramRelativeError = 1.0 / 256;
// How many standard errors a change must exceed to be beyond the noise.
inline constexpr double kNoiseStandardErrors = 2.0;

// One percentile before and after, judged.
struct ChangeVerdict {
  std::optional<double> before_ns, after_ns;  // unset: too few samples on that side
  std::optional<double> change_pct;     // 100 * (after - before) / |before|; unset if before is 0
  std::optional<double> precision_ns;   // e * (|before| + |after|)
  std::optional<double> noise_ns;       // 2 * the standard error; unset: too few intervals
  std::optional<bool> beyond_precision;
  std::optional<bool> beyond_noise;
  bool significant = false;  // beyond both (false when either is unknown)
};

// Judges one percentile: `before_ns`/`after_ns` are the whole windows'
// values, `before_intervals`/`after_intervals` the same percentile of each
// interval (or bucket) of the window that has one. Pure; any thread.
ChangeVerdict JudgeChange(std::optional<double> before_ns, std::optional<double> after_ns,
                          const std::vector<double>& before_intervals,
                          const std::vector<double>& after_intervals);

// One side of the comparison.
struct DiffSide {
  std::string store;  // the store's path or URI
  store::RunRow run;
  store::TimeWindow window;  // intervals by their start; unset ends do not limit
  std::string filters;  // the window in words; empty: the whole run
  int64_t bucket_ns = 0;  // the noise's unit: the run's interval, or --every
  int64_t buckets = 0;    // buckets with samples (any stage)
  std::vector<store::WindowStageStatsRow> stages;  // pipeline order, total last
  // Per stage, its buckets in time order.
  std::map<std::string, std::vector<store::IntervalRow>> intervals;
};

// One stage's comparison.
struct StageDiff {
  std::string stage;
  int64_t count_before = 0, count_after = 0;  // samples in the percentiles
  ChangeVerdict p50, p99, p999;
};

struct DiffReport {
  DiffSide before, after;
  // The after side's stages in its order, then stages only the before side
  // has; total last.
  std::vector<StageDiff> stages;
};

// Reads one side: the run, stage and window `options` names (--process and
// --exact are InvalidArgument: the comparison is of interval histograms;
// so is a flag rule other than the run's), bucketed by `every_ns` (unset:
// the run's interval; else a positive multiple of it).
absl::StatusOr<DiffSide> ReadDiffSide(store::StoreReader& store, const QueryOptions& options,
                                      std::optional<int64_t> every_ns);

// Compares two sides (BuildDiff's second half; pure).
DiffReport CompareSides(DiffSide before, DiffSide after);

// The text: a header naming both sides and the rule, then one row per stage.
std::string RenderDiffText(const DiffReport& report);
// One JSON object (docs/viewer.md, "diff --json").
std::string RenderDiffJson(const DiffReport& report);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_DIFF_REPORT_H_
