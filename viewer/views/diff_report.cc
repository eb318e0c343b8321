#include "viewer/views/diff_report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "viewer/format/format_units.h"
#include "viewer/format/json_optional.h"
#include "viewer/format/text_table.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

// The sample variance (n - 1) of `values`. REQUIRES: at least 2 values.
double SampleVariance(const std::vector<double>& values) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return squares / static_cast<double>(values.size() - 1);
}

// The percentile `pick` of every bucket of `rows` that has it.
template <typename Pick>
std::vector<double> PerInterval(const std::vector<store::IntervalRow>* rows, Pick pick) {
  std::vector<double> values;
  if (rows == nullptr) return values;
  for (const store::IntervalRow& r : *rows) {
    if (const std::optional<double> v = pick(r); v.has_value()) values.push_back(*v);
  }
  return values;
}


nlohmann::ordered_json VerdictJson(const ChangeVerdict& v) {
  return {{"before_ns", OptionalJson(v.before_ns)},
          {"after_ns", OptionalJson(v.after_ns)},
          {"change_pct", OptionalJson(v.change_pct)},
          {"precision_ns", OptionalJson(v.precision_ns)},
          {"noise_ns", OptionalJson(v.noise_ns)},
          {"beyond_precision", OptionalJson(v.beyond_precision)},
          {"beyond_noise", OptionalJson(v.beyond_noise)},
          {"significant", v.significant}};
}

nlohmann::ordered_json SideJson(const DiffSide& s) {
  return {{"store", s.store},
          {"run", s.run.run_id},
          {"since_utc_ns", OptionalJson(s.window.since_utc_ns)},
          {"until_utc_ns", OptionalJson(s.window.until_utc_ns)},
          {"bucket_ns", s.bucket_ns},
          {"buckets", s.buckets}};
}

// "510 ns -> 520 ns".
std::string BeforeAfter(const ChangeVerdict& v) {
  return absl::StrCat(FormatDurationNs(v.before_ns), " \u2192 ", FormatDurationNs(v.after_ns));
}

// "+2.0% *": the change and its verdict mark.
std::string ChangeText(const ChangeVerdict& v) {
  if (!v.change_pct.has_value()) return "-";
  std::string text = absl::StrFormat("%+.1f%%", *v.change_pct);
  if (v.significant) {
    absl::StrAppend(&text, " *");
  } else if (!v.noise_ns.has_value() && v.beyond_precision.value_or(false)) {
    absl::StrAppend(&text, " ?");
  } else {
    absl::StrAppend(&text, "  ");
  }
  return text;
}

std::string SideText(const DiffSide& s) {
  return absl::StrCat("run ", s.run.run_id, " of ", s.store, ", ",
                      s.filters.empty() ? "whole run" : s.filters, ", ", s.buckets, " ",
                      s.bucket_ns == s.run.interval_ns ? "intervals" : "buckets", " of ",
                      FormatDurationNs(static_cast<double>(s.bucket_ns)));
}

}  // namespace

ChangeVerdict JudgeChange(std::optional<double> before_ns, std::optional<double> after_ns,
                          const std::vector<double>& before_intervals,
                          const std::vector<double>& after_intervals) {
  ChangeVerdict v;
  v.before_ns = before_ns;
  v.after_ns = after_ns;
  if (!before_ns.has_value() || !after_ns.has_value()) return v;
  const double delta = *after_ns - *before_ns;
  if (*before_ns != 0) v.change_pct = 100.0 * delta / std::fabs(*before_ns);
  v.precision_ns = kHistogramRelativeError * (std::fabs(*before_ns) + std::fabs(*after_ns));
  v.beyond_precision = std::fabs(delta) > *v.precision_ns;
  if (before_intervals.size() >= 2 && after_intervals.size() >= 2) {
    const double standard_error =
        std::sqrt(SampleVariance(before_intervals) / static_cast<double>(before_intervals.size()) +
                  SampleVariance(after_intervals) / static_cast<double>(after_intervals.size()));
    v.noise_ns = kNoiseStandardErrors * standard_error;
    v.beyond_noise = std::fabs(delta) > *v.noise_ns;
  }
  v.significant = v.beyond_precision.value_or(false) && v.beyond_noise.value_or(false);
  return v;
}

// What the stored interval histograms cannot answer, in this view's words.
constexpr HistogramViewWords kDiffRefusals{
    "--process: diff compares interval histograms, which do not know processes",
    "--exact: diff compares the stored interval histograms", "diff cannot count"};

