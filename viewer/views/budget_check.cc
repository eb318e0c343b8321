#include "viewer/views/budget_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "ticktrace/store/histogram.h"
#include "viewer/format/format_units.h"
#include "viewer/format/json_optional.h"
#include "viewer/format/text_table.h"

namespace ticktrace::view {
namespace {

constexpr HistogramViewWords kCheckRefusals{
    "--process: check judges interval histograms, which do not know processes",
    "--exact: check judges the stored interval histograms", "check cannot judge"};

// The budget's statistic of `h`. REQUIRES: h.count() > 0.
double StatOf(const Budget& b, const store::Histogram& h) {
  return b.quantile.has_value() ? h.Quantile(*b.quantile) : h.max();
}

absl::Status CheckStagesExist(store::StoreReader& store, int64_t run_id,
                              const std::vector<Budget>& budgets) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<std::string> stages, store.StageNames(run_id));
  for (const Budget& b : budgets) {
    if (std::find(stages.begin(), stages.end(), b.stage) == stages.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("budget '", b.text, "': run ", run_id, " has no stage '", b.stage,
                       "' (its stages: ", stages.empty() ? "none" : absl::StrJoin(stages, ", "),
                       ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BudgetCheck> CheckBudgets(store::StoreReader& store, const QueryOptions& query,
                                         const std::vector<Budget>& budgets,
                                         const BudgetCheckOptions& options) {
  if (budgets.empty()) {
    return absl::InvalidArgumentError("no budget: give --budget STAGE:STAT<LIMIT or --budgets FILE");
  }
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveHistogramQuery(store, query, kCheckRefusals));
  TICKTRACE_RETURN_IF_ERROR(CheckStagesExist(store, q.run.run_id, budgets));
  BudgetCheck check;
  check.store = store.path();
  check.run = q.run;
  check.window = q.window;
  check.filters = q.description;
  check.interval_ns = q.run.interval_ns;
  check.min_samples = options.min_samples;

  // One pass over the window's interval histograms: each budgeted stage's
  // histograms merged, and each budget's statistic per interval.
  std::map<std::string, store::Histogram> merged;
  std::vector<std::vector<BudgetInterval>> per_interval(budgets.size());
  for (const Budget& b : budgets) merged.try_emplace(b.stage);
  TICKTRACE_RETURN_IF_ERROR(store.ForEachIntervalHistogram(
      q.run.run_id, q.window,
      [&](const std::string& stage, int64_t start_utc_ns, std::string_view encoded) -> absl::Status {
        auto it = merged.find(stage);
        if (it == merged.end()) return absl::OkStatus();
        TICKTRACE_ASSIGN_OR_RETURN(store::Histogram h, store::Histogram::Decode(encoded));
        for (size_t i = 0; i < budgets.size(); ++i) {
          const Budget& b = budgets[i];
          const int64_t n = static_cast<int64_t>(h.count());
          if (b.stage != stage || n < b.min_samples) continue;
          per_interval[i].push_back({start_utc_ns, StatOf(b, h), n});
        }
        it->second.Merge(h);
        return absl::OkStatus();
      }));

  for (size_t i = 0; i < budgets.size(); ++i) {
    const Budget& b = budgets[i];
    const store::Histogram& h = merged.at(b.stage);
    BudgetResult r;
    r.budget = b;
    r.samples = static_cast<int64_t>(h.count());
    if (r.samples > 0) r.measured_ns = StatOf(b, h);
    r.verdict = JudgeBudget(b, r.measured_ns, r.samples);
    if (options.min_samples > 0 && r.samples < options.min_samples) {
      r.verdict = BudgetVerdict::kBreach;
      r.too_few = absl::StrCat(r.samples, " samples, fewer than --min-samples ", options.min_samples);
    }
    std::vector<BudgetInterval>& worst = per_interval[i];
    const size_t keep = std::min(worst.size(), static_cast<size_t>(std::max(options.worst, 0)));
    std::partial_sort(worst.begin(), worst.begin() + static_cast<std::ptrdiff_t>(keep), worst.end(),
                      [](const BudgetInterval& a, const BudgetInterval& c) {
                        return a.measured_ns != c.measured_ns ? a.measured_ns > c.measured_ns
                                                              : a.start_utc_ns < c.start_utc_ns;
                      });
    worst.resize(keep);
    r.worst = std::move(worst);
    if (r.verdict == BudgetVerdict::kBreach) ++check.breaches;
    if (r.verdict == BudgetVerdict::kNotEnoughSamples) ++check.not_enough;
    check.results.push_back(std::move(r));
  }
  return check;
}

std::string RenderBudgetCheckText(const BudgetCheck& check) {
  std::string out = absl::StrCat("run ", check.run.run_id, " of ", check.store,
                                 check.filters.empty() ? "" : absl::StrCat(", ", check.filters),
                                 "; figures from its interval histograms (within 0.4%), flagged "
                                 "samples counted as the run counted them\n");
  internal::TextTable table({"budget", "measured", "limit", "samples", "verdict", "worst intervals"});
  for (size_t c : {0, 4, 5}) table.SetLeftAligned(c);
  for (const BudgetResult& r : check.results) {
    std::vector<std::string> worst;
    for (const BudgetInterval& w : r.worst) {
      worst.push_back(absl::StrCat(FormatUtcNs(w.start_utc_ns), " ",
                                   FormatDurationNs(w.measured_ns), " (", w.samples, ")"));
    }
    std::string verdict(BudgetVerdictName(r.verdict));
    if (!r.too_few.empty()) absl::StrAppend(&verdict, ": ", r.too_few);
    if (r.too_few.empty() && r.verdict == BudgetVerdict::kNotEnoughSamples) {
      absl::StrAppend(&verdict, " (", r.budget.stat, " needs ", r.budget.min_samples, ")");
    }
    table.AddRow({r.budget.text, FormatDurationNs(r.measured_ns),
                  absl::StrCat(r.budget.limit_passes ? "<= " : "< ",
                               FormatDurationNs(static_cast<double>(r.budget.limit_ns))),
                  absl::StrCat(r.samples), verdict, worst.empty() ? "-" : absl::StrJoin(worst, ", ")});
  }
  absl::StrAppend(&out, table.Render());
  const int ok = static_cast<int>(check.results.size()) - check.breaches - check.not_enough;
  absl::StrAppend(&out, check.results.size(), check.results.size() == 1 ? " budget: " : " budgets: ",
                  check.breaches, check.breaches == 1 ? " breach, " : " breaches, ", ok, " OK, ",
                  check.not_enough, " not enough samples\n");
  return out;
}

std::string RenderBudgetCheckJson(const BudgetCheck& check) {
  nlohmann::ordered_json j;
  j["store"] = check.store;
  j["run"] = check.run.run_id;
  j["since_utc_ns"] = OptionalJson(check.window.since_utc_ns);
  j["until_utc_ns"] = OptionalJson(check.window.until_utc_ns);
  j["interval_ns"] = check.interval_ns;
  j["min_samples"] = check.min_samples;
  j["breaches"] = check.breaches;
  j["not_enough_samples"] = check.not_enough;
  nlohmann::ordered_json budgets = nlohmann::ordered_json::array();
  for (const BudgetResult& r : check.results) {
    nlohmann::ordered_json worst = nlohmann::ordered_json::array();
    for (const BudgetInterval& w : r.worst) {
      worst.push_back({{"start_utc_ns", w.start_utc_ns},
                       {"measured_ns", w.measured_ns},
                       {"samples", w.samples}});
    }
    budgets.push_back(
        {{"budget", r.budget.text},
         {"stage", r.budget.stage},
         {"stat", r.budget.stat},
         {"quantile", OptionalJson(r.budget.quantile)},
         {"limit_ns", r.budget.limit_ns},
         {"limit_passes", r.budget.limit_passes},
         {"measured_ns", OptionalJson(r.measured_ns)},
         {"samples", r.samples},
         {"samples_needed", r.budget.min_samples},
         {"verdict", BudgetVerdictName(r.verdict)},
         {"too_few", r.too_few.empty() ? nlohmann::ordered_json(nullptr)
                                       : nlohmann::ordered_json(r.too_few)},
         {"worst_intervals", std::move(worst)}});
  }
  j["budgets"] = std::move(budgets);
  return j.dump(2) + "\n";
}

}  // namespace ticktrace::view
