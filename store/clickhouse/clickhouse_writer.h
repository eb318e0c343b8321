// The ClickHouse backend of the store seam, writer side (schema in
// clickhouse_schema_sql.inc, docs/clickhouse.md). Batches go over ClickHouse's
// HTTP interface as one `INSERT ... FORMAT RowBinary` per table.
//
// Exactly once, without transactions (ClickHouse 18.16 has none, and its
// insert deduplication is for replicated tables only):
//  - every Write() is a batch with a deterministic id, (restart generation
//    << 32) | sequence, carried by every row it appends (`batch`, or
//    `version` in the snapshot tables);
//  - its tables are inserted one after the other (each INSERT is atomic: one
//    part, well under max_insert_block_size rows), the counters last but one,
//    and last one row in `batches`: the batch's commit record;
//  - an INSERT whose answer was lost (connection reset, timeout, server
//    restarting) may or may not have been applied: before sending it again
//    the writer counts the rows of that table with that batch id; all there:
//    done; none: insert again. So a retried batch is never duplicated;
//  - a batch left without its commit record (the collector stopped or died
//    in the middle) is deleted when the run is resumed (ResumeRun), before
//    the collector re-sends it from its journal; its counters are never read
//    (LookupRun reads committed versions only).
//  - orders re-emitted after a restart are found by (run, order id,
//    instance) among the committed orders up to the newest one stored before
//    the resume, and counted in `already_stored`, as SQLite does.
//
// Server gone: every request is retried with backoff (100 ms doubling to
// 5 s); one line on stderr (on_notice) when requests start failing and one
// when the server answers again. Write() blocks meanwhile; RequestStop()
// makes it return Unavailable promptly (the batch is then not committed and
// the journal keeps it).
//
// Thread model: one thread at a time (the collector's store thread) for
// everything but RequestStop()/ClearStop(), which any thread may call.

#ifndef TICKTRACE_STORE_CLICKHOUSE_WRITER_H_
#define TICKTRACE_STORE_CLICKHOUSE_WRITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/clickhouse/http_client.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::store {

class RowBinaryWriter;

struct ClickHouseOptions {
  HttpClientOptions http;  // host, port, credentials (FromEnvironment)
  std::string database = "ticktrace";
  int64_t backoff_initial_ms = 100;
  int64_t backoff_max_ms = 5000;
  // Opening (schema check/creation) gives up after this long without a
  // server: a wrong URI must not hang the collector's start.
  int64_t open_timeout_ms = 15000;
  // Detail retention deletes with ALTER ... DELETE (a mutation rewrites
  // parts): at most once per this much advance of its bound.
  int64_t retention_step_ns = 600'000'000'000;
  // One line each: the server stopped answering / answers again. Default:
  // "ticktrace: <line>" on stderr.
  std::function<void(const std::string&)> on_notice;
};

class ClickHouseWriter : public Writer {
 public:
  // Connects, creates the database and tables when absent, checks the
  // schema of an existing one. Retries an unreachable server for
  // options.open_timeout_ms, then fails (Unavailable, one line).
  static absl::StatusOr<std::unique_ptr<ClickHouseWriter>> Open(ClickHouseOptions options);

  ~ClickHouseWriter() override;
  ClickHouseWriter(const ClickHouseWriter&) = delete;
  ClickHouseWriter& operator=(const ClickHouseWriter&) = delete;

  absl::StatusOr<int64_t> BeginRun(const RunMeta& run) override;
  absl::StatusOr<RunState> LookupRun(int64_t run_id) override;
  absl::StatusOr<int64_t> ResumeRun(int64_t run_id) override;
  absl::Status Write(int64_t run_id, const std::vector<IntervalDelta>& intervals,
                     const std::vector<IntervalOrders>& interval_orders,
                     const std::vector<OrderDetail>& orders, const Snapshot* snapshot,
                     uint64_t* already_stored) override;
  absl::StatusOr<uint64_t> ApplyRetention(int64_t run_id,
                                          std::optional<int64_t> detail_before_utc_ns,
                                          uint64_t max_bytes,
                                          std::optional<int64_t> intervals_before_utc_ns) override;
  absl::Status EndRun(int64_t run_id, int64_t ended_utc_ns) override;
  const std::string& location() const override { return location_; }
  // ClickHouse costs about 50 ms of server CPU per INSERT (one part per
  // table): 100k-order transactions sustain about twice the samples per
  // CPU-second of 20k ones (store_write_bench, docs/clickhouse.md).
  size_t preferred_batch_orders() const override { return 100000; }

  // Makes a Write() (or any call) that waits for a server that does not
  // answer return Unavailable promptly, and every later one that meets one,
  // until ClearStop(). Any thread.
  void RequestStop() override;
  void ClearStop();

  // The id the next batch will have (tests).
  uint64_t next_batch_id() const { return (generation_ << 32) | (sequence_ + 1); }
  // Requests that failed for want of a server, since Open (tests, bench).
  uint64_t unavailable_count() const { return unavailable_count_; }

 private:
  explicit ClickHouseWriter(ClickHouseOptions options);

