// The collector's side of the store seam (docs/design.md#the-store). Each backend
// (store/sqlite/sqlite_writer.h, store/clickhouse/clickhouse_writer.h) implements
// Writer, chosen by OpenWriter (open.h) from a URI; the collector never sees SQL.
//
// Thread model: one thread at a time (the collector's store-writer thread
// between BeginRun/ResumeRun and EndRun).

#ifndef TICKTRACE_STORE_WRITER_H_
#define TICKTRACE_STORE_WRITER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/common/detail.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::store {

// What `--detail` keeps (docs/store.md#three-tiers-of-data): every order, the tail, or none.
enum class DetailPolicy { kAll, kTail, kNone };
std::string_view DetailPolicyName(DetailPolicy policy);  // "all", "tail", "none"
absl::StatusOr<DetailPolicy> ParseDetailPolicy(std::string_view text);

// A run as the collector begins it (table runs; read back as RunRow, rows.h,
// which has what only the store knows: run_id, the end, the drift).
struct RunMeta {
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
  std::string pipeline;  // comma-separated
  bool pipeline_learned = false;
  int64_t interval_ns = 1'000'000'000;
  DetailPolicy detail = DetailPolicy::kAll;
  // This host's clock-sync error bound (collector/time/clock_sync.h); unset:
  // unknown. Cross-host stages take their uncertainty from it.
  std::optional<double> clock_error_ns;
};

// What a store says about one of its runs.
struct RunState {
  bool exists = false;
  bool ended = false;
  std::string session;
  // The run's counters as stored (a resume reads what the store holds from
  // them: store_stats_through, store_detail_through, the sink's counts).
  std::map<std::string, int64_t> counters;
};

// A (TSC, CLOCK_REALTIME) pair: UTC is mapped piecewise between anchors.
struct AnchorRow {
  uint64_t tsc = 0;
  int64_t utc_ns = 0;
};

// Everything besides detail and intervals, replaced as a whole.
struct Snapshot {
  std::vector<ProcessRow> processes;
  std::vector<ThreadRow> threads;
  std::vector<TagRow> tags;
  std::vector<std::pair<std::string, int64_t>> counters;
  std::vector<StageStatsRow> stages;
  // Rows the store does not have yet are added; none is removed.
  std::vector<CoreRow> cores;
  std::vector<AnchorRow> anchors;
  std::optional<double> utc_drift_ppm;
  std::optional<std::pair<std::string, bool>> pipeline;  // (comma-separated, learned)
  // Diagnostics said so far (one per kind: a kind stored again is replaced).
  std::vector<RunNote> notes;
  // Budget breaches judged since the last transaction (added; a row stored
  // again for the same budget and interval is left as it is).
  std::vector<BudgetBreachRow> budget_breaches;
  // Every (stage, clock) seen so far (added; a row the store has is left,
  // and none is removed: the store keeps the union over the run).
  std::vector<StageClockRow> stage_clocks;
};

// What one stage's samples of one interval add to that interval (table
// intervals). A backend merges deltas of the same (stage, interval). The
// histogram is sparse: a batch touches a few hundred of its buckets, and the
// delta carries those, not the whole 139 kB array.
struct IntervalDelta {
  std::string stage;
  StageKind kind = StageKind::kTransition;
  int64_t start_utc_ns = 0;  // a multiple of the run's interval_ns
  uint64_t samples_all = 0;
  std::array<uint64_t, kFlagNames.size()> flag_counts{};
  SparseHistogram histogram;  // the samples in the percentiles
};

// Orders of one interval (by first stamp) and how many of them the detail
// holds (table interval_detail).
struct IntervalOrders {
  int64_t start_utc_ns = 0;
  uint64_t orders = 0;
  uint64_t orders_kept = 0;  // counted by the backend as it stores detail
};

// What a store takes (Writer::Size): its files on disk, and the part of them
// its rows use (the rest is free pages kept for reuse).
struct StoreSize {
  uint64_t disk_bytes = 0;
  uint64_t live_bytes = 0;
};

class Writer {
 public:
  virtual ~Writer() = default;

  // Appends a run; returns its run_id.
  virtual absl::StatusOr<int64_t> BeginRun(const RunMeta& run) = 0;
  virtual absl::StatusOr<RunState> LookupRun(int64_t run_id) = 0;
  // Counts a resume in the run's `restarts` counter; returns the new count.
  virtual absl::StatusOr<int64_t> ResumeRun(int64_t run_id) = 0;
  // The (order id, instance) of the run's last `count` orders whose detail
  // the store holds, newest first: a resume after a corrupt journal chunk
  // tells re-emitted orders from new ones by them (store_sink.h).
  // Unimplemented where a backend cannot say (the resume then goes by
  // sequence number alone).
  virtual absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> LastStoredOrders(
      int64_t /*run_id*/, uint64_t /*count*/) {
    return absl::UnimplementedError("this store cannot list its last orders");
  }

  // Writes one batch in one transaction: interval deltas, the orders counted
  // per interval, order detail and (optional) the snapshot. An order already
  // stored (same run, order id and instance: re-emitted after a restart) is
  // left as it is; `already_stored` counts them.
  virtual absl::Status Write(int64_t run_id, const std::vector<IntervalDelta>& intervals,
                             const std::vector<IntervalOrders>& interval_orders,
                             const std::vector<OrderDetail>& orders, const Snapshot* snapshot,
                             uint64_t* already_stored) = 0;

  // Deletes order detail of intervals that start before `detail_before_utc_ns`
  // (their intervals stay, marked detail_deleted), then, while the store is
  // larger than `max_bytes` (0: no limit), the oldest remaining interval's
  // detail; and intervals that start before `intervals_before_utc_ns`.
  // Returns the number of orders deleted. A store that has Size() holds
  // `max_bytes` on its files on disk, and retires the oldest detail of any
  // run of the store, not only `run_id`'s (store/sqlite/sqlite_size.h).
  virtual absl::StatusOr<uint64_t> ApplyRetention(int64_t run_id,
                                                  std::optional<int64_t> detail_before_utc_ns,
                                                  uint64_t max_bytes,
                                                  std::optional<int64_t> intervals_before_utc_ns) = 0;

  // Marks the run ended and leaves the store self-contained (SQLite: the WAL
  // checkpointed into the main file and truncated).
  virtual absl::Status EndRun(int64_t run_id, int64_t ended_utc_ns) = 0;

  // Where the store is, for messages.
  virtual const std::string& location() const = 0;

  // What the store takes now; nullopt where it cannot say cheaply (a server's
  // disk). A store that can is checked against a size limit after every
  // write transaction, the others every retention period (store_sink.h).
  virtual std::optional<StoreSize> Size() { return std::nullopt; }
  // The directory whose filesystem holds the store's files ("" : none of
  // ours): the default size limit is a share of its free space.
  virtual std::string LocalDirectory() const { return ""; }

  // ---- what the collector asks instead of testing the URI -----------------
  // The fewest orders a write transaction should hold (StoreSinkOptions::
  // max_orders_per_transaction is raised to it); 0: no preference.
  virtual size_t preferred_batch_orders() const { return 0; }
  // Makes a call that waits for a server that does not answer give up
  // promptly (Unavailable; the batch stays in the journal), so a store that
  // is gone does not hold the collector's exit. Default: no-op (nothing
  // waits). Any thread.
  virtual void RequestStop() {}
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_WRITER_H_
