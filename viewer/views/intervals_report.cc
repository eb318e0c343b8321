#include "viewer/views/intervals_report.h"

#include <nlohmann/json.hpp>

#include <utility>

#include "absl/strings/str_cat.h"
#include "viewer/format/format_units.h"
#include "viewer/format/json_optional.h"
#include "viewer/format/text_table.h"
#include "viewer/views/flag_words.h"
#include "common/status_macros.h"

namespace ticktrace::view {

// What the stored interval histograms cannot answer, in this view's words.
constexpr HistogramViewWords kIntervalsRefusals{
    "--process: interval statistics do not know processes (use summary --process)",
    "--exact: intervals are the stored interval histograms", "intervals cannot show"};

absl::StatusOr<IntervalsReport> BuildIntervals(store::StoreReader& store, const QueryOptions& options,
                                               std::optional<int64_t> every_ns) {
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q,
                             ResolveHistogramQuery(store, options, kIntervalsRefusals));
  IntervalsReport report;
  report.run = q.run;
  report.interval_ns = q.run.interval_ns > 0 ? q.run.interval_ns : kDefaultIntervalNs;
  report.bucket_ns = every_ns.value_or(report.interval_ns);
  if (report.bucket_ns <= 0 || report.bucket_ns % report.interval_ns != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--every ", FormatDurationNs(static_cast<double>(report.bucket_ns)),
        ": must be a whole multiple of run ", q.run.run_id, "'s interval (",
        FormatDurationNs(static_cast<double>(report.interval_ns)), ")"));
  }
  report.window = q.window;
  report.filters = q.description;
  report.include_flagged = q.run_includes_flagged;
  TICKTRACE_ASSIGN_OR_RETURN(report.rows,
                             store.Intervals(q.run.run_id, q.filter.stage, q.window,
                                             report.bucket_ns));
  return report;
}

std::string RenderIntervalsText(const IntervalsReport& report) {
  std::string out = absl::StrCat(
      "run ", report.run.run_id, ": ",
      report.bucket_ns == report.interval_ns
          ? absl::StrCat("intervals of ", FormatDurationNs(static_cast<double>(report.bucket_ns)))
          : absl::StrCat("buckets of ", FormatDurationNs(static_cast<double>(report.bucket_ns)),
                         " (intervals of ",
                         FormatDurationNs(static_cast<double>(report.interval_ns)), " merged)"),
      report.filters.empty() ? "" : absl::StrCat(", ", report.filters), "\n",
      "percentiles from the merged interval histograms (within 0.4%); ",
      FlagRuleWords(report.include_flagged),
      "; the flagged column counts flagged samples; detail: orders with detail of the bucket's "
      "orders\n");
  if (report.rows.empty()) return out + "\n(no samples)\n";
  size_t i = 0;
  while (i < report.rows.size()) {
    const std::string& stage = report.rows[i].stage;
    internal::TextTable table({"start (UTC)", "count", "p50", "p99", "max", "flagged", "detail"});
    for (; i < report.rows.size() && report.rows[i].stage == stage; ++i) {
      const store::IntervalRow& r = report.rows[i];
      table.AddRow({FormatUtcNs(r.start_utc_ns), absl::StrCat(r.count), FormatDurationNs(r.p50_ns),
                    FormatDurationNs(r.p99_ns), FormatDurationNs(r.max_ns),
                    absl::StrCat(FlaggedSamples(r)),
                    absl::StrCat(r.orders_kept, "/", r.orders, r.detail_deleted ? " deleted" : "")});
    }
    absl::StrAppend(&out, "\nstage ", stage, "\n", table.Render());
  }
  return out;
}

std::string RenderIntervalsJson(const IntervalsReport& report) {
  nlohmann::ordered_json j;
  j["run"] = report.run.run_id;
  j["interval_ns"] = report.interval_ns;
  j["bucket_ns"] = report.bucket_ns;
  j["since_utc_ns"] = OptionalJson(report.window.since_utc_ns);
  j["until_utc_ns"] = OptionalJson(report.window.until_utc_ns);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const store::IntervalRow& r : report.rows) {
    nlohmann::ordered_json flags = nlohmann::ordered_json::object();
    for (size_t f = 0; f < store::kFlagNames.size(); ++f) {
      flags[std::string(store::kFlagNames[f].name)] = r.flag_counts[f];
    }
    rows.push_back({{"stage", r.stage},
                    {"start_utc_ns", r.start_utc_ns},
                    {"count", r.count},
                    {"samples_all", r.samples_all},
                    {"min_ns", OptionalJson(r.min_ns)},
                    {"p50_ns", OptionalJson(r.p50_ns)},
                    {"p90_ns", OptionalJson(r.p90_ns)},
                    {"p99_ns", OptionalJson(r.p99_ns)},
                    {"p999_ns", OptionalJson(r.p999_ns)},
                    {"max_ns", OptionalJson(r.max_ns)},
                    {"mean_ns", OptionalJson(r.mean_ns)},
                    {"flags", std::move(flags)},
                    {"orders", r.orders},
                    {"orders_kept", r.orders_kept},
                    {"detail_deleted", r.detail_deleted}});
  }
  j["intervals"] = std::move(rows);
  return j.dump(2) + "\n";
}

}  // namespace ticktrace::view