absl::StatusOr<DiffSide> ReadDiffSide(store::StoreReader& store, const QueryOptions& options,
                                      std::optional<int64_t> every_ns) {
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveHistogramQuery(store, options, kDiffRefusals));
  DiffSide side;
  side.store = store.path();
  side.run = q.run;
  side.window = q.window;
  side.filters = q.description;
  const int64_t interval_ns = q.run.interval_ns > 0 ? q.run.interval_ns : 1'000'000'000;
  side.bucket_ns = every_ns.value_or(interval_ns);
  if (side.bucket_ns <= 0 || side.bucket_ns % interval_ns != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--every ", FormatDurationNs(static_cast<double>(side.bucket_ns)),
        ": must be a whole multiple of run ", q.run.run_id, "'s interval (",
        FormatDurationNs(static_cast<double>(interval_ns)), ")"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(side.stages, store.StageWindowStats(q.run.run_id, q.window));
  if (q.filter.stage.has_value()) {
    std::vector<store::WindowStageStatsRow> kept;
    for (store::WindowStageStatsRow& row : side.stages) {
      if (row.stage == *q.filter.stage) kept.push_back(std::move(row));
    }
    side.stages = std::move(kept);
  }
  TICKTRACE_ASSIGN_OR_RETURN(
      std::vector<store::IntervalRow> rows,
      store.Intervals(q.run.run_id, q.filter.stage, q.window, side.bucket_ns));
  std::set<int64_t> starts;
  for (store::IntervalRow& r : rows) {
    starts.insert(r.start_utc_ns);
    side.intervals[r.stage].push_back(std::move(r));
  }
  side.buckets = static_cast<int64_t>(starts.size());
  return side;
}

DiffReport CompareSides(DiffSide before, DiffSide after) {
  DiffReport report;
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const auto* side : {&after, &before}) {
    for (const store::WindowStageStatsRow& row : side->stages) {
      if (row.stage != store::kTotalStage && seen.insert(row.stage).second) order.push_back(row.stage);
    }
  }
  for (const auto* side : {&after, &before}) {
    for (const store::WindowStageStatsRow& row : side->stages) {
      if (row.stage == store::kTotalStage && seen.insert(row.stage).second) order.push_back(row.stage);
    }
  }
  const auto find = [](const DiffSide& side, const std::string& stage) {
    const store::WindowStageStatsRow* found = nullptr;
    for (const store::WindowStageStatsRow& row : side.stages) {
      if (row.stage == stage) found = &row;
    }
    return found;
  };
  const auto intervals = [](const DiffSide& side, const std::string& stage) {
    const auto it = side.intervals.find(stage);
    return it == side.intervals.end() ? nullptr : &it->second;
  };
  for (const std::string& stage : order) {
    const store::WindowStageStatsRow* b = find(before, stage);
    const store::WindowStageStatsRow* a = find(after, stage);
    StageDiff d;
    d.stage = stage;
    d.count_before = b != nullptr ? b->count : 0;
    d.count_after = a != nullptr ? a->count : 0;
    const auto judge = [&](auto member_stats, auto member_interval) {
      return JudgeChange(b != nullptr ? b->*member_stats : std::nullopt,
                         a != nullptr ? a->*member_stats : std::nullopt,
                         PerInterval(intervals(before, stage),
                                     [&](const store::IntervalRow& r) { return r.*member_interval; }),
                         PerInterval(intervals(after, stage),
                                     [&](const store::IntervalRow& r) { return r.*member_interval; }));
    };
    d.p50 = judge(&store::StageStatsRow::p50_ns, &store::IntervalRow::p50_ns);
    d.p99 = judge(&store::StageStatsRow::p99_ns, &store::IntervalRow::p99_ns);
    d.p999 = judge(&store::StageStatsRow::p999_ns, &store::IntervalRow::p999_ns);
    report.stages.push_back(std::move(d));
  }
  report.before = std::move(before);
  report.after = std::move(after);
  return report;
}

std::string RenderDiffText(const DiffReport& report) {
  std::string out = absl::StrCat(
      "before: ", SideText(report.before), "\n", "after:  ", SideText(report.after), "\n",
      "* marks a change beyond both the histograms' precision (0.4% of each value) and the\n"
      "  noise (twice the standard error of the per-interval values); ? : beyond the precision,\n"
      "  too few intervals to judge the noise (see docs/viewer.md, \"diff\")\n\n");
  internal::TextTable table(
      {"stage", "count", "p50", "change", "p99", "change", "p99.9", "change"});
  for (const StageDiff& d : report.stages) {
    table.AddRow({d.stage, absl::StrCat(d.count_before, " \u2192 ", d.count_after),
                  BeforeAfter(d.p50), ChangeText(d.p50), BeforeAfter(d.p99), ChangeText(d.p99),
                  BeforeAfter(d.p999), ChangeText(d.p999)});
  }
  out += report.stages.empty() ? "(no samples on either side)\n" : table.Render();
  return out;
}

std::string RenderDiffJson(const DiffReport& report) {
  nlohmann::ordered_json j;
  j["before"] = SideJson(report.before);
  j["after"] = SideJson(report.after);
  j["precision"] = kHistogramRelativeError;
  j["noise_standard_errors"] = kNoiseStandardErrors;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageDiff& d : report.stages) {
    stages.push_back({{"stage", d.stage},
                      {"count_before", d.count_before},
                      {"count_after", d.count_after},
                      {"p50", VerdictJson(d.p50)},
                      {"p99", VerdictJson(d.p99)},
                      {"p999", VerdictJson(d.p999)}});
  }
  j["stages"] = std::move(stages);
  return j.dump(2) + "\n";
}

}  // namespace ticktrace::view
