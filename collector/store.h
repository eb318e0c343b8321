// The SQLite store (schema: docs/store.md). One connection, used by one thread
// at a time: the collector's main thread to open it and begin/end the run, the
// StoreWriter's thread in between.

#ifndef TICKTRACE_COLLECTOR_STORE_H_
#define TICKTRACE_COLLECTOR_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/analyzer.h"
#include "collector/run_info.h"
#include "collector/stage_stats.h"
#include "collector/stitcher.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ticktrace::collect {

inline constexpr int kStoreSchemaVersion = 1;

// One row of `runs` as the collector begins it.
struct RunRow {
  std::string session;
  std::string host;
  int64_t started_utc_ns = 0;
  double tsc_hz = 0;
  std::string calibration_source;
  std::optional<double> spread_ppm;
  std::optional<double> kernel_tsc_hz;
  std::optional<double> tsc_step_ns;
  uint64_t anchor_tsc = 0;
  int64_t anchor_utc_ns = 0;
  std::string environment_json = "[]";
  std::string settings_json = "{}";
  std::string pipeline;
  bool pipeline_learned = false;
};

// What a store says about one of its runs.
struct RunState {
  bool exists = false;
  bool ended = false;
  std::string session;
};

// Everything one store transaction writes besides finished orders: the
// latest state of processes, threads, tags, counters and stage aggregates.
struct StoreSnapshot {
  std::vector<ProcessRow> processes;
  std::vector<ThreadRow> threads;
  std::vector<TagRow> tags;
  std::vector<std::pair<std::string, int64_t>> counters;
  std::vector<StageSummary> stages;
  bool include_flagged = false;
  std::optional<std::pair<std::string, bool>> pipeline;  // (comma-separated, learned)
  // Cores' offsets (every measurement so far) and UTC anchors (the latest
  // ones): rows the store does not have yet are added (tables cores, anchors).
  std::vector<CoreSkew> cores;
  std::vector<UtcAnchor> anchors;
  std::optional<double> utc_drift_ppm;  // runs.utc_drift_ppm
};

class Store {
 public:
  // Checks `path` without changing it. OK: a ticktrace store this collector can
  // write. NotFound: nothing there. FailedPrecondition (with the reason) for
  // anything else: not a regular file, not SQLite, not ticktrace, newer schema.
  static absl::Status CheckExisting(const std::string& path);

  // Opens an existing ticktrace store (after CheckExisting) or creates a new
  // one with the schema. A store that fails to be created is removed again.
  static absl::StatusOr<std::unique_ptr<Store>> OpenOrCreate(const std::string& path);

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Appends a run; returns its run_id.
  absl::StatusOr<int64_t> BeginRun(const RunRow& run);
  absl::StatusOr<RunState> LookupRun(int64_t run_id);
  absl::Status EndRun(int64_t run_id, int64_t ended_utc_ns);

  // Writes `orders` and `snapshot` (optional) in one transaction. An order
  // already in the store (same run, order id and instance: e.g. re-emitted
  // after a restart) is left as it is, with its samples: `already_stored`
  // counts them.
  absl::Status WriteBatch(int64_t run_id, const std::vector<FinishedOrder>& orders,
                          const StoreSnapshot* snapshot, uint64_t* already_stored);

  const std::string& path() const { return path_; }

 private:
  Store() = default;
  absl::Status Exec(const char* sql);
  absl::Status Prepare();
  // Adds to a store created before them the instance key, the stage_stats
  // flag counts and uncertainty, runs.utc_drift_ppm and the cores and
  // anchors tables (docs/store.md). Idempotent.
  absl::Status AddTruthColumns();
  bool HasColumn(const char* table, const char* column);
  absl::Status Error(absl::string_view what) const;

  sqlite3* db_ = nullptr;
  std::string path_;
  sqlite3_stmt* insert_order_ = nullptr;
  // Samples and stamps go kRowsPerInsert rows per statement (about 1.4x the
  // rows/s of single-row statements here); the rest of a batch one by one.
  static constexpr int kRowsPerInsert = 8;
  sqlite3_stmt* insert_sample_ = nullptr;
  sqlite3_stmt* insert_samples_ = nullptr;  // kRowsPerInsert rows
  sqlite3_stmt* insert_stamp_ = nullptr;
  sqlite3_stmt* insert_stamps_ = nullptr;  // kRowsPerInsert rows
  sqlite3_stmt* upsert_process_ = nullptr;
  sqlite3_stmt* upsert_thread_ = nullptr;
  sqlite3_stmt* upsert_tag_ = nullptr;
  sqlite3_stmt* upsert_counter_ = nullptr;
  sqlite3_stmt* upsert_stage_ = nullptr;
  sqlite3_stmt* update_pipeline_ = nullptr;
  sqlite3_stmt* insert_core_ = nullptr;
  sqlite3_stmt* insert_anchor_ = nullptr;
  sqlite3_stmt* update_drift_ = nullptr;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STORE_H_
