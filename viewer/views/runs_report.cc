#include "viewer/views/runs_report.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/size.h"
#include "ticktrace/store/names.h"
#include "viewer/format/format_units.h"
#include "viewer/views/run_notes_text.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

// The store's size as the collector last measured it (the store_* figures,
// collector/app/store_projection.h) and the detail retention deleted; ""
// when the run has none of them (an older collector, ClickHouse, a replay).
std::string StoreSizeLine(const std::map<std::string, int64_t>& counters) {
  auto get = [&](store::Counter c) -> std::optional<int64_t> {
    const auto it = counters.find(std::string(store::CounterName(c)));
    return it == counters.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  const std::optional<int64_t> bytes = get(store::Counter::kStoreBytes);
  const std::optional<int64_t> limit = get(store::Counter::kStoreDetailLimitBytes);
  const std::optional<int64_t> growth = get(store::Counter::kStoreGrowthBytesPerS);
  const std::optional<int64_t> window = get(store::Counter::kStoreDetailWindowS);
  const int64_t retired = get(store::Counter::kOrdersRetired).value_or(0);
  if (!bytes && !limit && retired == 0) return "";
  std::vector<std::string> parts;
  if (bytes) parts.push_back(absl::StrCat(FormatBytes(static_cast<double>(*bytes)), " on disk"));
  if (growth) {
    parts.push_back(absl::StrCat("+", FormatBytes(static_cast<double>(*growth) * 3600),
                                 "/h at the last rate"));
  }
  if (limit) {
    parts.push_back(*limit > 0 ? absl::StrCat("detail limit ",
                                              FormatBytes(static_cast<double>(*limit)))
                               : std::string("no detail limit"));
  }
  if (window) {
    parts.push_back(absl::StrCat("detail kept for about the last ",
                                 FormatDurationNs(static_cast<double>(*window) * 1e9)));
  }
  parts.push_back(absl::StrCat(retired, " orders' detail retired"));
  return absl::StrCat("  store        ", absl::StrJoin(parts, ", "), "\n");
}

}  // namespace

absl::StatusOr<std::string> RenderRuns(store::StoreReader& store) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::RunRow> runs, store.ListRuns());
  std::string out = absl::StrCat(runs.size(), runs.size() == 1 ? " run" : " runs", " in ",
                                 store.path(), " (schema ", store.schema_version(), ")\n");
  for (const store::RunRow& run : runs) {
    absl::StrAppend(&out, "\nrun ", run.run_id, "  session ", run.session, "  host ", run.host,
                    "\n");
    absl::StrAppend(&out, "  time         ", FormatUtcNs(run.started_utc_ns), " .. ");
    if (run.ended_utc_ns.has_value()) {
      absl::StrAppend(
          &out, FormatUtcNs(*run.ended_utc_ns), " (",
          FormatDurationNs(static_cast<double>(*run.ended_utc_ns - run.started_utc_ns)), ")\n");
    } else {
      absl::StrAppend(&out, "running (or the collector did not finish)\n");
    }
    absl::StrAppend(&out, "  calibration  ", FormatHz(run.tsc_hz), " (", run.calibration_source,
                    "), spread ",
                    run.spread_ppm.has_value() ? absl::StrFormat("%.2f ppm", *run.spread_ppm) : "-",
                    ", TSC step ", FormatDurationNs(run.tsc_step_ns), ", kernel ",
                    run.kernel_tsc_hz.has_value() ? FormatHz(*run.kernel_tsc_hz) : "-", "\n");
    absl::StrAppend(&out, "  pipeline     ", run.pipeline.empty() ? "-" : run.pipeline,
                    run.pipeline_learned ? " (learned)" : " (declared)", "\n");
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ProcessRow> processes, store.Processes(run.run_id));
    std::vector<std::string> names;
    for (const store::ProcessRow& p : processes) names.push_back(absl::StrCat(p.name, "[", p.pid, "]"));
    absl::StrAppend(&out, "  processes    ", processes.size(),
                    names.empty() ? "" : absl::StrCat(": ", absl::StrJoin(names, ", ")), "\n");
    TICKTRACE_ASSIGN_OR_RETURN(auto counters, store.Counters(run.run_id));
    const auto value = [&](const char* name) {
      const auto it = counters.find(name);
      return it == counters.end() ? int64_t{0} : it->second;
    };
    absl::StrAppend(&out, "  counters     drained ", value("drained"), ", dropped ",
                    value("dropped"), ", malformed ", value("malformed"), ", orders complete ",
                    value("orders_complete"), ", incomplete ", value("orders_incomplete"), "\n");
    out += StoreSizeLine(counters);
    std::vector<std::string> others;
    for (const auto& [name, v] : counters) {
      if (v == 0 || name == "drained" || name == "dropped" || name == "malformed" ||
          name == "orders_complete" || name == "orders_incomplete") {
        continue;
      }
      // On the store line above.
      if (const auto c = store::CounterByName(name);
          c && (store::CounterIsGauge(*c) || *c == store::Counter::kOrdersRetired)) {
        continue;
      }
      others.push_back(absl::StrCat(name, " ", v));
    }
    if (!others.empty()) absl::StrAppend(&out, "               ", absl::StrJoin(others, ", "), "\n");
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::RunNote> notes, store.Notes(run.run_id));
    out += RunNotesText(notes, "  ");
  }
  return out;
}

}  // namespace ticktrace::view
