// `ticktrace-view percentiles`: one stage's latency distribution in the
// text format of HdrHistogram's outputPercentileDistribution (columns Value,
// Percentile, TotalCount, 1/(1-Percentile); "#[...]" footer lines), so the
// output can go straight into HdrHistogram's plotting tools.
#ifndef TICKTRACE_VIEW_PERCENTILE_REPORT_H_
#define TICKTRACE_VIEW_PERCENTILE_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "viewer/cli/query.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// The unit of the Value column.
enum class ValueUnit { kNanoseconds, kMicroseconds, kMilliseconds };

// One line of the distribution.
struct PercentileLine {
  double value_ns = 0;
  double percentile = 0;  // 0..1
  int64_t total_count = 0;  // values <= value_ns
};

// The percentile levels HdrHistogram reports with `ticks_per_half_distance`
// ticks per halving of the distance to 100%: 0, 10, ..., 50, 55, ..., 75,
// 77.5, ... The last line is always 100% (percentile 1). REQUIRES: sorted_ns
// ascending, ticks_per_half_distance >= 1.
std::vector<PercentileLine> PercentileDistribution(const std::vector<double>& sorted_ns,
                                                   int ticks_per_half_distance);

// The distribution text for `sorted_ns`; `label` goes into a footer line.
std::string RenderPercentileDistribution(const std::vector<double>& sorted_ns, ValueUnit unit,
                                         const std::string& label);

// One stage's latencies, as CollectStageValues finds them.
struct StageValues {
  store::RunRow run;
  std::vector<double> sorted_ns;  // ascending
  int64_t excluded = 0;           // flagged samples kept out
  bool include_flagged = false;   // as resolved (QueryOptions::include_flagged)
  // How much of the window's detail the values come from: not every order's
  // when !detail.complete() ("detail sampled").
  store::DetailCoverage detail;
};

// The values of the stage that `options` names (required), with the same
// filters and flag rule as summary. InvalidArgument without a stage.
absl::StatusOr<StageValues> CollectStageValues(store::StoreReader& store, const QueryOptions& options);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_PERCENTILE_REPORT_H_
