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
#include "store/sqlite/sqlite_statement.h"
#include "store/sqlite/sqlite_writer.h"

namespace ticktrace::store {
namespace {

using internal::Statement;

absl::Status Exec(sqlite3* db, const std::string& sql, const std::string& path) {
  return internal::ExecSql(db, sql.c_str(), absl::StrCat(path, ": migration"));
}

// The migration's one error: Internal, with SQLite's message.
absl::Status MigrationError(sqlite3* db, const std::string& path) {
  return absl::InternalError(absl::StrCat(path, ": migration: ", sqlite3_errmsg(db)));
}

int32_t OptionalInt(const Statement& s, int i) {
  return s.IsNull(i) ? -1 : static_cast<int32_t>(s.Int(i));
}

// The three statements that read one schema-1 order.
struct V1Statements {
  Statement orders, samples, stamps;
};

absl::StatusOr<V1Statements> PrepareV1(sqlite3* db, const std::string& path) {
  V1Statements v1;
  for (auto [out, sql] : {
           std::pair(&v1.orders,
                     "SELECT order_id, parent_order_id, first_utc_ns, total_ns, complete, "
                     "missing FROM v1_orders WHERE run_id = ? ORDER BY first_utc_ns, order_id"),
           std::pair(&v1.samples,
                     "SELECT stage, start_utc_ns, latency_ns, process_begin, process_end, "
                     "cpu_begin, cpu_end, flags FROM v1_samples WHERE run_id = ? AND "
                     "order_id = ? ORDER BY rowid"),
           std::pair(&v1.stamps,
                     "SELECT tag, kind, process_id, tid, cpu, cpu_end, tsc, utc_ns, "
                     "duration_ns, flags FROM v1_stamps WHERE run_id = ? AND order_id = ? "
                     "ORDER BY tsc"),
       }) {
    absl::StatusOr<Statement> prepared = Statement::Prepare(db, sql, path);
    if (!prepared.ok()) return MigrationError(db, path);
    *out = *std::move(prepared);
  }
  return v1;
}

// The order at `orders`' current row.
OrderDetail ReadV1Order(const Statement& orders) {
  OrderDetail o;
  o.order_id = static_cast<uint64_t>(orders.Int(0));
  if (!orders.IsNull(1)) o.parent_order_id = static_cast<uint64_t>(orders.Int(1));
  o.first_utc_ns = orders.Int(2);
  if (!orders.IsNull(3)) o.total_ns = orders.Double(3);
  o.complete = orders.Int(4) != 0;
  o.missing = orders.Text(5);
  return o;
}

// Appends the order's stamps, by tsc (a read error ends them, as before
// schema 2 existed: the migration keeps what it can read).
void ReadV1Stamps(Statement& stamps, OrderDetail* o) {
  stamps.ForEachRow([&] {
          StampDetail st;
          st.tag = stamps.Text(0);
          st.is_span = stamps.Text(1) == "span";
          st.process_id = static_cast<uint32_t>(stamps.Int(2));
          st.tid = static_cast<uint32_t>(stamps.Int(3));
          st.cpu = OptionalInt(stamps, 4);
          st.cpu_end = OptionalInt(stamps, 5);
          st.tsc = static_cast<uint64_t>(stamps.Int(6));
          st.utc_ns = stamps.Int(7);
          st.duration_ns = stamps.Double(8);
          st.flags = static_cast<uint32_t>(stamps.Int(9));
          o->stamps.push_back(std::move(st));
        })
      .IgnoreError();
}

// Appends the order's samples and adds each to its stage's interval delta;
// `excluded` flags keep a sample out of the histogram.
void ReadV1Samples(Statement& samples, int64_t interval, uint32_t excluded,
                   std::map<std::pair<std::string, int64_t>, IntervalDelta>* deltas,
                   OrderDetail* o) {
  samples.ForEachRow([&] {
          SampleDetail sd;
          sd.stage = samples.Text(0);
          sd.start_utc_ns = samples.Int(1);
          sd.latency_ns = samples.Double(2);
          sd.process_begin = OptionalInt(samples, 3);
          sd.process_end = OptionalInt(samples, 4);
          sd.cpu_begin = OptionalInt(samples, 5);
          sd.cpu_end = OptionalInt(samples, 6);
          sd.flags = static_cast<uint32_t>(samples.Int(7));
          auto [it, fresh] = deltas->try_emplace({sd.stage, interval});
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
          o->samples.push_back(std::move(sd));
        })
      .IgnoreError();
}

// Moves one schema-1 run's detail into the schema-2 tables, computing its
// intervals on the way.
absl::Status MigrateRunV1(SqliteWriter* writer, int64_t run_id, bool include_flagged,
                          const std::string& path) {
  sqlite3* db = writer->db();
  constexpr int64_t kIntervalNs = 1'000'000'000;
  writer->set_interval_ns(kIntervalNs);
  const uint32_t excluded = include_flagged ? 0 : kFlagsExcludedByDefault;
  absl::StatusOr<V1Statements> v1 = PrepareV1(db, path);
  if (!v1.ok()) return v1.status();
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
  v1->orders.Bind(1, run_id);
  for (;;) {
    const absl::StatusOr<bool> row = v1->orders.Step();
    if (!row.ok()) return MigrationError(db, path);
    if (!*row) break;
    OrderDetail o = ReadV1Order(v1->orders);
    for (Statement* q : {&v1->samples, &v1->stamps}) {
      q->Rewind();
      q->Bind(1, run_id).Bind(2, static_cast<int64_t>(o.order_id));
    }
    ReadV1Stamps(v1->stamps, &o);
    // The stamps come by tsc: the first is the reference.
    if (!o.stamps.empty()) {
      o.first_tsc = o.stamps.front().tsc;
      o.first_tsc_utc_ns = o.stamps.front().utc_ns;
    }
    const int64_t interval = o.first_utc_ns - (((o.first_utc_ns % kIntervalNs) + kIntervalNs) %
                                               kIntervalNs);
    ++orders_per_interval[interval];
    ReadV1Samples(v1->samples, interval, excluded, &deltas, &o);
    batch.push_back(std::move(o));
    // Bounded memory: a histogram is ~140 kB.
    if (batch.size() >= 5000 || deltas.size() >= 64) {
      if (absl::Status s = flush(); !s.ok()) return s;
    }
  }
  return flush();
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
    absl::StatusOr<Statement> q = Statement::Prepare(
        db,
        "SELECT run_id, (SELECT max(include_flagged) FROM v1_stage_stats v "
        "WHERE v.run_id = r.run_id) FROM runs r ORDER BY run_id",
        path);
    if (!q.ok()) {
      s = MigrationError(db, path);
    } else {
      q->ForEachRow([&] { runs.emplace_back(q->Int(0), q->Int(1) != 0); }).IgnoreError();
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
