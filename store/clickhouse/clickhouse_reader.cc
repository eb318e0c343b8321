// The ClickHouse StoreReader: ClickHouse schema 1 (docs/clickhouse.md, DDL in
// store/clickhouse/clickhouse_schema_sql.inc), read-only, over the HTTP
// interface (store::HttpClient), every answer in RowBinary (row_binary.h).
//
// Where each answer comes from, and how the writer's append-only rows are
// read (the DDL's header says which table is which):
//   runs, processes, threads, tags, counters, stage_stats   FINAL (the latest
//                         snapshot of a ReplacingMergeTree row)
//   stages, names, cores  FINAL (insert-once dictionaries, re-sent rows)
//   intervals             delta rows: summed per (stage, start) or per
//                         bucket in SQL, histograms merged here
//                         (store::Histogram::MergeEncoded)
//   interval_detail       delta rows: orders/orders_kept summed, deleted max
//   orders                one row per instance; its samples are three
//                         arrays, its context and stamps the packed detail
//                         (store/common/detail.h, packed_rows.h)
//   slowest orders        ranked by the server (ARRAY JOIN, LIMIT 1 BY)
//
// Order ids are UInt64 in ClickHouse and int64 (two's complement) in the
// viewer's rows: converted at this boundary.

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
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/common/detail.h"
#include "ticktrace/store/histogram.h"
#include "store/clickhouse/http_client.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/clickhouse/row_binary.h"
#include "common/status_macros.h"
#include "store/common/window_rows.h"

namespace ticktrace::store::internal {
// Named (not anonymous): a unity build may put this file beside the SQLite
// reader, whose helpers have the same names in their own namespace.
namespace clickhouse_reader {

// An order id as the viewer has it (int64) as ClickHouse's UInt64 literal.
std::string IdLiteral(int64_t order_id) {
  return absl::StrCat(static_cast<uint64_t>(order_id));
}

// `AND col >= since AND col < until` for the set ends of a window.
std::string WindowClause(const char* column, const TimeWindow& w) {
  std::string out;
  if (w.since_utc_ns) absl::StrAppend(&out, " AND ", column, " >= ", *w.since_utc_ns);
  if (w.until_utc_ns) absl::StrAppend(&out, " AND ", column, " < ", *w.until_utc_ns);
  return out;
}

// The flag columns summed, in kFlagNames order ("toInt64(sum(migrated)), ...").
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
  run.session = c.String();
  run.host = c.String();
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

constexpr char kOrderColumns[] =
    "toInt64(order_id), toInt64(instance), parent_order_id, first_utc_ns, total_ns, complete, "
    "missing, flags";

OrderRow ReadOrder(RowBinaryCursor& c) {
  OrderRow row;
  row.order_id = c.Int64();
  row.instance = c.Int64();
  if (const std::optional<uint64_t> p = c.NullableUInt64()) row.parent_order_id = int64_t(*p);
  row.first_utc_ns = c.Int64();
  if (const std::optional<int64_t> t = c.NullableInt64()) row.total_ns = double(*t);
  row.complete = c.UInt8() != 0;
  row.missing = c.String();
  row.late = (c.UInt32() & store::kFlagLate) != 0;
  return row;
}

// An order with what its samples and stamps need.
constexpr char kOrderSampleColumns[] =
    "toInt64(order_id), toInt64(instance), first_utc_ns, toInt64(first_tsc), detail, "
    "sample_stage_ids, sample_latency_ns, sample_flags";

struct OrderSamplesRow {
  OrderKeyFields key;
  std::string_view detail;
  std::vector<uint32_t> stage_ids;
  std::vector<int64_t> latency_ns;
  std::vector<uint32_t> flags;
};

OrderSamplesRow ReadOrderSamples(RowBinaryCursor& c) {
  OrderSamplesRow r;
  r.key.order_id = c.Int64();
  r.key.instance = c.Int64();
  r.key.first_utc_ns = c.Int64();
  r.key.first_tsc = c.Int64();
  r.detail = c.Bytes();
  r.stage_ids = c.Array<uint32_t>([](RowBinaryCursor& x) { return x.UInt32(); });
  r.latency_ns = c.Array<int64_t>([](RowBinaryCursor& x) { return x.Int64(); });
  r.flags = c.Array<uint32_t>([](RowBinaryCursor& x) { return x.UInt32(); });
  return r;
}

class ClickHouseStoreReader final : public StoreReader {
 public:
  ClickHouseStoreReader(std::string uri, std::string database, int version,
                        std::unique_ptr<store::HttpClient> client)
      : uri_(std::move(uri)),
        database_(std::move(database)),
        version_(version),
        client_(std::move(client)) {}

