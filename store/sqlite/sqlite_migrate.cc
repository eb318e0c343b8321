// Migration of SQLite stores to the current schema (docs/store.md,
// "Migration"). Schema 1 kept one row per stamp, sample and order; schema 2
// packs each order's detail into one row and adds interval statistics, which
// the migration computes from the old samples, so that an old run answers
// window queries like a new one; schema 3 keeps orders in blocks
// (sqlite_blocks.h), and a schema-2 store's rows move into them as they are.

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_expand.h"
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

// Schema 1 to the current one: the old rows become orders, written as new
// ones are, and each run's intervals are computed from its samples.
absl::Status MigrateFromV1(SqliteWriter* writer, const std::string& path) {
  sqlite3* db = writer->db();
  absl::Status s;
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
                          "DROP TABLE v1_stage_stats"}) {
    if (s.ok()) s = Exec(db, sql, path);
  }
  return s;
}

// One schema-2 run's orders (a row each) into schema 3's blocks, in the
// order they were stored; interval_detail's key ranges follow the new keys.
absl::Status MigrateRunV2(sqlite3* db, int64_t run_id, int64_t interval_ns,
                          const std::string& path) {
  interval_ns = std::max<int64_t>(1, interval_ns);
  absl::StatusOr<Statement> rows = Statement::Prepare(
      db,
      "SELECT order_id, instance, parent_order_id, first_utc_ns, first_tsc, total_ns, complete, "
      "missing, flags, samples, detail FROM v2_orders WHERE run_id = ? ORDER BY order_key",
      path);
  absl::StatusOr<Statement> put_block = Statement::Prepare(
      db, "INSERT INTO order_blocks(run_id, start_utc_ns, orders, detail) VALUES(?,?,?,?)", path);
  absl::StatusOr<Statement> put_id = Statement::Prepare(
      db, "INSERT OR IGNORE INTO order_ids(run_id, id_page, block_key) VALUES(?,?,?)", path);
  absl::StatusOr<Statement> put_keys = Statement::Prepare(
      db,
      "INSERT INTO interval_detail(run_id, start_utc_ns, orders, orders_kept, first_order_key, "
      "last_order_key) VALUES(?1,?2,?3,?3,?4,?5) ON CONFLICT(run_id, start_utc_ns) DO UPDATE "
      "SET first_order_key = excluded.first_order_key, last_order_key = excluded.last_order_key",
      path);
  if (!rows.ok() || !put_block.ok() || !put_id.ok() || !put_keys.ok()) {
    return MigrationError(db, path);
  }
  struct Block {
    int64_t count = 0;
    std::string orders = "[";
    std::string detail;
    std::vector<int64_t> pages;
  };
  struct Keys {
    int64_t count = 0, first = 0, last = 0;
  };
  std::map<int64_t, Block> open;  // by interval start
  std::map<int64_t, Keys> keys;
  const auto flush = [&](int64_t start, Block& b) -> absl::Status {
    if (b.count == 0) return absl::OkStatus();
    b.orders.push_back(']');
    put_block->Reset();
    put_block->Bind(1, run_id).Bind(2, start).BindTextNoCopy(3, b.orders);
    put_block->BindBlobNoCopy(4, b.detail);
    if (!put_block->Run().ok()) return MigrationError(db, path);
    const int64_t block_key = sqlite3_last_insert_rowid(db);
    Keys& k = keys[start];
    if (k.count == 0) k.first = block_key * kOrdersPerBlock;
    k.count += b.count;
    k.last = block_key * kOrdersPerBlock + b.count - 1;
    std::sort(b.pages.begin(), b.pages.end());
    b.pages.erase(std::unique(b.pages.begin(), b.pages.end()), b.pages.end());
    for (const int64_t page : b.pages) {
      put_id->Reset();
      put_id->Bind(1, run_id).Bind(2, page).Bind(3, block_key);
      if (!put_id->Run().ok()) return MigrationError(db, path);
    }
    b = Block();
    return absl::OkStatus();
  };
  rows->Bind(1, run_id);
  for (;;) {
    const absl::StatusOr<bool> row = rows->Step();
    if (!row.ok()) return MigrationError(db, path);
    if (!*row) break;
    const Statement& r = *rows;
    const int64_t order_id = r.Int(0);
    const std::string_view samples = r.Blob(9);
    if (!ParseSampleCells(samples).ok()) {
      return absl::DataLossError(absl::StrCat(path, ": migration: order ", order_id, " of run ",
                                              run_id, " has unreadable samples; left as it was"));
    }
    const int64_t first_utc_ns = r.Int(3);
    const int64_t start =
        first_utc_ns - (((first_utc_ns % interval_ns) + interval_ns) % interval_ns);
    if (open.size() > 64 && open.find(start) == open.end()) {
      for (auto& [s, b] : open) {
        if (absl::Status st = flush(s, b); !st.ok()) return st;
      }
      open.clear();
    }
    Block& b = open[start];
    const std::string_view detail = r.Blob(10);
    if (b.count > 0) b.orders.push_back(',');
    AppendBlockOrderJson(order_id, r.Int(1), r.OptionalInt(2), first_utc_ns, start, r.Int(4),
                         r.OptionalInt(5), r.Int(6) != 0, r.IsNull(7) ? "" : r.Blob(7),
                         static_cast<uint32_t>(r.Int(8)), samples, b.detail.size(), detail.size(),
                         &b.orders);
    b.detail.append(detail);
    b.pages.push_back(IdPage(order_id));
    if (++b.count == kOrdersPerBlock) {
      if (absl::Status st = flush(start, b); !st.ok()) return st;
    }
  }
  for (auto& [s, b] : open) {
    if (absl::Status st = flush(s, b); !st.ok()) return st;
  }
  for (const auto& [start, k] : keys) {
    put_keys->Reset();
    put_keys->Bind(1, run_id).Bind(2, start).Bind(3, k.count).Bind(4, k.first).Bind(5, k.last);
    if (!put_keys->Run().ok()) return MigrationError(db, path);
  }
  return absl::OkStatus();
}

