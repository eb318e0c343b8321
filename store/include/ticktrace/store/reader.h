// The viewer's side of the store seam (docs/design.md#the-store): everything the
// viewer reads from a store, behind one interface, implemented once per backend.
//
//   OpenReader(StoreUri) (open.h), or StoreReader::Open("sqlite:PATH" | "PATH" | "clickhouse://...")
//       -> SqliteStoreReader (store/sqlite/sqlite_reader.cc), schema 2
//       -> ClickHouseStoreReader (store/clickhouse/clickhouse_reader.cc),
//          ClickHouse schema 2 over HTTP (docs/clickhouse.md)
//
// The viewer's commands see typed rows (rows.h, and the window/interval
// rows below), never SQL. Runs, orders, stamps and samples come from the
// tables of each run; these answer from the interval statistics (schema 2)
// without touching order detail:
//   StageWindowStats    percentiles of every stage over a window
//   Intervals           statistics over time, per stage per bucket
//   DetailCompleteness  whether a window's detail holds every order
//
// Time windows are [since, until) on UTC ns. Statistics windows select
// intervals by their start (an interval belongs to a window when it starts
// inside it); order windows select orders by their first stamp
// (orders.first_utc_ns), which is also what files an order into an interval.
//
// Orders with several instances (an id used again, or records that came after
// their order was emitted): FindOrder returns the first instance (0),
// OrderInstances all of them; Stamps and SamplesOfOrder return every
// instance's rows (each row says its instance), StampsOfInstance one's.
//
// Thread model: one thread at a time per reader.
#ifndef TICKTRACE_VIEW_STORE_READER_H_
#define TICKTRACE_VIEW_STORE_READER_H_

#include <array>
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
#include "absl/strings/str_cat.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/rows.h"
// OpenMode, SampleFilter and RankedOrder: what the readers' methods take.
#include "ticktrace/store/reader_options.h"

namespace ticktrace::store {

// [since, until) in UTC ns; an unset end does not limit.
struct TimeWindow {
  std::optional<int64_t> since_utc_ns;
  std::optional<int64_t> until_utc_ns;
};

// How much order detail a window holds (table interval_detail).
struct DetailCoverage {
  int64_t orders = 0;        // orders that finished in the window (by first stamp)
  int64_t orders_kept = 0;   // of which the store holds detail
  int64_t intervals = 0;     // intervals of the window with orders
  int64_t intervals_deleted = 0;  // of which retention deleted the detail
  std::string policy;        // runs.detail: "all", "tail" or "none"
  // Every order of the window is in the detail: nothing sampled (policy
  // "all", orders_kept == orders) and nothing deleted. A reader must not
  // present detail as complete when this is false ("detail sampled").
  bool complete() const {
    return policy == "all" && orders_kept >= orders && intervals_deleted == 0;
  }
};

// One stage's statistics over a window: the merge of its intervals. The
// StageStatsRow part means what a stage_stats row means (percentiles unset
// below store::MinSamplesForPercentile; uncertainty_ns is the whole run's,
// from stage_stats, as intervals do not keep it).
struct WindowStageStatsRow : StageStatsRow {
  double sum_ns = 0;          // of the samples in the percentiles
  bool detail_complete = true;  // DetailCoverage::complete() of the window
};

// One stage's statistics in one bucket of time (Intervals()).
struct IntervalRow {
  std::string stage;
  int64_t start_utc_ns = 0;  // a multiple of the bucket
  int64_t count = 0;         // in the percentiles
  int64_t samples_all = 0;
  std::optional<double> min_ns, max_ns, mean_ns;
  std::optional<double> p50_ns, p90_ns, p99_ns;  // unset below MinSamplesForPercentile
  std::optional<double> p999_ns;                 // likewise (1000 samples)
  FlagCounts flag_counts{};
  // The bucket's orders (all stages share them) and how many have detail.
  int64_t orders = 0;
  int64_t orders_kept = 0;
  bool detail_deleted = false;  // retention deleted detail of an interval in it
};

class StoreReader {
 public:
  // Opens the store named by `uri_or_path` (store::ParseStoreUri: a plain
  // path or sqlite:PATH is SQLite; clickhouse://HOST:PORT/DB is ClickHouse)
  // for reading: the text parsed, then OpenReader (open.h; store/open.cc). Errors are one line naming the store: NotFound (no file, no
  // store in the database), FailedPrecondition (not a ticktrace store, a
  // newer schema), PermissionDenied, InvalidArgument (a bad URI), Unavailable
  // (a ClickHouse server that does not answer).
  //
  // A schema-1 SQLite store is migrated first: in place (after a backup copy
  // beside it, by the store library) when the file and its directory are
  // writable; otherwise a private temporary copy is migrated and read, and
  // removed when the reader is destroyed. Either way one line on stderr says
  // which. Never writes to a schema-2 store.
  static absl::StatusOr<std::unique_ptr<StoreReader>> Open(std::string_view uri_or_path,
                                                           OpenMode mode = OpenMode::kSnapshot);

