// The ClickHouse backend of StoreReader (ticktrace/store/reader.h): ClickHouse
// schema 1 and 2 (docs/clickhouse.md, DDL in clickhouse_schema_sql.inc),
// read-only, over the HTTP interface (http_client.h), every answer in
// RowBinary (row_binary.h). Private to the store library: store/open.cc
// (OpenReader) is its only caller, through OpenClickHouseStoreReader.
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
// clickhouse_reader.cc answers the run tables and holds the query plumbing;
// clickhouse_reader_orders.cc samples, orders and stamps;
// clickhouse_reader_intervals.cc window statistics and intervals.
//
//
// Order ids are UInt64 in ClickHouse and int64 (two's complement) in the
// viewer's rows: converted at this boundary.
//
// What this reader relies on in the writer (clickhouse_writer.cc):
//   - runs: one live row per (run_id, claim) (FINAL); where several claims
//     share a run_id the smallest claim is the run (ORDER BY claim LIMIT 1 BY
//     run_id);
//   - intervals / interval_detail as delta rows (summed, histograms merged);
//   - orders unique per (run_id, order_id, instance) (read with LIMIT 1 BY).
#ifndef TICKTRACE_STORE_CLICKHOUSE_CLICKHOUSE_READER_H_
#define TICKTRACE_STORE_CLICKHOUSE_CLICKHOUSE_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/clickhouse/http_client.h"
#include "store/clickhouse/row_binary.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "ticktrace/store/reader.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::store::internal {

// Opens the ClickHouse store `uri` (clickhouse://HOST:PORT/DATABASE, user and
// password from TICKTRACE_CLICKHOUSE_USER / _PASSWORD) for reading.
// Unavailable when the server does not answer, NotFound when the database
// holds no ticktrace store, FailedPrecondition for another application's
// database or a newer schema. Never writes.
absl::StatusOr<std::unique_ptr<StoreReader>> OpenClickHouseStoreReader(const store::StoreUri& uri);

// Named (not anonymous): a unity build may put these files beside the SQLite
// reader, whose helpers have the same names in their own namespace.
namespace clickhouse_reader {

// SQL pieces the reader's files share (defined in clickhouse_reader.cc).
// An order id as the viewer has it (int64) as ClickHouse's UInt64 literal.
std::string IdLiteral(int64_t order_id);
// `AND col >= since AND col < until` for the set ends of a window.
std::string WindowClause(const char* column, const TimeWindow& w);
// The flag columns summed, in kFlagNames order ("toInt64(sum(migrated)), ...").
std::string SummedFlagColumns();
// Flag counts as the summed columns answer them.
FlagCounts ReadFlags(RowBinaryCursor& c);

// The buckets of one Intervals() answer (clickhouse_reader_intervals.cc).
class IntervalBuckets;

// Every method may be called from one thread at a time (one HTTP client).
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