  const std::string& path() const override { return uri_; }
  int schema_version() const override { return version_; }

  bool HasColumn(const char* table, const char* column) override {
    absl::StatusOr<std::string> r = Select(
        absl::StrCat("SELECT toUInt64(count()) FROM system.columns WHERE database = ",
                     store::ClickHouseQuote(database_), " AND table = ",
                     store::ClickHouseQuote(table), " AND name = ", store::ClickHouseQuote(column)),
        "reading the schema");
    if (!r.ok()) return false;
    RowBinaryCursor c(*r);
    return c.UInt64() > 0 && !c.failed();
  }

  absl::StatusOr<std::vector<RunRow>> ListRuns() override {
    return ReadRuns("", "listing runs");
  }

  absl::StatusOr<RunRow> GetRun(std::optional<int64_t> run_id) override {
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

  absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id) override {
    std::map<std::string, int64_t> out;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT name, value FROM counters FINAL WHERE run_id = ", run_id),
        "reading counters", [&](RowBinaryCursor& c) {
          std::string name = c.String();
          out[std::move(name)] = c.Int64();
        }));
    return out;
  }

  absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id) override {
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

  absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    std::vector<std::string> names;
    for (const std::string& s : dict->stages) {
      if (!s.empty()) names.push_back(s);
    }
    return names;
  }

  absl::StatusOr<std::vector<ProcessRow>> Processes(int64_t run_id) override {
    std::vector<ProcessRow> out;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(process_id), toInt64(pid), name, segment, first_seen_utc_ns, "
                     "exited_utc_ns FROM processes FINAL WHERE run_id = ",
                     run_id, " ORDER BY process_id"),
        "reading processes", [&](RowBinaryCursor& c) {
          ProcessRow p;
          p.process_id = c.Int64();
          p.pid = c.Int64();
          p.name = c.String();
          p.segment = c.String();
          p.first_seen_utc_ns = c.NullableInt64().value_or(0);
          p.exited_utc_ns = c.NullableInt64();
          out.push_back(std::move(p));
        }));
    return out;
  }

  absl::StatusOr<std::vector<ThreadRow>> Threads(int64_t run_id) override {
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
          t.name = c.String();
          t.drained = c.Int64();
          t.dropped = c.Int64();
          out.push_back(std::move(t));
        }));
    return out;
  }

  absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id) override {
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

  // The orders of the first and the last interval with samples give the
  // earliest and the latest sample start (an order's samples start at or
  // after its first stamp; the last interval's predecessor is read too, its
  // orders may start samples later); without detail, the intervals' extent.
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(
      int64_t run_id) override {
    using Span = std::optional<std::pair<int64_t, int64_t>>;
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    const int64_t interval = dict->interval_ns;
    std::optional<std::pair<int64_t, int64_t>> firsts;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toUInt64(count()), min(first_utc_ns), max(first_utc_ns) FROM orders "
                     "WHERE run_id = ", run_id, " AND notEmpty(sample_stage_ids)"),
        "reading the time span of the samples", [&](RowBinaryCursor& c) {
          const uint64_t n = c.UInt64();
          const int64_t lo = c.Int64(), hi = c.Int64();
          if (n > 0) firsts = std::make_pair(lo, hi);
        }));
    if (firsts) {
      int64_t first = kMaxTime, last = kMinTime;
      const auto visit = [&](const SampleRow& r) {
        first = std::min(first, r.start_utc_ns);
        last = std::max(last, r.start_utc_ns);
      };
      const int64_t lo = FloorTo(firsts->first, interval);
      const int64_t hi = FloorTo(firsts->second, interval);
      TICKTRACE_RETURN_IF_ERROR(ScanSamples(
          run_id, absl::StrCat(" AND first_utc_ns >= ", lo, " AND first_utc_ns < ", lo + interval),
          std::nullopt, false, visit));
      TICKTRACE_RETURN_IF_ERROR(ScanSamples(
          run_id,
          absl::StrCat(" AND first_utc_ns >= ", std::max(hi - interval, lo + interval),
                       " AND first_utc_ns < ", hi + interval),
          std::nullopt, false, visit));
      if (first <= last) return Span(std::make_pair(first, last));
    }
    Span span;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toUInt64(count()), min(start_utc_ns), max(start_utc_ns) FROM "
                     "interval_detail WHERE run_id = ", run_id),
        "reading the time span of the intervals", [&](RowBinaryCursor& c) {
          const uint64_t n = c.UInt64();
          const int64_t lo = c.Int64(), hi = c.Int64();
          if (n > 0) span = std::make_pair(lo, hi + interval - 1);
        }));
    return span;
  }

  absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                             const std::function<void(const SampleRow&)>& visit) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    std::optional<int64_t> stage_id;
    if (filter.stage.has_value()) {
      stage_id = StageIdOf(*dict, *filter.stage);
      if (!stage_id.has_value()) return absl::OkStatus();  // no sample of that stage
    }
    const SampleMatcher passes(filter);
    // A sample starts at or after its order's first stamp: orders that
    // start after `until` hold none of the window.
    std::string where;
    if (filter.until_utc_ns) absl::StrAppend(&where, " AND first_utc_ns <= ", *filter.until_utc_ns);
    return ScanSamples(run_id, where, stage_id, ordered, [&](const SampleRow& r) {
      if (passes(r)) visit(r);
    });
  }

  absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id,
                                                        int64_t order_id) override {
    std::vector<SampleRow> out;
    TICKTRACE_RETURN_IF_ERROR(ScanSamples(run_id,
                                          absl::StrCat(" AND order_id = ", IdLiteral(order_id)),
                                          std::nullopt, true,
                                          [&](const SampleRow& r) { out.push_back(r); }));
    SortByStart(&out);
    return out;
  }

  // The server ranks: one row per sample of the stage (ARRAY JOIN), each
  // order's slowest (LIMIT 1 BY), the `limit` slowest of those, ties by
  // lower order id. Order ids compare as the viewer's signed ids.
  absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id, const std::string& stage,
                                                       int64_t limit,
                                                       const TimeWindow& window) override {
    std::vector<RankedOrder> out;
    if (limit <= 0) return out;
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    const std::optional<int64_t> stage_id = StageIdOf(*dict, stage);
    if (!stage_id.has_value()) return out;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(order_id) AS id, s_latency, s_flags FROM orders "
                     "ARRAY JOIN sample_stage_ids AS s_stage, sample_latency_ns AS s_latency, "
                     "sample_flags AS s_flags WHERE run_id = ", run_id,
                     " AND has(sample_stage_ids, ", *stage_id, ") AND s_stage = ", *stage_id,
                     WindowClause("first_utc_ns", window),
                     " ORDER BY s_latency DESC, id ASC LIMIT 1 BY id LIMIT ", limit),
        "ranking orders", [&](RowBinaryCursor& c) {
          RankedOrder r;
          r.order_id = c.Int64();
          r.latency_ns = static_cast<double>(c.Int64());
          r.flags = c.UInt32();
          out.push_back(r);
        }));
    return out;
  }

  absl::StatusOr<std::optional<OrderRow>> FindOrder(int64_t run_id, int64_t order_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<OrderRow> all, OrderInstances(run_id, order_id));
    if (all.empty()) return std::optional<OrderRow>();
    return std::optional<OrderRow>(std::move(all.front()));
  }

  absl::StatusOr<std::vector<OrderRow>> OrderInstances(int64_t run_id,
                                                       int64_t order_id) override {
    return ReadOrders(absl::StrCat("WHERE run_id = ", run_id, " AND order_id = ",
                                   IdLiteral(order_id), " ORDER BY instance LIMIT 1 BY instance"),
                      "reading an order");
  }

  absl::StatusOr<std::vector<int64_t>> RunsWithOrder(int64_t order_id) override {
    std::vector<int64_t> out;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT DISTINCT run_id FROM orders WHERE order_id = ", IdLiteral(order_id),
                     " ORDER BY run_id"),
        "finding an order's runs", [&](RowBinaryCursor& c) { out.push_back(c.Int64()); }));
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> ChildOrders(int64_t run_id, int64_t order_id) override {
    std::vector<int64_t> out;
    std::set<int64_t> seen;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(order_id) FROM orders WHERE run_id = ", run_id,
                     " AND parent_order_id = ", IdLiteral(order_id),
                     " ORDER BY first_utc_ns, order_id, instance"),
        "finding an order's children", [&](RowBinaryCursor& c) {
          const int64_t id = c.Int64();
          if (seen.insert(id).second) out.push_back(id);
        }));
    return out;
  }

  absl::StatusOr<std::vector<OrderRow>> OrdersByTime(int64_t run_id,
                                                     std::optional<int64_t> limit) override {
    std::string tail = absl::StrCat("WHERE run_id = ", run_id,
                                    " ORDER BY first_utc_ns, order_id, instance");
    if (limit.has_value() && *limit >= 0) absl::StrAppend(&tail, " LIMIT ", *limit);
    return ReadOrders(tail, "listing orders");
  }

  absl::StatusOr<std::vector<StampRow>> Stamps(int64_t run_id, int64_t order_id) override {
    return ReadStamps(run_id, order_id, std::nullopt);
  }

  absl::StatusOr<std::vector<StampRow>> StampsOfInstance(int64_t run_id, int64_t order_id,
                                                         int64_t instance) override {
    return ReadStamps(run_id, order_id, instance);
  }

  absl::StatusOr<std::vector<WindowStageStatsRow>> StageWindowStats(
      int64_t run_id, const TimeWindow& window) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_ASSIGN_OR_RETURN(const DetailCoverage coverage, DetailCompleteness(run_id, window));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
    std::vector<WindowStageStatsRow> out;
    absl::Status merge_status;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(stage_id), toInt64(sum(samples_all)), ", SummedFlagColumns(),
                     ", groupArray(histogram) FROM intervals WHERE run_id = ", run_id,
                     WindowClause("start_utc_ns", window), " GROUP BY stage_id ORDER BY stage_id"),
        "reading intervals", [&](RowBinaryCursor& c) {
          const int64_t id = c.Int64();
          WindowStageStatsRow row;
          row.samples_all = c.Int64();
          row.flag_counts = ReadFlags(c);
          store::Histogram merged;
          for (std::string_view h : c.BytesArray()) {
            if (absl::Status s = merged.MergeEncoded(h); !s.ok() && merge_status.ok()) {
              merge_status = absl::DataLossError(
                  absl::StrCat(uri_, ": an interval of stage ", id, ": ", s.message()));
            }
          }
          if (row.samples_all.value_or(0) == 0) return;
          row.stage = dict->Stage(id);
          FinishWindowRow(merged, whole, coverage, &row);
          out.push_back(std::move(row));
        }));
    TICKTRACE_RETURN_IF_ERROR(merge_status);
    std::stable_sort(out.begin(), out.end(), PipelineOrder());
    return out;
  }

  absl::StatusOr<std::vector<IntervalRow>> Intervals(int64_t run_id,
                                                     const std::optional<std::string>& stage,
                                                     const TimeWindow& window,
                                                     int64_t bucket_ns) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_RETURN_IF_ERROR(CheckBucket(bucket_ns, dict->interval_ns));
    std::optional<int64_t> only;
    if (stage.has_value()) {
      only = StageIdOf(*dict, *stage);
      if (!only.has_value()) return std::vector<IntervalRow>();
    }
    // Buckets start at multiples of bucket_ns (intervals start at multiples
    // of interval_ns, so a bucket holds whole intervals).
    const std::string bucket =
        absl::StrCat("(start_utc_ns - ((start_utc_ns % ", bucket_ns, ") + ", bucket_ns, ") % ",
                     bucket_ns, ")");
    std::map<int64_t, BucketOrders> orders;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT ", bucket, " AS b, toInt64(sum(orders)), toInt64(sum(orders_kept)), "
                     "max(detail_deleted) FROM interval_detail WHERE run_id = ", run_id,
                     WindowClause("start_utc_ns", window), " GROUP BY b"),
        "reading interval_detail", [&](RowBinaryCursor& c) {
          BucketOrders& o = orders[c.Int64()];
          o.orders = c.Int64();
          o.kept = c.Int64();
          o.deleted = c.UInt8() != 0;
        }));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
    // Whole minutes below the run's rolled-through bound come from the
    // per-minute rollup (schema 2, clickhouse_rollup.h: the same sums
    // and merged histograms, 60 times fewer rows), the rest of the window
    // from intervals; a bucket may take rows from both.
    std::optional<std::pair<int64_t, int64_t>> rolled;  // [from, until)
    if (version_ >= 2 && bucket_ns % store::kRollupNs == 0 &&
        store::kRollupNs % dict->interval_ns == 0) {
      absl::StatusOr<std::optional<int64_t>> through =
          store::ReadRolledThrough(*client_, database_, run_id);
      if (!through.ok()) {
        return absl::Status(through.status().code(),
                            absl::StrCat(uri_, ": reading the rollup: ", through.status().message()));
      }
      if (through->has_value()) {
        const int64_t from = window.since_utc_ns
                                 ? store::RollupMinuteOf(*window.since_utc_ns +
                                                         (store::kRollupNs - 1))
                                 : kMinTime;
        int64_t until = **through;
        if (window.until_utc_ns) {
          until = std::min(until, store::RollupMinuteOf(*window.until_utc_ns));
        }
        if (from < until) rolled.emplace(from, until);
      }
    }
    // A bucket's sums, and its histograms merged. `figures`: a one-minute
    // bucket that is one rollup row, read as the row has them (the
    // percentiles of its histogram, computed when it was written: the same
    // figures, without 140 kB of histogram per bucket).
    struct BucketSums {
      int64_t samples_all = 0;
      FlagCounts flags{};
      std::unique_ptr<store::Histogram> histogram;  // made at the first merge
      std::optional<IntervalRow> figures;
    };
    std::map<std::pair<int64_t, int64_t>, BucketSums> sums;  // by (stage_id, bucket)
    absl::Status merge_status;
    // Reads (stage_id, bucket, samples_all, flags..., histograms); the
    // rollup's rows first give (rows, count, min, max, sum, p50..p999).
    auto add_rows = [&](RowBinaryCursor& c, bool rollup) {
      const int64_t id = c.Int64();
      const int64_t b = c.Int64();
      BucketSums& sum = sums[{id, b}];
      sum.samples_all += c.Int64();
      const FlagCounts flags = ReadFlags(c);
      for (size_t f = 0; f < flags.size(); ++f) sum.flags[f] += flags[f];
      if (rollup) {
        const int64_t rows = c.Int64();
        IntervalRow r;
        r.count = c.Int64();
        r.min_ns = c.NullableFloat64();
        r.max_ns = c.NullableFloat64();
        const double sum_ns = c.Float64();
        r.p50_ns = c.NullableFloat64();
        r.p90_ns = c.NullableFloat64();
        r.p99_ns = c.NullableFloat64();
        r.p999_ns = c.NullableFloat64();
        if (r.count > 0) r.mean_ns = sum_ns / static_cast<double>(r.count);
        if (rows == 1 && bucket_ns == store::kRollupNs) sum.figures = std::move(r);
      }
      for (std::string_view h : c.BytesArray()) {
        if (sum.histogram == nullptr) sum.histogram = std::make_unique<store::Histogram>();
        if (absl::Status s = sum.histogram->MergeEncoded(h); !s.ok() && merge_status.ok()) {
          merge_status = absl::DataLossError(
              absl::StrCat(uri_, ": interval ", b, " of stage ", id, ": ", s.message()));
        }
      }
    };
    const std::string stage_clause = only ? absl::StrCat(" AND stage_id = ", *only) : "";
    // The rolled-up range as a condition (no lower bound: none written).
    const std::string rolled_range =
        rolled ? absl::StrCat(rolled->first == kMinTime
                                  ? std::string("1")
                                  : absl::StrCat("start_utc_ns >= ", rolled->first),
                              " AND start_utc_ns < ", rolled->second)
               : "";
    const std::string columns = absl::StrCat("SELECT toInt64(stage_id), ", bucket,
                                             " AS b, toInt64(sum(samples_all)), ",
                                             SummedFlagColumns(), ", ");
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat(columns, "groupArray(histogram) FROM intervals WHERE run_id = ", run_id,
                     stage_clause, WindowClause("start_utc_ns", window),
                     rolled ? absl::StrCat(" AND NOT (", rolled_range, ")") : "",
                     " GROUP BY stage_id, b"),
        "reading intervals", [&](RowBinaryCursor& c) { add_rows(c, false); }));
    if (rolled) {
      // Histograms only where the figures of one row will not do.
      const bool one_minute = bucket_ns == store::kRollupNs;
      TICKTRACE_RETURN_IF_ERROR(ForEachRow(
          absl::StrCat(columns,
                       "toInt64(count()) AS n, toInt64(sum(count)), min(min_ns), max(max_ns), "
                       "sum(sum_ns), any(p50_ns), any(p90_ns), any(p99_ns), any(p999_ns), ",
                       one_minute ? "if(n = 1, emptyArrayString(), groupArray(histogram))"
                                  : "groupArray(histogram)",
                       " FROM intervals_minute WHERE run_id = ", run_id, stage_clause,
                       " AND stage_id != ", store::kRollupSentinelStage, " AND ", rolled_range,
                       " AND batch IN (SELECT batch FROM batches WHERE run_id = ", run_id,
                       ") GROUP BY stage_id, b"),
          "reading the per-minute rollup", [&](RowBinaryCursor& c) { add_rows(c, true); }));
    }
    TICKTRACE_RETURN_IF_ERROR(merge_status);
    std::map<int64_t, std::vector<IntervalRow>> by_stage;
    const store::Histogram empty;
    for (auto& [key, sum] : sums) {
      if (sum.samples_all == 0) continue;
      IntervalRow row;
      if (sum.figures.has_value() && sum.histogram == nullptr) row = *std::move(sum.figures);
      row.start_utc_ns = key.second;
      row.samples_all = sum.samples_all;
      row.flag_counts = sum.flags;
      row.stage = dict->Stage(key.first);
      if (!sum.figures.has_value() || sum.histogram != nullptr) {
        FillFromHistogram(sum.histogram != nullptr ? *sum.histogram : empty, &row);
      }
      SetBucketOrders(orders, &row);
      by_stage[key.first].push_back(std::move(row));
    }
    std::vector<std::pair<std::string, int64_t>> stages;
    for (const auto& [id, rows] : by_stage) stages.emplace_back(dict->Stage(id), id);
    std::vector<IntervalRow> out;
    for (const auto& [name, id] : InPipelineOrder(std::move(stages), whole)) {
      for (IntervalRow& r : by_stage[id]) out.push_back(std::move(r));
    }
    return out;
  }

  absl::Status ForEachIntervalHistogram(
      int64_t run_id, const TimeWindow& window,
      const std::function<absl::Status(const std::string&, int64_t, std::string_view)>& visit)
      override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    // Several delta rows may share (stage, start): merged and encoded again.
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::string body,
        Select(absl::StrCat("SELECT toInt64(stage_id), start_utc_ns, groupArray(histogram) FROM "
                            "intervals WHERE run_id = ", run_id,
                            WindowClause("start_utc_ns", window),
                            " GROUP BY stage_id, start_utc_ns HAVING sum(count) > 0 "
                            "ORDER BY start_utc_ns, stage_id"),
               "reading intervals"));
    RowBinaryCursor c(body);
    while (!c.at_end()) {
      const int64_t id = c.Int64();
      const int64_t start = c.Int64();
      const std::vector<std::string_view> parts = c.BytesArray();
      if (c.failed()) return Truncated("reading intervals");
      if (id < 0 || static_cast<size_t>(id) >= dict->stages.size() || dict->stages[id].empty()) {
        return absl::DataLossError(absl::StrCat(uri_, ": interval ", start, " names stage ", id,
                                                ", which the run's stages do not hold"));
      }
      std::string merged_bytes;
      std::string_view encoded = parts.empty() ? std::string_view() : parts.front();
      if (parts.size() > 1) {
        store::Histogram merged;
        for (std::string_view h : parts) {
          if (absl::Status s = merged.MergeEncoded(h); !s.ok()) {
            return absl::DataLossError(absl::StrCat(uri_, ": interval ", start, " of stage ",
                                                    dict->stages[id], ": ", s.message()));
          }
        }
        merged_bytes = merged.Encode();
        encoded = merged_bytes;
      }
      if (absl::Status st = visit(dict->stages[id], start, encoded); !st.ok()) {
        return absl::Status(st.code(), absl::StrCat(uri_, ": interval ", start, " of stage ",
                                                    dict->stages[id], ": ", st.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DetailCoverage> DetailCompleteness(int64_t run_id,
                                                    const TimeWindow& window) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    DetailCoverage c;
    c.policy = dict->detail_policy;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT toInt64(count()), toInt64(sum(o)), toInt64(sum(k)), "
                     "toInt64(sum(d != 0)) FROM (SELECT start_utc_ns, sum(orders) AS o, "
                     "sum(orders_kept) AS k, max(detail_deleted) AS d FROM interval_detail "
                     "WHERE run_id = ", run_id, WindowClause("start_utc_ns", window),
                     " GROUP BY start_utc_ns) WHERE o > 0"),
        "reading interval_detail", [&](RowBinaryCursor& r) {
          c.intervals = r.Int64();
          c.orders = r.Int64();
          c.orders_kept = r.Int64();
          c.intervals_deleted = r.Int64();
        }));
    return c;
  }

 private:
  absl::Status Truncated(const std::string& what) const {
    return absl::DataLossError(
        absl::StrCat(uri_, ": ", what, ": the server's answer ended inside a row"));
  }

  // Runs `sql` in RowBinary; the answer's bytes.
  absl::StatusOr<std::string> Select(const std::string& sql, const std::string& what) {
    absl::StatusOr<std::string> r =
        client_->Query(absl::StrCat(sql, " FORMAT RowBinary"), database_);
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat(uri_, ": ", what, ": ",
                                                          r.status().message()));
    }
    return r;
  }

  // Runs `sql` and calls `row` once per row with the cursor at its start;
  // `row` reads exactly the row's columns.
  absl::Status ForEachRow(const std::string& sql, const std::string& what,
                          const std::function<void(RowBinaryCursor&)>& row) {
    TICKTRACE_ASSIGN_OR_RETURN(const std::string body, Select(sql, what));
    RowBinaryCursor c(body);
    while (!c.at_end()) {
      row(c);
      if (c.failed()) return Truncated(what);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<RunRow>> ReadRuns(const std::string& where, const std::string& what) {
    std::vector<RunRow> runs;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT ", kRunColumns, " FROM runs FINAL ", where,
                     " ORDER BY run_id, claim LIMIT 1 BY run_id"),
        what, [&](RowBinaryCursor& c) { runs.push_back(ReadRun(c)); }));
    return runs;
  }

  absl::StatusOr<std::vector<OrderRow>> ReadOrders(const std::string& tail,
                                                   const std::string& what) {
    std::vector<OrderRow> out;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT ", kOrderColumns, " FROM orders ", tail), what,
        [&](RowBinaryCursor& c) { out.push_back(ReadOrder(c)); }));
    return out;
  }

  // The run's dictionaries, read once (again with `refresh`, or when the run
  // is new to this reader: a live store grows them).
  absl::StatusOr<const RunDictionary*> Dictionary(int64_t run_id, bool refresh) {
    auto it = dictionaries_.find(run_id);
    if (it != dictionaries_.end() && !refresh) return &it->second;
    RunDictionary d;
    bool found = false;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat("SELECT ", kRunColumns, " FROM runs FINAL WHERE run_id = ", run_id,
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
            std::string name = c.String();
            if (id < 0 || id > (1 << 24)) return;  // not one of ours
            if (names->size() <= static_cast<size_t>(id)) names->resize(size_t(id) + 1);
            (*names)[static_cast<size_t>(id)] = std::move(name);
          }));
    }
    RunDictionary& slot = dictionaries_[run_id];
    slot = std::move(d);
    return &slot;
  }

  // Every sample (of `stage_id` when set) of the run's orders that match
  // `where` (" AND ..."), by (order_id, instance) when `ordered` (an
  // order's samples in seq order), else in storage order.
  absl::Status ScanSamples(int64_t run_id, const std::string& where,
                           std::optional<int64_t> stage_id, bool ordered,
                           const std::function<void(const SampleRow&)>& visit) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::string body,
        Select(absl::StrCat("SELECT ", kOrderSampleColumns, " FROM orders WHERE run_id = ", run_id,
                            stage_id ? absl::StrCat(" AND has(sample_stage_ids, ", *stage_id, ")")
                                     : std::string(),
                            where, ordered ? " ORDER BY order_id, instance" : ""),
               "reading samples"));
    RowBinaryCursor c(body);
    std::vector<SampleRow> rows;
    while (!c.at_end()) {
      const OrderSamplesRow o = ReadOrderSamples(c);
      if (c.failed()) return Truncated("reading samples");
      const size_t n = o.stage_ids.size();
      if (o.latency_ns.size() != n || o.flags.size() != n) {
        return absl::DataLossError(absl::StrCat(uri_, ": order ", o.key.order_id,
                                                ": sample arrays of different lengths"));
      }
      TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail,
                                 UnpackOrderDetail(uri_, o.detail, o.key.order_id));
      rows.clear();
      for (size_t seq = 0; seq < n; ++seq) {
        if (stage_id && o.stage_ids[seq] != *stage_id) continue;
        rows.push_back(MakeSampleRow(*dict, o.key, detail, static_cast<int64_t>(seq),
                                     o.stage_ids[seq], o.latency_ns[seq], o.flags[seq]));
      }
      if (ordered) SortByStart(&rows);
      for (const SampleRow& r : rows) visit(r);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<StampRow>> ReadStamps(int64_t run_id, int64_t order_id,
                                                   std::optional<int64_t> instance) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::string body,
        Select(absl::StrCat("SELECT toInt64(order_id), toInt64(instance), first_utc_ns, "
                            "toInt64(first_tsc), detail FROM orders WHERE run_id = ", run_id,
                            " AND order_id = ", IdLiteral(order_id),
                            instance ? absl::StrCat(" AND instance = ", *instance) : "",
                            " ORDER BY instance LIMIT 1 BY instance"),
               "reading an order's stamps"));
    RowBinaryCursor c(body);
    std::vector<StampRow> out;
    while (!c.at_end()) {
      OrderKeyFields key;
      key.order_id = c.Int64();
      key.instance = c.Int64();
      key.first_utc_ns = c.Int64();
      key.first_tsc = c.Int64();
      const std::string_view blob = c.Bytes();
      if (c.failed()) return Truncated("reading an order's stamps");
      TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail, UnpackOrderDetail(uri_, blob, order_id));
      bool known = true;
      for (const store::PackedStamp& p : detail.stamps) {
        known = known && p.name_id < dict->names.size();
      }
      if (!known) {
        TICKTRACE_ASSIGN_OR_RETURN(dict, Dictionary(run_id, true));
      }
      std::vector<StampRow> rows = MakeStampRows(*dict, key, detail);
      out.insert(out.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
    }
    return out;
  }

  std::string uri_;
  std::string database_;
  int version_;  // meta.schema_version (1: no per-minute rollup)
  std::unique_ptr<store::HttpClient> client_;
  std::map<int64_t, RunDictionary> dictionaries_;
};

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
