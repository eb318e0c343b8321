// Read-only access to a ticktrace store (docs/store.md).
//
// Store is the only place in the viewer that speaks SQL. It opens the file
// read-only, checks that it is a ticktrace store of a schema this viewer
// knows, and returns typed rows (records.h). It never writes and never
// creates a file: a missing path is an error, not an empty store.
//
// A Store is used by one thread at a time.
#ifndef TICKTRACE_VIEW_STORE_H_
#define TICKTRACE_VIEW_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/view/records.h"

struct sqlite3;

namespace ticktrace::view {

// The newest store schema this viewer reads (meta.schema_version).
inline constexpr int kSupportedSchemaVersion = 1;

// How a store is opened.
enum class OpenMode {
  // A one-shot query. A WAL-mode store that no writer has open (no -wal file
  // beside it) is opened immutable, so that SQLite does not leave -wal/-shm
  // files behind; otherwise as kLive.
  kSnapshot,
  // Always ordinary read-only mode (SQLite may create -wal/-shm files
  // beside a WAL store that has none); each query sees the latest commit.
  kLive,
};

// Which samples a query returns. Unset members do not filter.
struct SampleFilter {
  std::optional<std::string> stage;
  std::vector<int64_t> process_ids;  // begin or end in this set; empty: any
  std::optional<int64_t> since_utc_ns;  // start_utc_ns >= since
  std::optional<int64_t> until_utc_ns;  // start_utc_ns <= until
};

// An order and the latency that ranked it (FindSlowest).
struct RankedOrder {
  int64_t order_id = 0;
  double latency_ns = 0;
  uint32_t flags = 0;
};

class Store {
 public:
  // Opens the store at `path` read-only and validates meta.app and
  // meta.schema_version. Errors (one line each, naming the path):
  // NotFound when the file does not exist; FailedPrecondition when it is not
  // an SQLite file, not a ticktrace store, or of a newer schema.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     OpenMode mode = OpenMode::kSnapshot);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  // The path given to Open().
  const std::string& path() const { return path_; }
  // meta.schema_version of this store.
  int schema_version() const { return schema_version_; }

  // All runs, oldest first.
  absl::StatusOr<std::vector<RunInfo>> ListRuns();
  // The run `run_id`, or the latest run when unset. NotFound when there is
  // no such run (or no run at all).
  absl::StatusOr<RunInfo> GetRun(std::optional<int64_t> run_id);
  // The run's counters by name (docs/store.md, table counters).
  absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id);
  // The run's stage_stats rows in pipeline order (position).
  absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id);
  // Every stage of the run, unordered: its stage_stats rows (the collector
  // writes one per stage it has aggregated, about once a second and at the
  // end), or, when the run has none, the stages found in its samples (a scan:
  // samples have no stage index).
  absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id);
  // The run's processes, by process_id.
  absl::StatusOr<std::vector<ProcessInfo>> Processes(int64_t run_id);
  // The run's threads.
  absl::StatusOr<std::vector<ThreadInfo>> Threads(int64_t run_id);
  // The earliest and the latest samples.start_utc_ns of the run; nullopt
  // when it has no sample yet.
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(int64_t run_id);

  // Calls `visit` for every sample of the run that passes `filter`, in
  // (order_id, start_utc_ns) order when `ordered`, else in storage order.
  absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                             const std::function<void(const SampleRow&)>& visit);
  // The samples of one order, by start time.
  absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id, int64_t order_id);
  // The `limit` orders with the largest latency in `stage`, slowest first
  // (ties: lower order_id first).
  absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id, const std::string& stage,
                                                       int64_t limit);

  // The order, or nullopt when the run has no such order.
  absl::StatusOr<std::optional<OrderRow>> FindOrder(int64_t run_id, int64_t order_id);
  // The runs that hold `order_id`, oldest first.
  absl::StatusOr<std::vector<int64_t>> RunsWithOrder(int64_t order_id);
  // Orders whose parent_order_id is `order_id`.
  absl::StatusOr<std::vector<int64_t>> ChildOrders(int64_t run_id, int64_t order_id);
  // The run's orders by first_utc_ns (then order_id); at most `limit` when set.
  absl::StatusOr<std::vector<OrderRow>> OrdersByTime(int64_t run_id, std::optional<int64_t> limit);
  // The latest measurement of each core's TSC offset (table cores), by cpu;
  // empty for a store without the table or a run that measured none.
  absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id);
  // Every stamp and span of one order, by tsc.
  absl::StatusOr<std::vector<StampRow>> Stamps(int64_t run_id, int64_t order_id);

 private:
  Store(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  absl::Status Validate();
  // True when `table` has `column` (stores written before a column was added lack it).
  bool HasColumn(const char* table, const char* column);

  std::string path_;
  sqlite3* db_;
  int schema_version_ = 0;
};

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_STORE_H_
