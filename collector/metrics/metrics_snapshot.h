// What the collector hands the metrics endpoint once per snapshot (about once
// a second, collector/app/collector.cc Session::Snapshot): per-stage histograms
// and flag counts, its counters by name, and how far its analysis has got.
// A value type: built on the analysis thread, moved into MetricsServer.

#ifndef TICKTRACE_COLLECTOR_METRICS_METRICS_SNAPSHOT_H_
#define TICKTRACE_COLLECTOR_METRICS_METRICS_SNAPSHOT_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"

namespace ticktrace::metrics {

struct StageMetrics {
  std::string stage;           // "md_rx->md_decoded", "decide", "total"
  store::Histogram histogram;  // the samples in the percentiles (ns), as the store's p99 sees them
  uint64_t samples_all = 0;    // every sample, flagged ones included
  std::array<uint64_t, store::kFlagNames.size()> flag_counts{};  // by store::kFlagNames order
  // The clocks other than the TSC that read an end of its samples, as
  // (side, clock): ("begin" or "end", "realtime", "phc" or "exchange";
  // store::StageClockRow); empty for a stage of TSC stamps only.
  std::vector<std::pair<std::string, std::string>> clocks;
};

// One latency budget (common/budget.h) as the endpoint exports it.
struct BudgetMetrics {
  std::string stage;
  std::string quantile;  // "0.99", "0.999"; "max" for a budget on the maximum
  double limit_seconds = 0;
  uint64_t breaches = 0;  // closed intervals over the budget
};

struct MetricsSnapshot {
  std::vector<StageMetrics> stages;  // display order
  // The store's counters (name, value): drained, dropped, orders_complete, ...
  // plus orders_stored; "missing_stage:<stage>" entries become a label.
  std::vector<std::pair<std::string, int64_t>> counters;
  // UTC of the newest clock anchor the analysis has processed (the drain
  // thread puts one in the stream every second); 0: none yet. The endpoint
  // reports now minus this as the collector's lag, at scrape time, so a
  // stalled analysis shows as a growing lag even though it publishes nothing.
  int64_t analysed_until_utc_ns = 0;
  std::string session;
  std::vector<BudgetMetrics> budgets;  // --budget, in the order given
};

}  // namespace ticktrace::metrics

#endif  // TICKTRACE_COLLECTOR_METRICS_METRICS_SNAPSHOT_H_
