// `ticktrace-view intervals`: a run's statistics over time. Per stage, one
// row per interval (runs.interval_ns) or per coarser bucket (--every), with
// count, p50, p99, max and the flagged samples, merged from the stored
// interval histograms (store::StoreReader::Intervals), for the whole run or the
// --since/--until window. Text table or the JSON object of docs/viewer.md.
#ifndef TICKTRACE_VIEW_INTERVALS_REPORT_H_
#define TICKTRACE_VIEW_INTERVALS_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "viewer/cli/query.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// The interval length a run's statistics have when the backend does not say
// (store::RunRow::interval_ns == 0): the collector's default, 1 s.
inline constexpr int64_t kDefaultIntervalNs = 1'000'000'000;

// What BuildIntervals found.
struct IntervalsReport {
  store::RunRow run;
  int64_t interval_ns = 0;  // the run's interval
  int64_t bucket_ns = 0;    // the rows' bucket (interval_ns unless --every)
  store::TimeWindow window;        // [since, until) of the intervals' starts; unset: open
  std::string filters;      // the filters in words; empty when none
  bool include_flagged = false;  // the run's own rule (its histograms hold it)
  // By stage (pipeline order, total last), then time; empty buckets left out.
  std::vector<store::IntervalRow> rows;
};

// The rows of the run `options` names (run, stage, since, until; --process,
// --exact and a flag rule other than the run's are InvalidArgument: interval
// statistics hold the run's own). `every_ns` unset: one row per interval;
// else InvalidArgument unless it is a positive multiple of the run's interval.
absl::StatusOr<IntervalsReport> BuildIntervals(store::StoreReader& store, const QueryOptions& options,
                                               std::optional<int64_t> every_ns);

// Per stage a table: bucket start (UTC), count, p50, p99, max, flagged
// (samples kept out of the percentiles) and the bucket's orders with detail.
std::string RenderIntervalsText(const IntervalsReport& report);

// One JSON object (docs/viewer.md, "intervals --json").
std::string RenderIntervalsJson(const IntervalsReport& report);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_INTERVALS_REPORT_H_
