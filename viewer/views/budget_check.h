// `ticktrace-view check`: a run (or a window of it) against latency budgets
// (common/budget.h), the gate a CI job runs after its benchmark.
//
// Every figure comes from the stored interval histograms, merged over the
// window (as `intervals` and `diff` read them), so every order counts
// whatever detail the store kept, and flagged samples count as the run's
// rule counted them (its histograms hold what its percentiles hold). Per
// budget: the figure over the window, its samples, the verdict (OK, BREACH,
// or "not enough samples" when the window has fewer samples than the
// statistic's rank needs, common/budget.h), and the worst intervals: the
// run's intervals with the highest value of the statistic, among those with
// enough samples for it.
#ifndef TICKTRACE_VIEW_BUDGET_CHECK_H_
#define TICKTRACE_VIEW_BUDGET_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/budget.h"
#include "ticktrace/store/reader.h"
#include "viewer/cli/query.h"

namespace ticktrace::view {

struct BudgetInterval {
  int64_t start_utc_ns = 0;
  double measured_ns = 0;
  int64_t samples = 0;
};

struct BudgetResult {
  Budget budget;
  std::optional<double> measured_ns;  // unset: no sample in the window
  int64_t samples = 0;
  BudgetVerdict verdict = BudgetVerdict::kNotEnoughSamples;
  // Set when --min-samples made too few samples a breach: why, in words.
  std::string too_few;
  std::vector<BudgetInterval> worst;  // highest first
};

struct BudgetCheck {
  std::string store;
  store::RunRow run;
  store::TimeWindow window;
  std::string filters;  // the window in words; empty: the whole run
  int64_t interval_ns = 0;
  int64_t min_samples = 0;  // --min-samples; 0: not given
  std::vector<BudgetResult> results;  // in the budgets' order
  int breaches = 0;
  int not_enough = 0;
};

struct BudgetCheckOptions {
  int64_t min_samples = 0;  // fewer samples than this is a breach; 0: off
  int worst = 3;            // worst intervals listed per budget
};

// Judges `budgets` over the run and window `query` names (--process and
// --exact are InvalidArgument, as for diff; so is a flag rule other than the
// run's, and a budget whose stage the run does not have: the message names
// the run's stages).
absl::StatusOr<BudgetCheck> CheckBudgets(store::StoreReader& store, const QueryOptions& query,
                                         const std::vector<Budget>& budgets,
                                         const BudgetCheckOptions& options);

// A header naming the run and window, one line per budget, a tally.
std::string RenderBudgetCheckText(const BudgetCheck& check);
// One JSON object (docs/viewer.md, "check --json").
std::string RenderBudgetCheckJson(const BudgetCheck& check);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_BUDGET_CHECK_H_