// Schema 2 to 3: the orders table becomes blocks; `orders` and
// `stage_latencies` become views over them.
absl::Status MigrateFromV2(SqliteWriter* writer, const std::string& path) {
  sqlite3* db = writer->db();
  absl::Status s;
  // The view goes first: renaming `orders` would rewrite it to v2_orders.
  for (const char* sql :
       {"DROP VIEW IF EXISTS stage_latencies", "DROP INDEX IF EXISTS orders_by_id",
        "ALTER TABLE orders RENAME TO v2_orders",
        // Keys of the old rows: each interval gets its new range below.
        "UPDATE interval_detail SET first_order_key = NULL, "
        "last_order_key = NULL"}) {
    if (s.ok()) s = Exec(db, sql, path);
  }
  if (s.ok()) s = Exec(db, SqliteSchemaSql(), path);
  if (s.ok()) s = writer->PrepareStatements();
  std::vector<std::pair<int64_t, int64_t>> runs;  // run_id, interval_ns
  if (s.ok()) {
    absl::StatusOr<Statement> q =
        Statement::Prepare(db, "SELECT run_id, interval_ns FROM runs ORDER BY run_id", path);
    if (!q.ok()) {
      s = MigrationError(db, path);
    } else if (!q->ForEachRow([&] { runs.emplace_back(q->Int(0), q->Int(1)); }).ok()) {
      s = MigrationError(db, path);
    }
  }
  for (const auto& [run_id, interval_ns] : runs) {
    if (s.ok()) s = MigrateRunV2(db, run_id, interval_ns, path);
  }
  if (s.ok()) s = Exec(db, "DROP TABLE v2_orders", path);
  return s;
}

}  // namespace

absl::Status MigrateToCurrent(SqliteWriter* writer, int from_version, const std::string& path) {
  if (from_version != 1 && from_version != 2) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": no migration from store schema ", from_version));
  }
  sqlite3* db = writer->db();
  absl::Status s = Exec(db, "BEGIN IMMEDIATE", path);
  if (!s.ok()) return s;
  writer->set_in_migration(true);
  if (from_version == 2) {
    s = MigrateFromV2(writer, path);
  } else {
    s = MigrateFromV1(writer, path);
  }
  if (s.ok()) {
    s = Exec(db,
             absl::StrCat("UPDATE meta SET value = '", kSqliteSchemaVersion,
                          "' WHERE key = 'schema_version'"),
             path);
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
