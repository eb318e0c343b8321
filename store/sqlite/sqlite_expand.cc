#include "store/sqlite/sqlite_expand.h"

#include <sqlite3.h>

#include <charconv>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "store/common/detail.h"

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

void BindOptional(sqlite3_stmt* s, int i, int32_t v) {
  if (v < 0) {
    sqlite3_bind_null(s, i);
  } else {
    sqlite3_bind_int64(s, i, v);
  }
}

absl::Status Fail(sqlite3* db, absl::string_view what) {
  return absl::InternalError(absl::StrCat("flat rows: ", what, ": ", sqlite3_errmsg(db)));
}

}  // namespace

absl::StatusOr<std::vector<SampleCell>> ParseSampleCells(std::string_view json) {
  std::vector<SampleCell> cells;
  size_t i = 0;
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("orders.samples: not [[stage_id,latency_ns,flags],...] at byte ", i));
  };
  auto expect = [&](char c) {
    if (i < json.size() && json[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  auto number = [&](int64_t* v) {
    const std::from_chars_result r = std::from_chars(json.data() + i, json.data() + json.size(), *v);
    if (r.ec != std::errc()) return false;
    i = static_cast<size_t>(r.ptr - json.data());
    return true;
  };
  if (!expect('[')) return bad();
  if (expect(']')) return i == json.size() ? absl::StatusOr<std::vector<SampleCell>>(cells) : bad();
  do {
    int64_t stage = 0, latency = 0, flags = 0;
    if (!expect('[') || !number(&stage) || !expect(',') || !number(&latency) || !expect(',') ||
        !number(&flags) || !expect(']')) {
      return bad();
    }
    if (stage < 0 || stage > UINT32_MAX || flags < 0 || flags > UINT32_MAX) return bad();
    cells.push_back({static_cast<uint32_t>(stage), latency, static_cast<uint32_t>(flags)});
  } while (expect(','));
  if (!expect(']') || i != json.size()) return bad();
  return cells;
}

absl::Status ExpandDetail(sqlite3* db) {
  char* err = nullptr;
  if (sqlite3_exec(db, kFlatSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("flat rows: ", err ? err : "?"));
    sqlite3_free(err);
    return s;
  }
  // Per run: its TSC rate and its name and stage dictionaries.
  struct Run {
    double tsc_hz = 0;
    std::map<int64_t, std::string> names, stages;
  };
  std::map<int64_t, Run> runs;
  {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT run_id, tsc_hz, 0, 0, '' FROM runs UNION ALL "
                           "SELECT run_id, 0, 1, name_id, name FROM names UNION ALL "
                           "SELECT run_id, 0, 2, stage_id, name FROM stages",
                           -1, &q, nullptr) != SQLITE_OK) {
      return Fail(db, "read dictionaries");
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
      Run& r = runs[sqlite3_column_int64(q, 0)];
      const int which = sqlite3_column_int(q, 2);
      const char* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 4));
      if (which == 0) r.tsc_hz = sqlite3_column_double(q, 1);
      if (which == 1) r.names[sqlite3_column_int64(q, 3)] = text ? text : "";
      if (which == 2) r.stages[sqlite3_column_int64(q, 3)] = text ? text : "";
    }
    sqlite3_finalize(q);
  }
  sqlite3_stmt* orders = nullptr;
  sqlite3_stmt* put_sample = nullptr;
  sqlite3_stmt* put_stamp = nullptr;
  absl::Status status;
  if (sqlite3_prepare_v2(db,
                         "SELECT order_key, run_id, order_id, instance, first_utc_ns, first_tsc, "
                         "samples, detail FROM main.orders ORDER BY order_key",
                         -1, &orders, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT INTO temp.samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                         &put_sample, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "INSERT INTO temp.stamps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                         &put_stamp, nullptr) != SQLITE_OK) {
    status = Fail(db, "prepare");
  }
  if (status.ok()) sqlite3_exec(db, "SAVEPOINT flat", nullptr, nullptr, nullptr);
  int rc = SQLITE_DONE;
  while (status.ok() && (rc = sqlite3_step(orders)) == SQLITE_ROW) {
    const int64_t key = sqlite3_column_int64(orders, 0);
    const int64_t run_id = sqlite3_column_int64(orders, 1);
    const int64_t order_id = sqlite3_column_int64(orders, 2);
    const int64_t instance = sqlite3_column_int64(orders, 3);
    const int64_t first_utc = sqlite3_column_int64(orders, 4);
    const int64_t first_tsc = sqlite3_column_int64(orders, 5);
    const Run& run = runs[run_id];
    const char* json = reinterpret_cast<const char*>(sqlite3_column_text(orders, 6));
    absl::StatusOr<std::vector<SampleCell>> cells =
        ParseSampleCells(json ? std::string_view(json) : std::string_view());
    absl::StatusOr<PackedDetail> detail = UnpackDetail(std::string_view(
        static_cast<const char*>(sqlite3_column_blob(orders, 7)),
        static_cast<size_t>(sqlite3_column_bytes(orders, 7))));
    if (!cells.ok() || !detail.ok()) {
      status = absl::DataLossError(absl::StrCat(
          "order key ", key, ": ", !cells.ok() ? cells.status().message() : detail.status().message()));
      break;
    }
    for (size_t seq = 0; seq < cells->size(); ++seq) {
      const SampleCell& c = (*cells)[seq];
      const PackedSample ctx = seq < detail->samples.size() ? detail->samples[seq] : PackedSample{};
      sqlite3_stmt* s = put_sample;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, order_id);
      sqlite3_bind_int64(s, 3, instance);
      auto stage = run.stages.find(c.stage_id);
      const std::string& name = stage == run.stages.end() ? std::string() : stage->second;
      sqlite3_bind_text(s, 4, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
      sqlite3_bind_int64(s, 5, first_utc + ctx.start_delta_ns);
      sqlite3_bind_int64(s, 6, c.latency_ns);
      BindOptional(s, 7, ctx.process_begin);
      BindOptional(s, 8, ctx.process_end);
      BindOptional(s, 9, ctx.cpu_begin);
      BindOptional(s, 10, ctx.cpu_end);
      sqlite3_bind_int64(s, 11, c.flags);
      sqlite3_bind_int64(s, 12, key);
      sqlite3_bind_int64(s, 13, static_cast<int64_t>(seq));
      if (sqlite3_step(s) != SQLITE_DONE) status = Fail(db, "insert sample");
      sqlite3_reset(s);
    }
    const double ns_per_tick = run.tsc_hz > 0 ? 1e9 / run.tsc_hz : 0;
    for (const PackedStamp& p : detail->stamps) {
      sqlite3_stmt* s = put_stamp;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, order_id);
      sqlite3_bind_int64(s, 3, instance);
      auto tag = run.names.find(p.name_id);
      const std::string& name = tag == run.names.end() ? std::string() : tag->second;
      sqlite3_bind_text(s, 4, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(s, 5, p.is_span ? "span" : "stamp", -1, SQLITE_STATIC);
      sqlite3_bind_int64(s, 6, p.process_id);
      sqlite3_bind_int64(s, 7, p.tid);
      BindOptional(s, 8, p.cpu);
      BindOptional(s, 9, p.is_span ? p.cpu_end : -1);
      sqlite3_bind_int64(s, 10, first_tsc + p.tsc_delta);
      sqlite3_bind_int64(s, 11, first_utc + detail->first_tsc_utc_delta_ns +
                                    static_cast<int64_t>(static_cast<double>(p.tsc_delta) *
                                                         ns_per_tick));
      if (p.is_span) {
        sqlite3_bind_int64(s, 12, p.duration_ns);
      } else {
        sqlite3_bind_null(s, 12);
      }
      sqlite3_bind_int64(s, 13, p.flags);
      sqlite3_bind_int64(s, 14, key);
      if (sqlite3_step(s) != SQLITE_DONE) status = Fail(db, "insert stamp");
      sqlite3_reset(s);
    }
  }
  if (status.ok() && rc != SQLITE_DONE) status = Fail(db, "read orders");
  if (!status.ok()) sqlite3_exec(db, "ROLLBACK TO flat", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "RELEASE flat", nullptr, nullptr, nullptr);
  for (sqlite3_stmt* s : {orders, put_sample, put_stamp}) sqlite3_finalize(s);
  return status;
}

}  // namespace ticktrace::store
