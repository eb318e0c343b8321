// The collector's side of the metrics endpoint: builds a MetricsSnapshot from
// what Session::Snapshot (collector/app/collector.cc) has at hand when it builds
// the store's snapshot, about once a second. Analysis thread.

#ifndef TICKTRACE_COLLECTOR_METRICS_COLLECTOR_METRICS_H_
#define TICKTRACE_COLLECTOR_METRICS_COLLECTOR_METRICS_H_

#include <cstdint>
#include <string>

#include "collector/metrics/metrics_server.h"
#include "collector/metrics/metrics_snapshot.h"
#include "collector/sinks/budget_judge.h"
#include "collector/sinks/stage_stats.h"
#include "ticktrace/store/writer.h"
#include "collector/time/time_base.h"

namespace ticktrace::metrics {

// `store_snapshot`: the snapshot the store gets (stages, counters);
// `stats`: the analysis's per-stage histograms; `orders_stored`: the store
// sink's count; `time_base`: the analysis's anchors (for the lag).
// The budgets with their breach counts (counts[i] is budgets[i]'s).
std::vector<BudgetMetrics> BudgetMetricsOf(const std::vector<Budget>& budgets,
                                           const std::vector<collect::BudgetCount>& counts);

MetricsSnapshot MakeMetricsSnapshot(const store::Snapshot& store_snapshot,
                                    const collect::StageStats& stats, uint64_t orders_stored,
                                    const collect::TimeBase& time_base, const std::string& session);

}  // namespace ticktrace::metrics

#endif  // TICKTRACE_COLLECTOR_METRICS_COLLECTOR_METRICS_H_
