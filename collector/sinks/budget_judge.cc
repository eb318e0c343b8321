#include "collector/sinks/budget_judge.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace ticktrace::collect {
namespace {

constexpr char kBreaches[] = "budget_breaches";
constexpr char kJudgedThrough[] = "budget_judged_through_utc_ns";

std::string PerBudget(const char* what, const Budget& b) { return absl::StrCat(what, ":", b.text); }

// 31.2us, 1.05ms: three significant digits, in the unit a budget is written in.
std::string FormatNs(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return absl::StrFormat("%.3gs", ns / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3gms", ns / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.3gus", ns / 1e3);
  return absl::StrFormat("%.3gns", ns);
}

std::string FormatUtc(int64_t utc_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(utc_ns), absl::UTCTimeZone());
}

}  // namespace

BudgetJudge::BudgetJudge(BudgetJudgeOptions options)
    : options_(std::move(options)),
      counts_(options_.budgets.size()),
      said_(options_.budgets.size()) {
  options_.interval_ns = std::max<int64_t>(1, options_.interval_ns);
  for (const Budget& b : options_.budgets) open_[b.stage];
}

void BudgetJudge::Resume(const std::map<std::string, int64_t>& stored) {
  auto get = [&stored](const std::string& name) -> uint64_t {
    auto it = stored.find(name);
    return it == stored.end() || it->second < 0 ? 0 : static_cast<uint64_t>(it->second);
  };
  for (size_t i = 0; i < options_.budgets.size(); ++i) {
    counts_[i].judged = get(PerBudget("budget_judged", options_.budgets[i]));
    counts_[i].breaches = get(PerBudget(kBreaches, options_.budgets[i]));
    counts_[i].unjudged = get(PerBudget("budget_unjudged", options_.budgets[i]));
  }
  if (auto it = stored.find(kJudgedThrough); it != stored.end()) judged_through_ = it->second;
}

void BudgetJudge::Seed(const std::string& stage, int64_t start_utc_ns,
                       const store::Histogram& histogram) {
  auto it = open_.find(stage);
  if (it == open_.end() || start_utc_ns <= judged_through_) return;
  it->second[start_utc_ns].Merge(histogram);
}

void BudgetJudge::Add(const std::vector<store::IntervalDelta>& deltas) {
  for (const store::IntervalDelta& d : deltas) {
    if (d.start_utc_ns <= judged_through_) continue;
    auto it = open_.find(d.stage);
    if (it == open_.end()) continue;
    it->second[d.start_utc_ns].Merge(d.histogram);
  }
}

void BudgetJudge::Close(int64_t newest_first_utc_ns, bool all,
                        std::vector<store::BudgetBreachRow>* out) {
  // Intervals close in start order across stages, so that the mark can move
  // past each as it is judged for every stage.
  std::vector<int64_t> starts;
  for (const auto& [stage, intervals] : open_) {
    for (const auto& [start, h] : intervals) {
      const bool settled = newest_first_utc_ns != INT64_MIN &&
                           start + options_.interval_ns <= newest_first_utc_ns - options_.settle_ns;
      if (all || settled) starts.push_back(start);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  for (int64_t start : starts) {
    for (auto& [stage, intervals] : open_) {
      auto it = intervals.find(start);
      if (it == intervals.end()) continue;
      Judge(start, stage, it->second, out);
      intervals.erase(it);
    }
    judged_through_ = std::max(judged_through_, start);
  }
}

void BudgetJudge::Judge(int64_t start_utc_ns, const std::string& stage, const store::Histogram& h,
                        std::vector<store::BudgetBreachRow>* out) {
  const int64_t samples = static_cast<int64_t>(h.count());
  if (samples == 0) return;  // flagged samples only: nothing in the percentiles to judge
  for (size_t i = 0; i < options_.budgets.size(); ++i) {
    const Budget& b = options_.budgets[i];
    if (b.stage != stage) continue;
    const double measured = b.quantile.has_value() ? h.Quantile(*b.quantile) : h.max();
    switch (JudgeBudget(b, measured, samples)) {
      case BudgetVerdict::kOk:
        ++counts_[i].judged;
        break;
      case BudgetVerdict::kNotEnoughSamples:
        ++counts_[i].unjudged;
        break;
      case BudgetVerdict::kBreach: {
        ++counts_[i].judged;
        ++counts_[i].breaches;
        store::BudgetBreachRow& row = out->emplace_back();
        row.budget = b.text;
        row.stage = b.stage;
        row.stat = b.stat;
        row.interval_start_utc_ns = start_utc_ns;
        row.limit_ns = b.limit_ns;
        row.measured_ns = measured;
        row.samples = samples;
        Say(i, row);
        break;
      }
    }
  }
}

void BudgetJudge::Say(size_t budget, const store::BudgetBreachRow& breach) {
  Said& said = said_[budget];
  if (said.last_start_utc_ns != INT64_MIN &&
      breach.interval_start_utc_ns - said.last_start_utc_ns < options_.say_every_ns) {
    ++said.unsaid;
    return;
  }
  if (options_.say) {
    std::string line = absl::StrCat(
        "budget ", breach.budget, " broken: ", breach.stat, " ", FormatNs(breach.measured_ns),
        " over ", breach.samples, " samples in the interval from ",
        FormatUtc(breach.interval_start_utc_ns), " (", FormatNs(options_.interval_ns), ")");
    if (said.unsaid > 0) {
      absl::StrAppend(&line, "; ", said.unsaid, " more breach", said.unsaid == 1 ? "" : "es",
                      " of it since the last such line");
    }
    options_.say(line);
  }
  said.last_start_utc_ns = breach.interval_start_utc_ns;
  said.unsaid = 0;
}

void BudgetJudge::PutCounters(std::vector<std::pair<std::string, int64_t>>* counters) const {
  uint64_t total = 0;
  for (size_t i = 0; i < options_.budgets.size(); ++i) {
    const Budget& b = options_.budgets[i];
    total += counts_[i].breaches;
    counters->emplace_back(PerBudget("budget_judged", b), static_cast<int64_t>(counts_[i].judged));
    counters->emplace_back(PerBudget(kBreaches, b), static_cast<int64_t>(counts_[i].breaches));
    counters->emplace_back(PerBudget("budget_unjudged", b),
                           static_cast<int64_t>(counts_[i].unjudged));
  }
  counters->emplace_back(kBreaches, static_cast<int64_t>(total));
  if (judged_through_ != INT64_MIN) counters->emplace_back(kJudgedThrough, judged_through_);
}

}  // namespace ticktrace::collect
