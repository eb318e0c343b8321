// Latency budgets: one syntax for the collector (--budget, --budgets) and
// the viewer's `check`, so that a budget means the same everywhere.
//
//   STAGE:STAT<LIMIT      decide:p99<20us   total:p99.9<150us   gw_in->gw_sent:max<1ms
//   STAGE:STAT<=LIMIT     the limit itself still passes
//
// STAGE is a stage as the collector names it (a pipeline stage, `a->b`, or
// `total`); the split is at the last ':' before the comparison, so a stage
// name may hold ':' itself. STAT is `max` or `pQ` with 0 < Q < 100 (p50,
// p99, p99.9, p99.99). LIMIT is a positive duration (common/duration.h:
// 250ns, 20us, 1.5ms, 2s). A budget file has one budget per line; `#`
// starts a comment, blank lines are skipped.
//
// A quantile is judged only on enough samples for its rank: q needs at least
// ceil(1 / (1 - q)) samples (p99: 100, p99.9: 1000), or its value is the
// largest sample and says nothing about q. Fewer samples is "not enough
// samples", never OK. `max` needs one sample.

#ifndef TICKTRACE_COMMON_BUDGET_H_
#define TICKTRACE_COMMON_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ticktrace {

struct Budget {
  std::string stage;
  std::string stat;                // "p99", "p99.9", "max": as written
  std::optional<double> quantile;  // in (0, 1); unset: the maximum
  int64_t min_samples = 1;         // the fewest samples that give `stat` a meaning (above)
  int64_t limit_ns = 0;
  bool limit_passes = false;  // `<=`: a figure equal to the limit is within it
  std::string text;           // as given, without surrounding blanks
};

enum class BudgetVerdict { kOk, kBreach, kNotEnoughSamples };

// "OK", "BREACH", "not enough samples".
absl::string_view BudgetVerdictName(BudgetVerdict verdict);

// Judges a measured figure (nanoseconds; unset when there is none) taken
// over `samples` samples.
BudgetVerdict JudgeBudget(const Budget& budget, std::optional<double> measured_ns, int64_t samples);

// Parses one budget. InvalidArgument, one line naming `source` (a flag such
// as "--budget", or "FILE:LINE") and what is wrong.
absl::StatusOr<Budget> ParseBudget(absl::string_view source, absl::string_view text);

// Parses a budget file's contents (`path` names it in errors).
absl::StatusOr<std::vector<Budget>> ParseBudgetLines(absl::string_view path,
                                                     absl::string_view contents);

// Reads and parses a budget file. NotFound / InvalidArgument in one line.
absl::StatusOr<std::vector<Budget>> ReadBudgetFile(const std::string& path);

// Appends `more` to `budgets`; InvalidArgument when a stage and statistic
// would be budgeted twice (which limit would hold is not for us to guess).
absl::Status AddBudgets(std::vector<Budget> more, std::vector<Budget>* budgets);

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_BUDGET_H_
