// Latency budgets (common/budget.h) judged by the collector, per closed
// interval: each budgeted stage's samples of an interval, merged from the
// interval deltas the store sink writes (store_sink.h), are judged against
// every budget of that stage once no order first-stamped in the interval can
// still finish (`settle_ns` after its end: the order timeout, the linger, a
// margin), or at the end of the run.
//
// Nothing here runs per record: the store writer's thread hands it each
// transaction's merged deltas (a few per stage and second) and takes the
// breaches back into the same transaction, with the counters that count
// them, so that the store's breach rows, its counters and its statistics
// always agree, also across a restart:
//   - budget_breaches and budget_breaches:<budget>: intervals over budget;
//   - budget_judged:<budget>: intervals judged, over budget or not;
//   - budget_unjudged:<budget>: intervals with samples of the stage, but too
//     few for the statistic's rank (common/budget.h), so neither OK nor over;
//   - budget_judged_through_utc_ns: every interval starting at or before it
//     is judged. A resumed run takes the counts and this mark back (Resume)
//     and, for the intervals still open, what the store already holds of
//     them (Seed), so no interval is judged twice or on part of its samples.
// A breach is said on stderr at most once per budget per minute of the
// run's time (the interval starts), with how many were not said since.
//
// Thread model: the store writer's thread only (the sink copies the counts
// out for the metrics endpoint).

#ifndef TICKTRACE_COLLECTOR_SINKS_BUDGET_JUDGE_H_
#define TICKTRACE_COLLECTOR_SINKS_BUDGET_JUDGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/budget.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

struct BudgetJudgeOptions {
  std::vector<Budget> budgets;
  int64_t interval_ns = 1'000'000'000;
  int64_t settle_ns = 3'000'000'000;
  // How long a budget's breaches go unsaid after one is said (run time).
  int64_t say_every_ns = 60'000'000'000;
  // Where the breach lines go (one line each, no newline); unset: nowhere.
  std::function<void(const std::string&)> say;
};

// What a budget has come to so far.
struct BudgetCount {
  uint64_t judged = 0;    // intervals judged (OK or over)
  uint64_t breaches = 0;  // of which over budget
  uint64_t unjudged = 0;  // intervals with too few samples for the statistic
};

class BudgetJudge {
 public:
  explicit BudgetJudge(BudgetJudgeOptions options);

  const std::vector<Budget>& budgets() const { return options_.budgets; }
  // Per budget, in budgets() order.
  const std::vector<BudgetCount>& counts() const { return counts_; }
  int64_t judged_through_utc_ns() const { return judged_through_; }
  // Whether `stage` has a budget (the stages Seed() wants).
  bool Budgeted(const std::string& stage) const { return open_.count(stage) > 0; }

  // A resumed run: the counts and the mark as the store holds them (its
  // counters). REQUIRES: before anything else.
  void Resume(const std::map<std::string, int64_t>& stored_counters);
  // A resumed run: what the store holds of an interval not judged yet.
  void Seed(const std::string& stage, int64_t start_utc_ns, const store::Histogram& histogram);

  // Adds one transaction's deltas; those of stages without a budget, and of
  // intervals judged already (an order that finished later than the settle
  // allows), are left out.
  void Add(const std::vector<store::IntervalDelta>& deltas);
  // Judges every open interval that ends at or before `newest_first_utc_ns -
  // settle_ns` (every open interval when `all`), appends their breaches to
  // `out` and says them (rate-limited).
  void Close(int64_t newest_first_utc_ns, bool all, std::vector<store::BudgetBreachRow>* out);
  // The counters above, to be stored with the rows Close() gave.
  void PutCounters(std::vector<std::pair<std::string, int64_t>>* counters) const;

 private:
  struct Said {
    int64_t last_start_utc_ns = INT64_MIN;  // of the interval last said
    uint64_t unsaid = 0;                    // breaches since, not said
  };
  void Judge(int64_t start_utc_ns, const std::string& stage, const store::Histogram& h,
             std::vector<store::BudgetBreachRow>* out);
  void Say(size_t budget, const store::BudgetBreachRow& breach);

  BudgetJudgeOptions options_;
  std::vector<BudgetCount> counts_;
  std::vector<Said> said_;
  // Budgeted stage -> open interval start -> its samples so far.
  std::map<std::string, std::map<int64_t, store::Histogram>> open_;
  int64_t judged_through_ = INT64_MIN;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_SINKS_BUDGET_JUDGE_H_
