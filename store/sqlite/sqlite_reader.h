// The SQLite backend of StoreReader (ticktrace/store/reader.h): schema 3
// (docs/store.md, DDL in store/sqlite/sqlite_schema_sql.inc), read-only.
// Private to the store library: store/open.cc (OpenReader) is its only
// caller, through OpenSqliteStoreReader.
//
// Where each answer comes from (the .cc that answers it):
//   runs, processes, threads, counters, cores, stage_stats  their tables
//                                  (sqlite_reader.cc, with opening and the
//                                  run dictionaries)
//   window statistics, intervals   `intervals` rows merged (Histogram), one
//                                  index range per stage: no detail is read
//                                  (sqlite_reader_intervals.cc)
//   samples, stamps, orders        order_blocks rows of up to 256 orders of one
//                                  interval (sqlite_blocks.h): each order's
//                                  samples in its JSON element and, for their
//                                  context and the stamps, its packed detail;
//                                  the slowest orders by the intervals' maxima
//                                  (see FindSlowest) (sqlite_reader_orders.cc)
//
// Blocks are stored by block_key (roughly the order their orders finished
// in); an order's key is block_key * 256 + its place. An order is found by id
// through order_ids (run, id page, block), by time through interval_detail's
// key ranges. Queries that walk a key range write `+b.run_id` so that SQLite
// keeps to the rowid range.
#ifndef TICKTRACE_STORE_SQLITE_SQLITE_READER_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_READER_H_

#include <sqlite3.h>

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
#include "absl/strings/string_view.h"
#include "store/common/packed_rows.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_statement.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::store::internal {

// Opens the SQLite store at `path` for reading (schema 3 or 4; an older store
// is migrated first, see StoreReader::Open).
absl::StatusOr<std::unique_ptr<StoreReader>> OpenSqliteStoreReader(const std::string& path,
                                                                   OpenMode mode);

// Named (not anonymous) so that a unity build that puts these files beside
// the ClickHouse reader sees no two helpers of one name.
namespace sqlite_reader {

using internal::Db;

// One interval's order-key range (interval_detail).
struct KeyRange {
  int64_t start_utc_ns = 0;
  int64_t first_key = 0;
  int64_t last_key = 0;
};

// An interval FindSlowest may scan: its order-key range and the largest
// latency a sample of the stage in it can have.
struct SlowCandidate {
  double bound;
  KeyRange range;
};

// A private directory for a migrated copy of a read-only schema-1 store
// (sqlite_reader.cc).
class TempDir;

// Every method may be called from one thread at a time (one connection).
class SqliteStoreReader final : public StoreReader {
 public:
  // `temp`: the directory of a migrated copy that `db` reads, or null.
  SqliteStoreReader(std::string path, Db db, std::unique_ptr<TempDir> temp);
  ~SqliteStoreReader() override;

  const std::string& path() const override { return path_; }
  // The store's own schema: kSqliteSchemaVersion, or one read as it is
  // (kOldestReadAsIsVersion and up).
  int schema_version() const override { return schema_version_; }
  void set_schema_version(int version) { schema_version_ = version; }

