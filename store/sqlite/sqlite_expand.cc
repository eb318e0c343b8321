#include "store/sqlite/sqlite_expand.h"

#include <sqlite3.h>

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "store/common/detail.h"
#include "store/sqlite/sqlite_block_sql.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::store {
namespace {

constexpr const char* kFlatSchema = R"sql(
DROP TABLE IF EXISTS temp.samples;
DROP TABLE IF EXISTS temp.stamps;
CREATE TEMP TABLE samples(
  run_id INTEGER NOT NULL, order_id INTEGER NOT NULL, instance INTEGER NOT NULL,
  stage TEXT NOT NULL, start_utc_ns INTEGER NOT NULL, latency_ns INTEGER NOT NULL,
  process_begin INTEGER, process_end INTEGER, cpu_begin INTEGER, cpu_end INTEGER,
  flags INTEGER NOT NULL, order_key INTEGER NOT NULL, seq INTEGER NOT NULL);
CREATE TEMP TABLE stamps(
  run_id INTEGER NOT NULL, order_id INTEGER NOT NULL, instance INTEGER NOT NULL,
  tag TEXT NOT NULL, kind TEXT NOT NULL, process_id INTEGER NOT NULL, tid INTEGER NOT NULL,
  cpu INTEGER, cpu_end INTEGER, tsc INTEGER NOT NULL, utc_ns INTEGER NOT NULL,
  duration_ns INTEGER, flags INTEGER NOT NULL, order_key INTEGER NOT NULL);
)sql";

using internal::Statement;

// -1 (none) as NULL.
void BindNonNegative(Statement& s, int i, int32_t v) {
  if (v < 0) {
    s.BindNull(i);
  } else {
    s.Bind(i, v);
  }
}

absl::Status Fail(sqlite3* db, absl::string_view what) {
  return absl::InternalError(absl::StrCat("flat rows: ", what, ": ", sqlite3_errmsg(db)));
}

// Per run: its TSC rate and its name and stage dictionaries.
struct Run {
  double tsc_hz = 0;
  std::map<int64_t, std::string> names, stages;
};

absl::StatusOr<std::map<int64_t, Run>> ReadRuns(sqlite3* db) {
  absl::StatusOr<Statement> q =
      Statement::Prepare(db,
                         "SELECT run_id, tsc_hz, 0, 0, '' FROM runs UNION ALL "
                         "SELECT run_id, 0, 1, name_id, name FROM names UNION ALL "
                         "SELECT run_id, 0, 2, stage_id, name FROM stages",
                         "flat rows");
  if (!q.ok()) return Fail(db, "read dictionaries");
  std::map<int64_t, Run> runs;
  q->ForEachRow([&] {
     Run& r = runs[q->Int(0)];
     const int64_t which = q->Int(2);
     if (which == 0) r.tsc_hz = q->Double(1);
     if (which == 1) r.names[q->Int(3)] = q->Text(4);
     if (which == 2) r.stages[q->Int(3)] = q->Text(4);
   }).IgnoreError();
  return runs;
}

// The order at the current row of the orders statement.
struct FlatOrder {
  int64_t key, run_id, order_id, instance, first_utc, first_tsc;
};

absl::Status PutSamples(Statement& s, sqlite3* db, const FlatOrder& o, const Run& run,
                        const std::vector<SampleCell>& cells, const PackedDetail& detail) {
  absl::Status status;
  for (size_t seq = 0; seq < cells.size(); ++seq) {
    const SampleCell& c = cells[seq];
    const PackedSample ctx = seq < detail.samples.size() ? detail.samples[seq] : PackedSample{};
    s.Bind(1, o.run_id).Bind(2, o.order_id).Bind(3, o.instance);
    auto stage = run.stages.find(c.stage_id);
    s.BindText(4, stage == run.stages.end() ? std::string() : stage->second);
    s.Bind(5, o.first_utc + ctx.start_delta_ns).Bind(6, c.latency_ns);
    BindNonNegative(s, 7, ctx.process_begin);
    BindNonNegative(s, 8, ctx.process_end);
    BindNonNegative(s, 9, ctx.cpu_begin);
    BindNonNegative(s, 10, ctx.cpu_end);
    s.Bind(11, c.flags).Bind(12, o.key).Bind(13, static_cast<int64_t>(seq));
    if (!s.Run().ok()) status = Fail(db, "insert sample");
  }
  return status;
}

