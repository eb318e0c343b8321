// The ClickHouse StoreReader: opening a store, the run tables (runs,
// counters, stage_stats, processes, threads, cores), the run dictionaries and
// the query plumbing every answer goes through (Select, ForEachRow). The map
// of which file answers what is in clickhouse_reader.h.

#include "store/clickhouse/clickhouse_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/name_text.h"
#include "common/status_macros.h"
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/http_client.h"
#include "store/clickhouse/row_binary.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace clickhouse_reader {

std::string IdLiteral(int64_t order_id) { return absl::StrCat(static_cast<uint64_t>(order_id)); }

std::string WindowClause(const char* column, const TimeWindow& w) {
  std::string out;
  if (w.since_utc_ns) absl::StrAppend(&out, " AND ", column, " >= ", *w.since_utc_ns);
  if (w.until_utc_ns) absl::StrAppend(&out, " AND ", column, " < ", *w.until_utc_ns);
  return out;
}

std::string SummedFlagColumns() {
  std::vector<std::string> cols;
  for (const store::FlagName& f : store::kFlagNames) {
    cols.push_back(absl::StrCat("toInt64(sum(", std::string(f.name), "))"));
  }
  return absl::StrJoin(cols, ", ");
}

FlagCounts ReadFlags(RowBinaryCursor& c) {
  FlagCounts flags{};
  for (int64_t& f : flags) f = c.Int64();
  return flags;
}

constexpr char kRunColumns[] =
    "run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
    "spread_ppm, kernel_tsc_hz, tsc_step_ns, toInt64(anchor_tsc), anchor_utc_ns, environment, "
    "settings, pipeline, pipeline_learned, utc_drift_ppm, interval_ns, detail, clock_error_ns";

RunRow ReadRun(RowBinaryCursor& c, std::string* detail_policy = nullptr) {
  RunRow run;
  run.run_id = c.Int64();
  run.session = EscapeName(c.String());
  run.host = EscapeName(c.String());
  run.started_utc_ns = c.Int64();
  run.ended_utc_ns = c.NullableInt64();
  run.tsc_hz = c.Float64();
  run.calibration_source = c.String();
  run.spread_ppm = c.NullableFloat64();
  run.kernel_tsc_hz = c.NullableFloat64();
  run.tsc_step_ns = c.NullableFloat64();
  run.anchor_tsc = c.Int64();
  run.anchor_utc_ns = c.Int64();
  run.environment = c.String();
  run.settings = c.String();
  run.pipeline = c.String();
  run.pipeline_learned = c.UInt8() != 0;
  run.utc_drift_ppm = c.NullableFloat64();
  run.interval_ns = c.Int64();
  std::string detail = c.String();
  if (detail_policy) *detail_policy = std::move(detail);
  run.clock_error_ns = c.NullableFloat64();
  return run;
}

bool ClickHouseStoreReader::HasColumn(const char* table, const char* column) {
  absl::StatusOr<std::string> r =
      Select(absl::StrCat("SELECT toUInt64(count()) FROM system.columns WHERE database = ",
                          store::ClickHouseQuote(database_),
                          " AND table = ", store::ClickHouseQuote(table),
                          " AND name = ", store::ClickHouseQuote(column)),
             "reading the schema");
  if (!r.ok()) return false;
  RowBinaryCursor c(*r);
  return c.UInt64() > 0 && !c.failed();
}

absl::StatusOr<std::vector<RunRow>> ClickHouseStoreReader::ListRuns() {
  return ReadRuns("", "listing runs");
}

absl::StatusOr<RunRow> ClickHouseStoreReader::GetRun(std::optional<int64_t> run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<RunRow> runs, ListRuns());
  if (runs.empty()) return absl::NotFoundError(absl::StrCat(uri_, ": the store holds no run yet"));
  if (!run_id.has_value()) return runs.back();
  for (const RunRow& r : runs) {
    if (r.run_id == *run_id) return r;
  }
  std::vector<int64_t> ids;
  for (const RunRow& r : runs) ids.push_back(r.run_id);
  return absl::NotFoundError(absl::StrCat("run ", *run_id, " not found in ", uri_,
                                          " (runs: ", absl::StrJoin(ids, ", "), ")"));
}

absl::StatusOr<std::map<std::string, int64_t>> ClickHouseStoreReader::Counters(int64_t run_id) {
  std::map<std::string, int64_t> out;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT name, value FROM counters FINAL WHERE run_id = ", run_id),
                 "reading counters", [&](RowBinaryCursor& c) {
                   std::string name = EscapeName(c.String());
                   out[std::move(name)] = c.Int64();
                 }));
  return out;
}