  virtual ~StoreReader() = default;

  // Where the store is, for messages (the path, or the URI).
  virtual const std::string& path() const = 0;
  // meta.schema_version of the store as read (2 after a migration).
  virtual int schema_version() const = 0;
  // True when `table` has `column` (readers of optional columns ask).
  virtual bool HasColumn(const char* table, const char* column) = 0;

  // ---- runs and their metadata ---------------------------------------------
  // All runs, oldest first.
  virtual absl::StatusOr<std::vector<RunRow>> ListRuns() = 0;
  // The run `run_id`, or the latest run when unset. NotFound when there is
  // no such run (or no run at all).
  virtual absl::StatusOr<RunRow> GetRun(std::optional<int64_t> run_id) = 0;
  // The run's counters by name (names.h).
  virtual absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id) = 0;
  // What the collector said about the run (empty session, unseen tags, a
  // reversed pipeline: RunNote), oldest first; none for a store written
  // before it kept them.
  virtual absl::StatusOr<std::vector<RunNote>> Notes(int64_t /*run_id*/) {
    return std::vector<RunNote>{};
  }
  // The budget breaches the collector judged in the run's closed intervals,
  // by interval then budget; none for a store written before it kept them.
  virtual absl::StatusOr<std::vector<BudgetBreachRow>> BudgetBreaches(int64_t /*run_id*/) {
    return std::vector<BudgetBreachRow>{};
  }
  // The clocks other than the TSC that read an end of a stage's samples, by
  // stage, side ("begin" before "end") and clock; none for a run without
  // external stamps, or a store written before they were kept.
  virtual absl::StatusOr<std::vector<StageClockRow>> StageClocks(int64_t /*run_id*/) {
    return std::vector<StageClockRow>{};
  }
  // The run's stage_stats rows (whole run, as the collector last wrote them)
  // in pipeline order (position).
  virtual absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id) = 0;
  // Every stage of the run (table stages), by stage id.
  virtual absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id) = 0;
  // The run's processes, by process_id.
  virtual absl::StatusOr<std::vector<ProcessRow>> Processes(int64_t run_id) = 0;
  // The run's threads.
  virtual absl::StatusOr<std::vector<ThreadRow>> Threads(int64_t run_id) = 0;
  // The latest measurement of each core's TSC offset, by cpu.
  virtual absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id) = 0;
  // The earliest and the latest sample start of the run, from the orders of
  // its first and last intervals whose orders have samples (exact unless an
  // order outlives an interval); without detail, the intervals' extent;
  // nullopt when the run has neither.
  virtual absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(
      int64_t run_id) = 0;

  // ---- order detail --------------------------------------------------------
  // Calls `visit` for every sample of the run that passes `filter` (its
  // since/until are inclusive on the sample's start), in
  // (order_id, instance, start_utc_ns) order when `ordered`, else in storage
  // order.
  virtual absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                                     const std::function<void(const SampleRow&)>& visit) = 0;
  // The samples of every instance of one order, by start time.
  virtual absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id,
                                                                int64_t order_id) = 0;
  // The `limit` orders with the largest latency in `stage` (or "total"),
  // slowest first; an order is ranked by its slowest sample of the stage
  // (over its instances); ties: lower order_id first. Only orders whose
  // first stamp is in `window`. Under 1 s on 10 M orders without a latency
  // index (the SQLite reader walks the intervals by their max).
  virtual absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id,
                                                               const std::string& stage,
                                                               int64_t limit,
                                                               const TimeWindow& window) = 0;
  absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id, const std::string& stage,
                                                       int64_t limit) {
    return FindSlowest(run_id, stage, limit, TimeWindow{});
  }
  // The first instance of the order, or nullopt when the run has no such order.
  absl::StatusOr<std::optional<OrderRow>> FindOrder(int64_t run_id, int64_t order_id);
  // Every instance of the order, by instance.
  virtual absl::StatusOr<std::vector<OrderRow>> OrderInstances(int64_t run_id,
                                                               int64_t order_id) = 0;
  // The runs that hold `order_id`, oldest first.
  virtual absl::StatusOr<std::vector<int64_t>> RunsWithOrder(int64_t order_id) = 0;
  // Orders whose parent_order_id is `order_id`, by first stamp.
  virtual absl::StatusOr<std::vector<int64_t>> ChildOrders(int64_t run_id, int64_t order_id) = 0;
  // The run's orders by first_utc_ns (then order_id, instance); at most
  // `limit` when set.
  virtual absl::StatusOr<std::vector<OrderRow>> OrdersByTime(int64_t run_id,
                                                             std::optional<int64_t> limit) = 0;
  // Every stamp and span of every instance of one order, by (instance, tsc).
  virtual absl::StatusOr<std::vector<StampRow>> Stamps(int64_t run_id, int64_t order_id) = 0;
  // The stamps of one instance, by tsc.
  virtual absl::StatusOr<std::vector<StampRow>> StampsOfInstance(int64_t run_id, int64_t order_id,
                                                                 int64_t instance) = 0;

  // ---- interval statistics (schema 2) --------------------------------------
  // Per stage, the merge of its intervals that start in `window`, in
  // pipeline order (stage_stats.position; stages without a row after those,
  // `total` last). Stages without a sample in the window are left out.
  virtual absl::StatusOr<std::vector<WindowStageStatsRow>> StageWindowStats(
      int64_t run_id, const TimeWindow& window) = 0;
  // Per stage (or only `stage`) per bucket of `bucket_ns` (a positive
  // multiple of runs.interval_ns, else InvalidArgument; buckets start at
  // multiples of it), the merged statistics of the intervals that start in
  // `window`; by stage (pipeline order) then time. Empty buckets are left out.
  virtual absl::StatusOr<std::vector<IntervalRow>> Intervals(int64_t run_id,
                                                             const std::optional<std::string>& stage,
                                                             const TimeWindow& window,
                                                             int64_t bucket_ns) = 0;
  // Every non-empty interval histogram of the run that starts in `window`,
  // by start time then stage id: `visit(stage, start_utc_ns, encoded)` with
  // the histogram in its compact encoding (store::Histogram::Decode; the
  // samples in the percentiles, as IntervalRow::count). For the export of
  // the histograms themselves (export --format hlog). An error `visit`
  // returns stops the walk and is returned.
  // Unimplemented in a backend that does not offer it (the default).
  virtual absl::Status ForEachIntervalHistogram(
      int64_t /*run_id*/, const TimeWindow& /*window*/,
      const std::function<absl::Status(const std::string& stage, int64_t start_utc_ns,
                                       std::string_view encoded)>& /*visit*/) {
    return absl::UnimplementedError(
        absl::StrCat(path(), ": this kind of store cannot list its interval histograms yet"));
  }
  // How much of the window's order detail the store holds.
  virtual absl::StatusOr<DetailCoverage> DetailCompleteness(int64_t run_id,
                                                            const TimeWindow& window) = 0;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_VIEW_STORE_READER_H_
