// Migration of SQLite stores to the current schema (docs/store.md,
// "Migration"). Schema 1 kept one row per stamp, sample and order; schema 2
// packs each order's detail into one row and adds interval statistics, which
// the migration computes from the old samples, so that an old run answers
// window queries like a new one.

#include <sqlite3.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_writer.h"

namespace ticktrace::store {
namespace {

absl::Status Exec(sqlite3* db, const std::string& sql, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(
        absl::StrCat(path, ": migration: ", err ? err : "sqlite error"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

std::string Text(sqlite3_stmt* s, int i) {
  const char* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return t ? t : "";
}

int32_t OptionalInt(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1
                                                  : static_cast<int32_t>(sqlite3_column_int64(s, i));
}

// Moves one schema-1 run's detail into the schema-2 tables, computing its
// intervals on the way.
absl::Status MigrateRunV1(SqliteWriter* writer, int64_t run_id, bool include_flagged,
                          const std::string& path) {
  sqlite3* db = writer->db();
  constexpr int64_t kIntervalNs = 1'000'000'000;
  writer->set_interval_ns(kIntervalNs);
  const uint32_t excluded = include_flagged ? 0 : kFlagsExcludedByDefault;
  sqlite3_stmt* orders = nullptr;
  sqlite3_stmt* samples = nullptr;
  sqlite3_stmt* stamps = nullptr;
  absl::Status status;
  if (sqlite3_prepare_v2(db,
                         "SELECT order_id, parent_order_id, first_utc_ns, total_ns, complete, "
                         "missing FROM v1_orders WHERE run_id = ? ORDER BY first_utc_ns, order_id",
                         -1, &orders, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT stage, start_utc_ns, latency_ns, process_begin, process_end, "
                         "cpu_begin, cpu_end, flags FROM v1_samples WHERE run_id = ? AND "
                         "order_id = ? ORDER BY rowid",
                         -1, &samples, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT tag, kind, process_id, tid, cpu, cpu_end, tsc, utc_ns, "
                         "duration_ns, flags FROM v1_stamps WHERE run_id = ? AND order_id = ? "
                         "ORDER BY tsc",
                         -1, &stamps, nullptr) != SQLITE_OK) {
    status = absl::InternalError(absl::StrCat(path, ": migration: ", sqlite3_errmsg(db)));
  }
  std::map<std::pair<std::string, int64_t>, IntervalDelta> deltas;
  std::map<int64_t, uint64_t> orders_per_interval;
  std::vector<OrderDetail> batch;
  auto flush = [&]() -> absl::Status {
    std::vector<IntervalDelta> d;
    for (auto& [key, delta] : deltas) d.push_back(std::move(delta));
    std::vector<IntervalOrders> io;
    for (const auto& [start, n] : orders_per_interval) io.push_back({start, n, 0});
    uint64_t already = 0;
    absl::Status s = writer->Write(run_id, d, io, batch, nullptr, &already);
    deltas.clear();
    orders_per_interval.clear();
    batch.clear();
    return s;
  };
  if (status.ok()) sqlite3_bind_int64(orders, 1, run_id);
  int rc = SQLITE_DONE;
  while (status.ok() && (rc = sqlite3_step(orders)) == SQLITE_ROW) {
    OrderDetail o;
    o.order_id = static_cast<uint64_t>(sqlite3_column_int64(orders, 0));
    if (sqlite3_column_type(orders, 1) != SQLITE_NULL) {
      o.parent_order_id = static_cast<uint64_t>(sqlite3_column_int64(orders, 1));
    }
    o.first_utc_ns = sqlite3_column_int64(orders, 2);
    if (sqlite3_column_type(orders, 3) != SQLITE_NULL) o.total_ns = sqlite3_column_double(orders, 3);
    o.complete = sqlite3_column_int(orders, 4) != 0;
    o.missing = Text(orders, 5);
    for (sqlite3_stmt* q : {samples, stamps}) {
      sqlite3_reset(q);
      sqlite3_bind_int64(q, 1, run_id);
      sqlite3_bind_int64(q, 2, static_cast<int64_t>(o.order_id));
    }
    while (sqlite3_step(stamps) == SQLITE_ROW) {
      StampDetail st;
      st.tag = Text(stamps, 0);
      st.is_span = Text(stamps, 1) == "span";
      st.process_id = static_cast<uint32_t>(sqlite3_column_int64(stamps, 2));
      st.tid = static_cast<uint32_t>(sqlite3_column_int64(stamps, 3));
      st.cpu = OptionalInt(stamps, 4);
      st.cpu_end = OptionalInt(stamps, 5);
      st.tsc = static_cast<uint64_t>(sqlite3_column_int64(stamps, 6));
      st.utc_ns = sqlite3_column_int64(stamps, 7);
      st.duration_ns = sqlite3_column_double(stamps, 8);
      st.flags = static_cast<uint32_t>(sqlite3_column_int64(stamps, 9));
      o.stamps.push_back(std::move(st));
    }
    // The stamps come by tsc: the first is the reference.
    if (!o.stamps.empty()) {
      o.first_tsc = o.stamps.front().tsc;
      o.first_tsc_utc_ns = o.stamps.front().utc_ns;
    }
    const int64_t interval = o.first_utc_ns - (((o.first_utc_ns % kIntervalNs) + kIntervalNs) %
                                               kIntervalNs);
    ++orders_per_interval[interval];
    while (sqlite3_step(samples) == SQLITE_ROW) {
      SampleDetail sd;
      sd.stage = Text(samples, 0);
      sd.start_utc_ns = sqlite3_column_int64(samples, 1);
      sd.latency_ns = sqlite3_column_double(samples, 2);
      sd.process_begin = OptionalInt(samples, 3);
      sd.process_end = OptionalInt(samples, 4);
      sd.cpu_begin = OptionalInt(samples, 5);
      sd.cpu_end = OptionalInt(samples, 6);
      sd.flags = static_cast<uint32_t>(sqlite3_column_int64(samples, 7));
      auto [it, fresh] = deltas.try_emplace({sd.stage, interval});
      IntervalDelta& d = it->second;
      if (fresh) {
        d.stage = sd.stage;
        d.kind = StageKindOfName(sd.stage);
        d.start_utc_ns = interval;
      }
      ++d.samples_all;
      for (size_t f = 0; f < kFlagNames.size(); ++f) {
        if (sd.flags & kFlagNames[f].bit) ++d.flag_counts[f];
      }
      if ((sd.flags & excluded) == 0) d.histogram.Add(sd.latency_ns);
      o.samples.push_back(std::move(sd));
    }
    batch.push_back(std::move(o));
    // Bounded memory: a histogram is ~140 kB.
    if (batch.size() >= 5000 || deltas.size() >= 64) status = flush();
  }
  if (status.ok() && rc != SQLITE_DONE) {
    status = absl::InternalError(absl::StrCat(path, ": migration: ", sqlite3_errmsg(db)));
  }
  if (status.ok()) status = flush();
  for (sqlite3_stmt* s : {orders, samples, stamps}) sqlite3_finalize(s);
  return status;
}

}  // namespace

absl::Status MigrateToCurrent(SqliteWriter* writer, int from_version, const std::string& path) {
  if (from_version != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": no migration from store schema ", from_version));
  }
  sqlite3* db = writer->db();
  absl::Status s = Exec(db, "BEGIN IMMEDIATE", path);
  if (!s.ok()) return s;
  writer->set_in_migration(true);
  for (const char* sql : {
           "ALTER TABLE orders RENAME TO v1_orders",
           "ALTER TABLE samples RENAME TO v1_samples",
           "ALTER TABLE stamps RENAME TO v1_stamps",
           "ALTER TABLE stage_stats RENAME TO v1_stage_stats",
           "ALTER TABLE runs ADD COLUMN interval_ns INTEGER NOT NULL DEFAULT 1000000000",
           "ALTER TABLE runs ADD COLUMN detail TEXT NOT NULL DEFAULT 'all'",
           "ALTER TABLE runs ADD COLUMN utc_drift_ppm REAL",
       }) {
    if (s.ok()) s = Exec(db, sql, path);
  }
  if (s.ok()) s = Exec(db, SqliteSchemaSql(), path);
  if (s.ok()) s = writer->PrepareStatements();
  if (s.ok()) {
    s = Exec(db,
             "INSERT INTO stage_stats(run_id, stage, position, count, min_ns, max_ns, mean_ns, "
             "p50_ns, p90_ns, p99_ns, p999_ns, migrated, negative, cross_core, include_flagged, "
             "samples_all) SELECT run_id, stage, position, count, min_ns, max_ns, mean_ns, "
             "p50_ns, p90_ns, p99_ns, p999_ns, migrated, negative, cross_core, include_flagged, "
             "samples_all FROM v1_stage_stats",
             path);
  }
  // The runs, and whether each counted flagged samples in its percentiles.
  std::vector<std::pair<int64_t, bool>> runs;
  if (s.ok()) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT run_id, (SELECT max(include_flagged) FROM v1_stage_stats v "
                           "WHERE v.run_id = r.run_id) FROM runs r ORDER BY run_id",
                           -1, &q, nullptr) != SQLITE_OK) {
      s = absl::InternalError(absl::StrCat(path, ": migration: ", sqlite3_errmsg(db)));
    } else {
      while (sqlite3_step(q) == SQLITE_ROW) {
        runs.emplace_back(sqlite3_column_int64(q, 0), sqlite3_column_int(q, 1) != 0);
      }
      sqlite3_finalize(q);
    }
  }
  for (const auto& [run_id, include_flagged] : runs) {
    if (s.ok()) s = MigrateRunV1(writer, run_id, include_flagged, path);
  }
  for (const char* sql : {"DROP TABLE v1_samples", "DROP TABLE v1_stamps", "DROP TABLE v1_orders",
                          "DROP TABLE v1_stage_stats",
                          "UPDATE meta SET value = '2' WHERE key = 'schema_version'"}) {
    if (s.ok()) s = Exec(db, sql, path);
  }
  writer->set_in_migration(false);
  if (!s.ok()) {
    Exec(db, "ROLLBACK", path).IgnoreError();
    return s;
  }
  s = Exec(db, "COMMIT", path);
  if (s.ok()) s = Exec(db, "VACUUM", path);  // give the old tables' pages back
  return s;
}

}  // namespace ticktrace::store