  bool HasColumn(const char* table, const char* column) override;
  absl::StatusOr<std::vector<RunRow>> ListRuns() override;
  absl::StatusOr<RunRow> GetRun(std::optional<int64_t> run_id) override;
  absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id) override;
  absl::StatusOr<std::vector<RunNote>> Notes(int64_t run_id) override;  // sqlite_notes.cc
  // sqlite_stage_clocks.cc
  absl::StatusOr<std::vector<StageClockRow>> StageClocks(int64_t run_id) override;
  // sqlite_budget_breaches.cc
  absl::StatusOr<std::vector<BudgetBreachRow>> BudgetBreaches(int64_t run_id) override;
  absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id) override;
  absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id) override;
  absl::StatusOr<std::vector<ProcessRow>> Processes(int64_t run_id) override;
  absl::StatusOr<std::vector<ThreadRow>> Threads(int64_t run_id) override;
  absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id) override;
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(
      int64_t run_id) override;
  absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                             const std::function<void(const SampleRow&)>& visit) override;
  absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id, int64_t order_id) override;

  // No latency index: each interval row holds its stage's max, so the
  // intervals are visited by max, slowest first, and only their orders are
  // scanned (by the interval's order-key range, filtered on first_utc_ns);
  // the walk stops when the next interval's max is below the current K-th
  // latency. An interval whose max does not bound every sample (samples out
  // of the percentiles: samples_all > count) is visited first.
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
  absl::StatusOr<Statement> Prepare(std::string_view sql, absl::string_view what);

  // The run's dictionaries, read once (again with `refresh`, or when the run
  // is new to this reader: a live store grows them).
  absl::StatusOr<const RunDictionary*> Dictionary(int64_t run_id, bool refresh);
  static OrderKeyFields OrderFields(const store::BlockOrder& o);

  // Calls `visit` on every order of the blocks `s` selects (kBlockColumns,
  // sqlite_reader_orders.cc); a block that does not decode is DataLoss.
  absl::Status ForEachBlockOrder(
      Statement& s, const std::function<absl::Status(const store::BlockOrder&)>& visit);
  // An order found by id, its packed detail decoded (order.detail is empty).
  struct FoundOrder {
    store::BlockOrder order;
    store::PackedDetail detail;
  };
  // The run's orders of `order_id` (of `instance` when set), by instance.
  absl::StatusOr<std::vector<FoundOrder>> OrdersWithId(int64_t run_id, int64_t order_id,
                                                       std::optional<int64_t> instance);
  // A statement over one interval's blocks in its key range (BindRange).
  absl::StatusOr<Statement> PrepareRangeScan(absl::string_view what);
  static void BindRange(Statement& s, int64_t run_id, const KeyRange& r);

  // The intervals of the stage that may hold an order of `window`, by bound,
  // largest first (ties: earlier first).
  absl::StatusOr<std::vector<SlowCandidate>> SlowestCandidates(int64_t run_id, int64_t stage_id,
                                                               const TimeWindow& window,
                                                               int64_t interval_ns);
  // The order-key ranges of the intervals that start in `window` (widened to
  // the interval holding `since`) and hold detail, by start.
  absl::StatusOr<std::vector<KeyRange>> KeyRanges(int64_t run_id, const TimeWindow& window);

  // Every sample (of `stage_id` when set) of the orders of `ranges` whose
  // first stamp is in `window`.
  absl::Status ScanSamples(int64_t run_id, const std::vector<KeyRange>& ranges,
                           std::optional<int64_t> stage_id, const TimeWindow& window,
                           const std::function<void(const SampleRow&)>& visit);

  // Appends the samples (of `stage_id` when set) of `o` to `out`, in
  // samples order.
  absl::Status OrderSamples(const store::BlockOrder& o, const RunDictionary& dict,
                            std::optional<int64_t> stage_id, std::vector<SampleRow>* out);

  // Calls `visit(start, samples_all, flags, encoded histogram)` for each
  // interval of the stage that starts in `window`, by start; an error it
  // returns (a bad histogram) stops the walk.
  absl::Status ForEachInterval(int64_t run_id, int64_t stage_id, const TimeWindow& window,
                               const std::function<absl::Status(int64_t, int64_t, const FlagCounts&,
                                                                std::string_view)>& visit);
  absl::StatusOr<std::vector<StampRow>> ReadStamps(int64_t run_id, int64_t order_id,
                                                   std::optional<int64_t> instance);
  std::string path_;
  int schema_version_ = store::kSqliteSchemaVersion;
  std::unique_ptr<TempDir> temp_;  // a migrated copy's directory; outlives db_
  Db db_;
  std::map<int64_t, RunDictionary> dictionaries_;
};

}  // namespace sqlite_reader
}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_READER_H_
