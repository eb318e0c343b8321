// BuildTimeAxis: the report's latency-over-time data (report_model.h), from
// the interval statistics (store::StoreReader::Intervals) and, per bucket, the
// slowest orders (store::StoreReader::FindSlowest with the bucket as window).
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "viewer/html/report_model.h"
#include "viewer/views/flag_words.h"

namespace ticktrace::view {

absl::StatusOr<TimeAxis> BuildTimeAxis(store::StoreReader& store, const store::RunRow& run,
                                       const store::TimeWindow& window,
                                       const std::vector<StagePlots>& stages,
                                       const MedianStack& stack, int64_t slowest) {
  TimeAxis axis;
  for (const StackSegment& seg : stack.segments) axis.stacked.push_back(seg.stage);
  if (run.interval_ns <= 0 || stages.empty()) return axis;
  // The run's extent in intervals, from the run's own intervals (one stage).
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::IntervalRow> probe,
                             store.Intervals(run.run_id, stages.back().stage, window,
                                             run.interval_ns));
  if (probe.empty()) return axis;
  const int64_t intervals =
      (probe.back().start_utc_ns - probe.front().start_utc_ns) / run.interval_ns + 1;
  const int64_t per_bucket = (intervals + TimeAxis::kMaxTimeBuckets - 1) / TimeAxis::kMaxTimeBuckets;
  axis.bucket_ns = run.interval_ns * std::max<int64_t>(1, per_bucket);

  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::IntervalRow> rows,
                             store.Intervals(run.run_id, std::nullopt, window, axis.bucket_ns));
  std::map<std::string, const StagePlots*> plots_of;
  for (const StagePlots& p : stages) plots_of[p.stage] = &p;
  std::map<std::string, StageOverTime> over_time;
  std::map<int64_t, TimeBucket> buckets;
  // The ranking stage: total when the run has it, else the last stage.
  axis.ranked_stage = plots_of.count(std::string(store::kTotalStage)) > 0 ? std::string(store::kTotalStage) : stages.back().stage;
  for (const store::IntervalRow& r : rows) {
    TimeBucket& b = buckets[r.start_utc_ns];
    b.start_utc_ns = r.start_utc_ns;
    // Flagged as everywhere (flag_words.h): kept out of the percentiles, not
    // merely marked (cross-core hops would put a marker on every bucket).
    b.flagged += FlaggedSamples(r);
    // Every stage's row carries the bucket's orders; take them once.
    b.orders = r.orders;
    b.orders_kept = r.orders_kept;
    b.detail_deleted = r.detail_deleted;
    if (r.stage == axis.ranked_stage) b.ranked_max_ns = r.max_ns;
    const auto plots = plots_of.find(r.stage);
    if (plots == plots_of.end() || r.count == 0) continue;
    StageOverTime& s = over_time[r.stage];
    s.stage = r.stage;
    s.slug = plots->second->slug;
    s.colour = plots->second->colour;
    s.points.push_back({r.start_utc_ns, r.count, r.p50_ns, r.p99_ns, r.max_ns, r.mean_ns});
  }
  for (const StagePlots& p : stages) {
    if (auto it = over_time.find(p.stage); it != over_time.end()) {
      axis.stages.push_back(std::move(it->second));
    }
  }
  int64_t k = 0;
  for (auto& [start, b] : buckets) {
    b.anchor = absl::StrCat("interval-", ++k);
    if (slowest > 0) {
      TICKTRACE_ASSIGN_OR_RETURN(
          b.slowest, store.FindSlowest(run.run_id, axis.ranked_stage, slowest,
                                       store::TimeWindow{start, start + axis.bucket_ns}));
    }
    axis.buckets.push_back(std::move(b));
  }
  return axis;
}

}  // namespace ticktrace::view