absl::StatusOr<std::vector<BudgetBreachRow>> ClickHouseStoreReader::BudgetBreaches(
    int64_t run_id) {
  std::vector<BudgetBreachRow> out;
  // A store written before breaches were kept.
  if (!HasColumn("budget_breaches", "measured_ns")) return out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT budget, stage, stat, interval_start_utc_ns, limit_ns, measured_ns, "
                   "samples FROM budget_breaches FINAL WHERE run_id = ",
                   run_id, " ORDER BY interval_start_utc_ns, budget"),
      "reading budget breaches", [&](RowBinaryCursor& c) {
        BudgetBreachRow& b = out.emplace_back();
        b.budget = EscapeName(c.String());
        b.stage = EscapeName(c.String());
        b.stat = EscapeName(c.String());
        b.interval_start_utc_ns = c.Int64();
        b.limit_ns = c.Int64();
        b.measured_ns = c.Float64();
        b.samples = c.Int64();
      }));
  return out;
}

absl::StatusOr<std::vector<RunNote>> ClickHouseStoreReader::Notes(int64_t run_id) {
  std::vector<RunNote> out;
  if (!HasColumn("run_notes", "text")) return out;  // a store written before notes were kept
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT kind, text FROM run_notes FINAL WHERE run_id = ", run_id,
                   " ORDER BY kind"),
      "reading run notes", [&](RowBinaryCursor& c) {
        std::string kind = EscapeName(c.String());
        out.push_back(RunNote{std::move(kind), EscapeName(c.String())});
      }));
  return out;
}

absl::StatusOr<std::vector<StageClockRow>> ClickHouseStoreReader::StageClocks(int64_t run_id) {
  std::vector<StageClockRow> out;
  if (!HasColumn("stage_clocks", "clock")) return out;  // a store written before they were kept
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT DISTINCT stage, side, clock FROM stage_clocks WHERE run_id = ", run_id,
                   " ORDER BY stage, side, clock"),
      "reading stage clocks", [&](RowBinaryCursor& c) {
        StageClockRow r;
        r.stage = EscapeName(c.String());
        r.side = EscapeName(c.String());
        r.clock = EscapeName(c.String());
        out.push_back(std::move(r));
      }));
  return out;
}

absl::StatusOr<std::vector<StageStatsRow>> ClickHouseStoreReader::StageStats(int64_t run_id) {
  std::vector<StageStatsRow> rows;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT stage, toInt64(position), toInt64(count), min_ns, max_ns, mean_ns, "
                   "p50_ns, p90_ns, p99_ns, p999_ns, toInt64(migrated), toInt64(negative), "
                   "toInt64(cross_core), include_flagged, toInt64(samples_all), toInt64(skew), "
                   "toInt64(out_of_order), toInt64(late), uncertainty_ns "
                   "FROM stage_stats FINAL WHERE run_id = ",
                   run_id, " ORDER BY position, stage"),
      "reading stage_stats", [&](RowBinaryCursor& c) {
        StageStatsRow r;
        r.stage = c.String();
        r.position = c.Int64();
        r.count = c.Int64();
        r.min_ns = c.NullableFloat64();
        r.max_ns = c.NullableFloat64();
        r.mean_ns = c.NullableFloat64();
        r.p50_ns = c.NullableFloat64();
        r.p90_ns = c.NullableFloat64();
        r.p99_ns = c.NullableFloat64();
        r.p999_ns = c.NullableFloat64();
        r.flag_count(kFlagMigrated) = c.Int64();
        r.flag_count(kFlagNegative) = c.Int64();
        r.flag_count(kFlagCrossCore) = c.Int64();
        r.include_flagged = c.UInt8() != 0;
        r.samples_all = c.Int64();
        r.flag_count(kFlagSkew) = c.Int64();
        r.flag_count(kFlagOutOfOrder) = c.Int64();
        r.flag_count(kFlagLate) = c.Int64();
        r.uncertainty_ns = c.NullableFloat64();
        rows.push_back(std::move(r));
      }));
  return rows;
}

absl::StatusOr<std::vector<std::string>> ClickHouseStoreReader::StageNames(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  return StageNamesOf(*dict);
}

absl::StatusOr<std::vector<ProcessRow>> ClickHouseStoreReader::Processes(int64_t run_id) {
  std::vector<ProcessRow> out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(process_id), toInt64(pid), name, segment, first_seen_utc_ns, "
                   "exited_utc_ns FROM processes FINAL WHERE run_id = ",
                   run_id, " ORDER BY process_id"),
      "reading processes", [&](RowBinaryCursor& c) {
        ProcessRow p;
        p.process_id = c.Int64();
        p.pid = c.Int64();
        p.name = EscapeName(c.String());
        p.segment = EscapeName(c.String());
        p.first_seen_utc_ns = c.NullableInt64().value_or(0);
        p.exited_utc_ns = c.NullableInt64();
        out.push_back(std::move(p));
      }));
  return out;
}

absl::StatusOr<std::vector<ThreadRow>> ClickHouseStoreReader::Threads(int64_t run_id) {
  std::vector<ThreadRow> out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(process_id), toInt64(slot), toInt64(generation), toInt64(tid), "
                   "name, toInt64(drained), toInt64(dropped) FROM threads FINAL WHERE run_id = ",
                   run_id, " ORDER BY process_id, slot, generation"),
      "reading threads", [&](RowBinaryCursor& c) {
        ThreadRow t;
        t.process_id = c.Int64();
        t.slot = c.Int64();
        t.generation = c.Int64();
        t.tid = c.Int64();
        t.name = EscapeName(c.String());
        t.drained = c.Int64();
        t.dropped = c.Int64();
        out.push_back(std::move(t));
      }));
  return out;
}

