// What every store reader does alike once it has merged a stage's interval
// histograms (store/sqlite/sqlite_reader.cc, store/clickhouse/clickhouse_reader.cc):
// a row's count, extremes and percentiles from the histogram (the one
// percentile rule, store::MinSamplesForPercentile), the whole run's facts a
// window keeps (position, uncertainty), and the pipeline order stages are
// listed in. Private to the store library.
#ifndef TICKTRACE_STORE_COMMON_WINDOW_ROWS_H_
#define TICKTRACE_STORE_COMMON_WINDOW_ROWS_H_

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
  bool operator()(const StageStatsRow& a, const StageStatsRow& b) const {
    const bool ta = a.stage == store::kTotalStage, tb = b.stage == store::kTotalStage;
    if (ta != tb) return tb;
    return a.position < b.position;
  }
};

// The stage's position in the whole run's rows; those without one last.
inline int64_t PositionIn(const std::vector<StageStatsRow>& whole, const std::string& stage) {
  for (const StageStatsRow& w : whole) {
    if (w.stage == stage) return w.position;
  }
  return std::numeric_limits<int32_t>::max();
}

// Completes a window row whose stage, samples_all and flag_counts are set,
// from its merged histogram, the whole run's rows and the window's detail.
inline void FinishWindowRow(const store::Histogram& merged,
                            const std::vector<StageStatsRow>& whole,
                            const DetailCoverage& coverage, WindowStageStatsRow* row) {
  FillFromHistogram(merged, row);
  row->sum_ns = merged.sum();
  row->position = std::numeric_limits<int32_t>::max();
  for (const StageStatsRow& w : whole) {
    if (w.stage != row->stage) continue;
    row->position = w.position;
    row->include_flagged = w.include_flagged;
    row->uncertainty_ns = w.uncertainty_ns;
  }
  row->detail_complete = coverage.complete();
}

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_COMMON_WINDOW_ROWS_H_