absl::Status PutStamps(Statement& s, sqlite3* db, const FlatOrder& o, const Run& run,
                       const PackedDetail& detail) {
  absl::Status status;
  const double ns_per_tick = run.tsc_hz > 0 ? 1e9 / run.tsc_hz : 0;
  for (const PackedStamp& p : detail.stamps) {
    s.Bind(1, o.run_id).Bind(2, o.order_id).Bind(3, o.instance);
    auto tag = run.names.find(p.name_id);
    s.BindText(4, tag == run.names.end() ? std::string() : tag->second);
    s.BindTextNoCopy(5, p.is_span ? "span" : "stamp");
    s.Bind(6, p.process_id).Bind(7, p.tid);
    BindNonNegative(s, 8, p.cpu);
    BindNonNegative(s, 9, p.is_span ? p.cpu_end : -1);
    s.Bind(10, o.first_tsc + p.tsc_delta);
    s.Bind(11, o.first_utc + detail.first_tsc_utc_delta_ns +
                   static_cast<int64_t>(static_cast<double>(p.tsc_delta) * ns_per_tick));
    if (p.is_span) {
      s.Bind(12, p.duration_ns);
    } else {
      s.BindNull(12);
    }
    s.Bind(13, p.flags).Bind(14, o.key);
    if (!s.Run().ok()) status = Fail(db, "insert stamp");
  }
  return status;
}

}  // namespace

absl::Status ExpandDetail(sqlite3* db) {
  if (absl::Status s = RegisterBlockSqlFunctions(db); !s.ok()) return s;
  if (absl::Status s = internal::ExecSql(db, kFlatSchema, "flat rows"); !s.ok()) return s;
  absl::StatusOr<std::map<int64_t, Run>> runs = ReadRuns(db);
  if (!runs.ok()) return runs.status();
  absl::StatusOr<Statement> orders = Statement::Prepare(
      db,
      "SELECT order_key, run_id, order_id, instance, first_utc_ns, first_tsc, samples, detail "
      "FROM main.orders ORDER BY order_key",
      "flat rows");
  absl::StatusOr<Statement> put_sample = Statement::Prepare(
      db, "INSERT INTO temp.samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", "flat rows");
  absl::StatusOr<Statement> put_stamp = Statement::Prepare(
      db, "INSERT INTO temp.stamps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", "flat rows");
  if (!orders.ok() || !put_sample.ok() || !put_stamp.ok()) return Fail(db, "prepare");
  sqlite3_exec(db, "SAVEPOINT flat", nullptr, nullptr, nullptr);
  absl::Status status;
  for (;;) {
    const absl::StatusOr<bool> row = orders->Step();
    if (!row.ok()) {
      status = Fail(db, "read orders");
      break;
    }
    if (!*row) break;
    const Statement& q = *orders;
    const FlatOrder o{q.Int(0), q.Int(1), q.Int(2), q.Int(3), q.Int(4), q.Int(5)};
    absl::StatusOr<std::vector<SampleCell>> cells = ParseSampleCells(q.Blob(6));
    absl::StatusOr<PackedDetail> detail = UnpackDetail(q.Blob(7));
    if (!cells.ok() || !detail.ok()) {
      status = absl::DataLossError(absl::StrCat(
          "order key ", o.key, ": ",
          !cells.ok() ? cells.status().message() : detail.status().message()));
      break;
    }
    const Run& run = (*runs)[o.run_id];
    status = PutSamples(*put_sample, db, o, run, *cells, *detail);
    if (absl::Status s = PutStamps(*put_stamp, db, o, run, *detail); !s.ok()) status = s;
    if (!status.ok()) break;
  }
  if (!status.ok()) sqlite3_exec(db, "ROLLBACK TO flat", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "RELEASE flat", nullptr, nullptr, nullptr);
  return status;
}

}  // namespace ticktrace::store