  // Runs `attempt` until it returns OK or an error other than Unavailable;
  // backs off between failures, says so once (and once when it recovers).
  // Unavailable when stopped, or when `deadline_ms` (>0) passed.
  absl::Status Retrying(absl::FunctionRef<absl::Status()> attempt, int64_t deadline_ms = 0);
  absl::StatusOr<std::string> QueryRetrying(const std::string& sql);
  // Appends `rows` to `table` exactly once for `batch_column` = batch.
  absl::Status InsertOnce(int64_t run_id, const std::string& table, const char* batch_column,
                          uint64_t batch, RowBinaryWriter& rows);
  // For tables where a row sent twice is the same row (ReplacingMergeTree).
  absl::Status InsertIdempotent(const std::string& table, RowBinaryWriter& rows);

  absl::Status LoadRun(int64_t run_id);
  absl::Status LoadDictionaries(int64_t run_id);
  absl::Status InsertRunRow(uint64_t version);
  absl::Status DeleteUncommitted(int64_t run_id);
  // Sets generation_ above every batch id `run_id` has, sequence_ to 0.
  absl::Status EstablishGeneration(int64_t run_id);
  // The per-minute rollup (clickhouse_rollup.h): reads the run's bound and
  // newest interval from the store when this writer has not yet.
  absl::Status LoadRollupState(int64_t run_id);
  // Rolls up, in a batch of its own, the minutes from the bound up to the
  // minute before the newest interval's (all: through the newest's).
  absl::Status RollClosedMinutes(int64_t run_id, bool all);
  uint32_t NameId(const std::string& name, RowBinaryWriter& new_names);
  uint32_t StageId(const std::string& name, StageKind kind, RowBinaryWriter& new_stages);

  // Write()'s pieces: the run's state loaded (its row, dictionaries, batch
  // generation, rollup bound); the orders a resumed run may hold already;
  // the batch's rows appended table by table; and the inserts, the commit
  // record (batches) last.
  struct BatchRows;
  struct StoredOrders;
  absl::Status PrepareRun(int64_t run_id);
  absl::StatusOr<StoredOrders> ReadStoredOrders(int64_t run_id,
                                                const std::vector<OrderDetail>& orders);
  absl::Status AppendOrders(int64_t run_id, uint64_t batch, const std::vector<OrderDetail>& orders,
                            StoredOrders& stored_orders, uint64_t* already_stored,
                            std::map<int64_t, uint64_t>* kept_by_interval, BatchRows* rows);
  void AppendIntervals(int64_t run_id, uint64_t batch, const std::vector<IntervalDelta>& intervals,
                       const std::vector<IntervalOrders>& interval_orders,
                       const std::map<int64_t, uint64_t>& kept, BatchRows* rows);
  // Processes, threads, tags, counters.
  void AppendSnapshotTables(int64_t run_id, uint64_t batch, const Snapshot& snapshot,
                            BatchRows* rows);
  // Stage statistics, cores, anchors, and the run row's drift and pipeline.
  void AppendSnapshotStatistics(int64_t run_id, uint64_t batch, const Snapshot& snapshot,
                                BatchRows* rows);
  absl::Status InsertBatch(int64_t run_id, uint64_t batch, BatchRows& rows);
  // ApplyRetention()'s pieces. Deletes the detail of intervals starting in
  // [from, before) and marks them detail_deleted (a delta row with
  // detail_deleted = 1), adding the orders deleted to `deleted`.
  absl::Status DeleteDetail(int64_t run_id, std::optional<int64_t> from, int64_t before,
                            uint64_t* deleted);
  // When the database is over `max_bytes`: the oldest hour of detail left.
  absl::Status DeleteForSize(int64_t run_id, uint64_t max_bytes, uint64_t* deleted);

  ClickHouseOptions options_;
  HttpClient client_;
  std::string location_;
  std::atomic<bool> stop_{false};  // relaxed: a flag, publishes nothing
  // Relaxed: written by the writer's thread, read by RequestStop() to decide
  // whether to cut requests short; it publishes no data.
  std::atomic<bool> failing_{false};
  int64_t failing_since_ns_ = 0;
  uint64_t unavailable_count_ = 0;

  // The run being written (BeginRun/LookupRun), as its runs row.
  struct RunRow;
  std::unique_ptr<RunRow> run_;
  int64_t interval_ns_ = 1'000'000'000;
  uint64_t generation_ = 0;   // restarts of the run when this process took it
  uint64_t sequence_ = 0;     // batches written by this process
  int64_t batches_run_ = -1;  // the run generation_ was established for
  int64_t dictionaries_run_ = -1;
  int64_t rollup_run_ = -1;                    // the run the two below are for
  std::optional<int64_t> rolled_through_ns_;   // unset: nothing rolled up yet
  std::optional<int64_t> oldest_interval_ns_;  // the oldest interval stored
  std::optional<int64_t> newest_interval_ns_;  // the newest interval stored
  absl::flat_hash_map<std::string, uint32_t> names_;
  absl::flat_hash_map<std::string, uint32_t> stages_;
  uint64_t newest_anchor_tsc_ = 0;  // anchors at or below are stored
  // After a resume: orders first-stamped at or before this may be stored.
  std::optional<int64_t> resume_horizon_ns_;
  std::optional<int64_t> detail_deleted_before_ns_;
  std::optional<int64_t> intervals_deleted_before_ns_;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_CLICKHOUSE_WRITER_H_