  bool HasColumn(const char* table, const char* column) override;
  absl::StatusOr<std::vector<RunRow>> ListRuns() override;
  absl::StatusOr<RunRow> GetRun(std::optional<int64_t> run_id) override;
  absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id) override;
  absl::StatusOr<std::vector<RunNote>> Notes(int64_t run_id) override;
  absl::StatusOr<std::vector<StageClockRow>> StageClocks(int64_t run_id) override;
  absl::StatusOr<std::vector<BudgetBreachRow>> BudgetBreaches(int64_t run_id) override;
  absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id) override;
  absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id) override;
  absl::StatusOr<std::vector<ProcessRow>> Processes(int64_t run_id) override;
  absl::StatusOr<std::vector<ThreadRow>> Threads(int64_t run_id) override;
  absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id) override;

  // The orders of the first and the last interval with samples give the
  // earliest and the latest sample start (an order's samples start at or
  // after its first stamp; the last interval's predecessor is read too, its
  // orders may start samples later); without detail, the intervals' extent.
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(
      int64_t run_id) override;
  absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                             const std::function<void(const SampleRow&)>& visit) override;
  absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id, int64_t order_id) override;

  // The server ranks: one row per sample of the stage (ARRAY JOIN), each
  // order's slowest (LIMIT 1 BY), the `limit` slowest of those, ties by
  // lower order id. Order ids compare as the viewer's signed ids.
  absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id, const std::string& stage,
                                                       int64_t limit,
                                                       const TimeWindow& window) override;
  absl::StatusOr<std::vector<OrderRow>> OrderInstances(int64_t run_id, int64_t order_id) override;
  absl::StatusOr<std::vector<int64_t>> RunsWithOrder(int64_t order_id) override;
  absl::StatusOr<std::vector<int64_t>> ChildOrders(int64_t run_id, int64_t order_id) override;
  absl::StatusOr<std::vector<OrderRow>> OrdersByTime(int64_t run_id,
                                                     std::optional<int64_t> limit) override;
  absl::StatusOr<std::vector<StampRow>> Stamps(int64_t run_id, int64_t order_id) override;
  absl::StatusOr<std::vector<StampRow>> StampsOfInstance(int64_t run_id, int64_t order_id,
                                                         int64_t instance) override;
  absl::StatusOr<std::vector<WindowStageStatsRow>> StageWindowStats(
      int64_t run_id, const TimeWindow& window) override;
  absl::StatusOr<std::vector<IntervalRow>> Intervals(int64_t run_id,
                                                     const std::optional<std::string>& stage,
                                                     const TimeWindow& window,
                                                     int64_t bucket_ns) override;
  absl::Status ForEachIntervalHistogram(
      int64_t run_id, const TimeWindow& window,
      const std::function<absl::Status(const std::string&, int64_t, std::string_view)>& visit)
      override;
  absl::StatusOr<DetailCoverage> DetailCompleteness(int64_t run_id,
                                                    const TimeWindow& window) override;

 private:
  // Intervals()' pieces: the buckets' order counts (by bucket start), the
  // [from, until) the per-minute rollup answers (unset: none), and the sums
  // of intervals (and rollup rows in `rolled`) into `buckets`.
  absl::StatusOr<std::map<int64_t, BucketOrders>> BucketOrdersOf(int64_t run_id,
                                                                 const std::string& bucket_sql,
                                                                 const TimeWindow& window);
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> RolledRange(int64_t run_id,
                                                                         const TimeWindow& window,
                                                                         int64_t bucket_ns,
                                                                         int64_t interval_ns);
  absl::Status ReadBuckets(int64_t run_id, const std::string& bucket_sql,
                           std::optional<int64_t> only, const TimeWindow& window,
                           const std::optional<std::pair<int64_t, int64_t>>& rolled,
                           int64_t bucket_ns, IntervalBuckets* buckets);
  absl::Status Truncated(const std::string& what) const;

  // Runs `sql` in RowBinary; the answer's bytes.
  absl::StatusOr<std::string> Select(const std::string& sql, const std::string& what);

  // Runs `sql` and calls `row` once per row with the cursor at its start;
  // `row` reads exactly the row's columns.
  absl::Status ForEachRow(const std::string& sql, const std::string& what,
                          const std::function<void(RowBinaryCursor&)>& row);
  absl::StatusOr<std::vector<RunRow>> ReadRuns(const std::string& where, const std::string& what);
  absl::StatusOr<std::vector<OrderRow>> ReadOrders(const std::string& tail,
                                                   const std::string& what);

  // The run's dictionaries, read once (again with `refresh`, or when the run
  // is new to this reader: a live store grows them).
  absl::StatusOr<const RunDictionary*> Dictionary(int64_t run_id, bool refresh);

  // Every sample (of `stage_id` when set) of the run's orders that match
  // `where` (" AND ..."), by (order_id, instance) when `ordered` (an
  // order's samples in seq order), else in storage order.
  absl::Status ScanSamples(int64_t run_id, const std::string& where,
                           std::optional<int64_t> stage_id, bool ordered,
                           const std::function<void(const SampleRow&)>& visit);
  absl::StatusOr<std::vector<StampRow>> ReadStamps(int64_t run_id, int64_t order_id,
                                                   std::optional<int64_t> instance);
  std::string uri_;
  std::string database_;
  int version_;  // meta.schema_version (1: no per-minute rollup)
  std::unique_ptr<store::HttpClient> client_;
  std::map<int64_t, RunDictionary> dictionaries_;
};

}  // namespace clickhouse_reader
}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_CLICKHOUSE_CLICKHOUSE_READER_H_