absl::StatusOr<std::vector<CoreRow>> ClickHouseStoreReader::Cores(int64_t run_id) {
  std::vector<CoreRow> out;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(cpu), offset_ns, bound_ns, consistent, measured_utc_ns "
                   "FROM cores FINAL WHERE run_id = ",
                   run_id, " ORDER BY cpu, measured_utc_ns DESC LIMIT 1 BY cpu"),
      "reading cores", [&](RowBinaryCursor& c) {
        CoreRow r;
        r.cpu = c.Int64();
        r.offset_ns = c.Float64();
        r.bound_ns = c.Float64();
        r.consistent = c.UInt8() != 0;
        r.measured_utc_ns = c.Int64();
        out.push_back(r);
      }));
  return out;
}

absl::Status ClickHouseStoreReader::Truncated(const std::string& what) const {
  return absl::DataLossError(
      absl::StrCat(uri_, ": ", what, ": the server's answer ended inside a row"));
}

absl::StatusOr<std::string> ClickHouseStoreReader::Select(const std::string& sql,
                                                          const std::string& what) {
  absl::StatusOr<std::string> r = client_->Query(absl::StrCat(sql, " FORMAT RowBinary"), database_);
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat(uri_, ": ", what, ": ", r.status().message()));
  }
  return r;
}

absl::Status ClickHouseStoreReader::ForEachRow(const std::string& sql, const std::string& what,
                                               const std::function<void(RowBinaryCursor&)>& row) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::string body, Select(sql, what));
  RowBinaryCursor c(body);
  while (!c.at_end()) {
    row(c);
    if (c.failed()) return Truncated(what);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunRow>> ClickHouseStoreReader::ReadRuns(const std::string& where,
                                                                    const std::string& what) {
  std::vector<RunRow> runs;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT ", kRunColumns, " FROM runs FINAL ", where,
                              " ORDER BY run_id, claim LIMIT 1 BY run_id"),
                 what, [&](RowBinaryCursor& c) { runs.push_back(ReadRun(c)); }));
  return runs;
}

absl::StatusOr<const RunDictionary*> ClickHouseStoreReader::Dictionary(int64_t run_id,
                                                                       bool refresh) {
  auto it = dictionaries_.find(run_id);
  if (it != dictionaries_.end() && !refresh) return &it->second;
  RunDictionary d;
  bool found = false;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT ", kRunColumns, " FROM runs FINAL WHERE run_id = ", run_id,
                              " ORDER BY claim LIMIT 1"),
                 "reading a run", [&](RowBinaryCursor& c) {
                   const RunRow run = ReadRun(c, &d.detail_policy);
                   d.tsc_hz = run.tsc_hz;
                   d.interval_ns = std::max<int64_t>(1, run.interval_ns);
                   found = true;
                 }));
  if (!found) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found in ", uri_));
  for (auto [table_name, names_of_table] :
       {std::pair("names", &d.names), std::pair("stages", &d.stages)}) {
    // Locals, not the structured bindings: clang 14 cannot capture those.
    const char* table = table_name;
    std::vector<std::string>* names = names_of_table;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(", table == std::string_view("names") ? "name_id" : "stage_id",
                     "), name FROM ", table, " FINAL WHERE run_id = ", run_id),
        "reading names", [&](RowBinaryCursor& c) {
          const int64_t id = c.Int64();
          std::string name = EscapeName(c.String());
          if (id < 0 || id > (1 << 24)) return;  // not one of ours
          if (names->size() <= static_cast<size_t>(id)) names->resize(size_t(id) + 1);
          (*names)[static_cast<size_t>(id)] = std::move(name);
        }));
  }
  RunDictionary& slot = dictionaries_[run_id];
  slot = std::move(d);
  return &slot;
}

}  // namespace clickhouse_reader

absl::StatusOr<std::unique_ptr<StoreReader>> OpenClickHouseStoreReader(const store::StoreUri& uri) {
  using namespace clickhouse_reader;  // NOLINT: this file's own helpers
  auto client = std::make_unique<store::HttpClient>(
      store::HttpClientOptions::FromEnvironment(uri.host, uri.port));
  const std::string where = uri.ToString();
  absl::StatusOr<int> version = store::ReadClickHouseSchemaVersion(*client, uri.database);
  if (!version.ok()) {
    const std::string message(version.status().message());
    if (absl::IsNotFound(version.status())) {
      return absl::NotFoundError(absl::StrCat(where, ": no ticktrace store in database '",
                                              uri.database, "' (", message, ")"));
    }
    return absl::Status(version.status().code(), absl::StrCat(where, ": ", message));
  }
  if (*version > store::kClickHouseSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": store schema version ", *version, " is newer than this viewer reads (",
        store::kClickHouseSchemaVersion, "); use a newer ticktrace-view"));
  }
  return std::unique_ptr<StoreReader>(
      new ClickHouseStoreReader(where, uri.database, *version, std::move(client)));
}

}  // namespace ticktrace::store::internal
