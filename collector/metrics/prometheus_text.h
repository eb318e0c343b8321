// Renders a MetricsSnapshot in the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): what
// GET /metrics returns. Metric names (docs/operations.md, "Metrics"):
//
//   ticktrace_stage_latency_seconds{stage}         histogram: _bucket{le}, _sum, _count
//                                                  of the samples in the percentiles
//   ticktrace_stage_samples_total{stage}           every sample, flagged ones included
//   ticktrace_stage_flagged_samples_total{stage,flag}  per flag (migrated, negative, ...)
//   ticktrace_<counter>_total                      each store counter (drained, dropped,
//                                                  orders_stored, ...)
//   ticktrace_missing_stage_total{stage}           orders missing that stage
//   ticktrace_stage_core_unknown_samples_total{stage}  samples with an unknown core
//   ticktrace_collector_lag_seconds                now - newest clock anchor analysed
//   ticktrace_collector_cpu_seconds_total          the collector process's CPU time
//   ticktrace_collector_info{version,commit,session} 1
//
// Pure functions; any thread.

#ifndef TICKTRACE_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_
#define TICKTRACE_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_

#include <array>
#include <string>

#include "absl/strings/string_view.h"
#include "collector/metrics/metrics_snapshot.h"

namespace ticktrace::metrics {

// The classic bucket ladder, upper bounds (le) in seconds: 1-2-5 steps from
// 100 ns to 10 s (then +Inf). 25 bounds: fine enough that
// histogram_quantile() lands within a factor 2.5 of the truth, coarse enough
// for a cheap scrape with dozens of stages.
inline constexpr std::array<double, 25> kLatencyBucketsSeconds = {
    1e-7, 2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3,
    2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,  0.2,  0.5,  1.0,  2.0,  5.0,  10.0};

// The part rendered once per snapshot (on the publishing thread); `version`
// and `commit` label ticktrace_collector_info.
std::string RenderSnapshot(const MetricsSnapshot& snapshot, absl::string_view version,
                           absl::string_view commit);

// The part rendered at each scrape: lag (now_utc_ns - analysed_until) and CPU.
std::string RenderScrapeTime(int64_t analysed_until_utc_ns, int64_t now_utc_ns,
                             double cpu_seconds);

// A label value escaped for the exposition format (\\, \", \n).
std::string EscapeLabelValue(absl::string_view value);
// A counter name made a metric name: [a-zA-Z0-9_], others become '_'.
std::string MetricNamePart(absl::string_view name);

}  // namespace ticktrace::metrics

#endif  // TICKTRACE_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_
