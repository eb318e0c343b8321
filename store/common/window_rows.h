// What every store reader does alike once it has merged a stage's interval
// histograms (store/sqlite/sqlite_reader.cc, store/clickhouse/clickhouse_reader.cc):
// a row's count, extremes and percentiles from the histogram (the one
// percentile rule, store::MinSamplesForPercentile), its named flag counts,
// the whole run's facts a window keeps (position, uncertainty), and the
// pipeline order stages are listed in. Private to the viewer library.
#ifndef TICKTRACE_VIEW_SRC_WINDOW_ROWS_H_
#define TICKTRACE_VIEW_SRC_WINDOW_ROWS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::store::internal {

// count, min, max, mean and percentiles of `row` from `h` (p999 when the
// row has one); percentiles unset below the minimum sample count.
template <typename Row>
void FillFromHistogram(const store::Histogram& h, Row* row) {
  row->count = static_cast<int64_t>(h.count());
  if (h.count() == 0) return;
  row->min_ns = h.min();
  row->max_ns = h.max();
  row->mean_ns = h.mean();
  const auto percentile = [&h](double percent) -> std::optional<double> {
    if (h.count() < store::MinSamplesForPercentile(percent)) return std::nullopt;
    return h.Quantile(percent / 100);
  };
  row->p50_ns = percentile(50);
  row->p90_ns = percentile(90);
  row->p99_ns = percentile(99);
  if constexpr (requires { row->p999_ns; }) row->p999_ns = percentile(99.9);
}

// Stages by position; those without a stage_stats row after, `total` last.
struct PipelineOrder {
  bool operator()(const StoredStageStats& a, const StoredStageStats& b) const {
    const bool ta = a.stage == store::kTotalStage, tb = b.stage == store::kTotalStage;
    if (ta != tb) return tb;
    return a.position < b.position;
  }
};

// The stage's position in the whole run's rows; those without one last.
inline int64_t PositionIn(const std::vector<StoredStageStats>& whole, const std::string& stage) {
  for (const StoredStageStats& w : whole) {
    if (w.stage == stage) return w.position;
  }
  return std::numeric_limits<int32_t>::max();
}

// Completes a window row whose stage, samples_all and flag_counts are set,
// from its merged histogram, the whole run's rows and the window's detail.
inline void FinishWindowRow(const store::Histogram& merged,
                            const std::vector<StoredStageStats>& whole,
                            const DetailCoverage& coverage, WindowStageStatsRow* row) {
  FillFromHistogram(merged, row);
  row->sum_ns = merged.sum();
  // kFlagNames order: migrated, negative, cross_core, saturated, skew,
  // out_of_order, late, cross_host (static_asserts below).
  row->migrated = row->flag_counts[0];
  row->negative = row->flag_counts[1];
  row->cross_core = row->flag_counts[2];
  row->skew = row->flag_counts[4];
  row->out_of_order = row->flag_counts[5];
  row->late = row->flag_counts[6];
  row->position = std::numeric_limits<int32_t>::max();
  for (const StoredStageStats& w : whole) {
    if (w.stage != row->stage) continue;
    row->position = w.position;
    row->include_flagged = w.include_flagged;
    row->uncertainty_ns = w.uncertainty_ns;
  }
  row->detail_complete = coverage.complete();
}
static_assert(store::kFlagNames[0].bit == store::kFlagMigrated);
static_assert(store::kFlagNames[1].bit == store::kFlagNegative);
static_assert(store::kFlagNames[2].bit == store::kFlagCrossCore);
static_assert(store::kFlagNames[4].bit == store::kFlagSkew);
static_assert(store::kFlagNames[5].bit == store::kFlagOutOfOrder);
static_assert(store::kFlagNames[6].bit == store::kFlagLate);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_WINDOW_ROWS_H_
