// What the collector prints: the calibration report at start, the learned
// pipeline, and the counters with a per-stage table at exit. Pure formatting;
// any thread.

#ifndef TICKTRACE_COLLECTOR_REPORT_H_
#define TICKTRACE_COLLECTOR_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>


#include "collector/app/run_info.h"
#include "collector/sinks/budget_judge.h"
#include "collector/sinks/stage_stats.h"

namespace ticktrace::collect {

// Frequency, source, spread (ppm), the kernel's value, TSC step, and every
// environment finding with its meaning (warnings marked).
std::string CalibrationReport(const RunInfo& run);

// "learned pipeline from N orders: a -> b -> c".
std::string LearnedPipelineLine(const std::vector<std::string>& pipeline, size_t orders);

// The records lost (store/losses.h) first, then the counters that matter
// (what came in and what came of it, every loss cause), the other non-zero
// counters on one line, then one row per stage: count, min, p50, p90, p99, p99.9, max,
// mean (ns, or us/ms when large), and flag counts.
std::string ExitReport(const std::vector<std::pair<std::string, int64_t>>& counters,
                       const std::vector<StageSummary>& stages,
                       const std::vector<std::string>& pipeline, bool pipeline_learned,
                       bool include_flagged);

// One line per --budget: closed intervals judged, over budget, and with too
// few samples for the statistic; "" without budgets.
//   budget decide:p99<20us: 3 of 58 intervals over (2 more with too few samples)
std::string BudgetReport(const std::vector<Budget>& budgets, const std::vector<BudgetCount>& counts);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_REPORT_H_
