// The SQLite backend of the store seam, writer side (schema: docs/store.md,
// DDL in sqlite_schema_sql.inc).

#ifndef TICKTRACE_STORE_SQLITE_WRITER_H_
#define TICKTRACE_STORE_SQLITE_WRITER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_size.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/writer.h"

struct sqlite3;

namespace ticktrace::store {
namespace internal {
class Statement;  // store/sqlite/sqlite_statement.h
}  // namespace internal

struct SqliteOpenOptions {
  // New files (the store, and SQLite's -wal/-shm beside it, which take its
  // mode) are 0600, or 0640 with this.
  bool group_readable = false;
  // Accept an existing store (and -wal/-shm) that its group may write;
  // without it, only one that neither group nor others may write.
  bool group_may_write = false;
  // Called with one line when an old store is migrated (with its backup path).
  std::function<void(const std::string&)> on_migration;
};

class SqliteWriter : public Writer {
 public:
  // Checks `path` without changing it. OK: a ticktrace store this code can
  // write (perhaps after migrating it). NotFound: nothing there.
  // FailedPrecondition/PermissionDenied (one line, naming the path) for
  // anything else: not a regular file, a symlink, owned by another uid than
  // ours or root's, writable by others (or by the group, unless
  // `group_may_write`), not SQLite, not ticktrace, a newer schema, not
  // writable; and the same for a -wal, -shm or -journal beside it, which
  // SQLite would trust as much (common/own_file.h).
  static absl::Status CheckExisting(const std::string& path, bool group_may_write = false);

  // Opens an existing store (after CheckExisting; an older schema is
  // migrated in place after a backup copy) or creates a new one
  // (O_EXCL|O_NOFOLLOW). A store that fails to be created is removed again.
  // The connection never runs the file's triggers or views
  // (internal::DistrustSchema), migrations included.
  static absl::StatusOr<std::unique_ptr<SqliteWriter>> OpenOrCreate(
      const std::string& path, const SqliteOpenOptions& options = {});

  ~SqliteWriter() override;
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;

  absl::StatusOr<int64_t> BeginRun(const RunMeta& run) override;
  absl::StatusOr<RunState> LookupRun(int64_t run_id) override;
  absl::StatusOr<int64_t> ResumeRun(int64_t run_id) override;
  absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> LastStoredOrders(
      int64_t run_id, uint64_t count) override;
  absl::Status Write(int64_t run_id, const std::vector<IntervalDelta>& intervals,
                     const std::vector<IntervalOrders>& interval_orders,
                     const std::vector<OrderDetail>& orders, const Snapshot* snapshot,
                     uint64_t* already_stored) override;
  absl::StatusOr<uint64_t> ApplyRetention(int64_t run_id,
                                          std::optional<int64_t> detail_before_utc_ns,
                                          uint64_t max_bytes,
                                          std::optional<int64_t> intervals_before_utc_ns) override;
  absl::Status EndRun(int64_t run_id, int64_t ended_utc_ns) override;
  const std::string& location() const override { return path_; }
  std::optional<StoreSize> Size() override;
  std::string LocalDirectory() const override;

  // For the migration (sqlite_migrate.cc) only: the connection, and Write()
  // inside the migration's transaction (savepoints instead of BEGIN/COMMIT).
  sqlite3* db() { return db_; }
  void set_in_migration(bool in) { in_migration_ = in; }
  void set_interval_ns(int64_t ns) { interval_ns_ = ns; }
  // Prepares the statements (once) after the migration created the tables.
  absl::Status PrepareStatements() { return Prepare(); }

 private:
  SqliteWriter() = default;
  absl::Status Exec(const char* sql);
  // Adds runs.clock_error_ns to a schema-2 store made before it (idempotent).
  absl::Status AddClockErrorColumn();
  absl::Status Prepare();
  absl::Status Error(absl::string_view what) const;
  // `status`, or Error(what) when it failed (the writer's errors are all
  // Internal, with SQLite's message).
  absl::Status Check(const absl::Status& status, absl::string_view what) const;
  // A one-off statement; Error(what) when it does not prepare.
  absl::StatusOr<internal::Statement> NewStatement(std::string_view sql, absl::string_view what);
  // Runs a snapshot statement and clears its bindings.
  absl::Status RunAndClear(internal::Statement& s, absl::string_view what);
  // The run's id of `name` in `names` (or `stages` when `kind` is set),
  // inserting it when new. Inside Write()'s transaction.
  absl::StatusOr<uint32_t> NameId(int64_t run_id, const std::string& name);
  absl::StatusOr<uint32_t> StageId(int64_t run_id, const std::string& name, StageKind kind);
  absl::Status LoadDictionaries(int64_t run_id);
  // A batch's memo of the ids NameId/StageId gave: the tag at each position
  // of an order's stamps (samples) is mostly one of the few that orders of
  // the batch had there (one per order shape), so a string compare or two
  // replaces a hash lookup per stamp.
  struct IdMemo {
    static constexpr size_t kWays = 4;  // shapes remembered per position
    struct Way {
      const std::string* name = nullptr;  // one of the batch's strings
      uint32_t id = 0;
    };
    struct Position {
      std::array<Way, kWays> ways{};
      size_t next = 0;  // the way replaced next
    };
    std::vector<Position> at;
    // The id remembered for `name` at position i, or nullptr.
    const uint32_t* Find(size_t i, const std::string& name) const;
    void Remember(size_t i, const std::string& name, uint32_t id);
  };
  absl::StatusOr<uint32_t> MemoNameId(int64_t run_id, IdMemo* memo, size_t i,
                                      const std::string& name);
  absl::StatusOr<uint32_t> MemoStageId(int64_t run_id, IdMemo* memo, size_t i,
                                       const std::string& name);
  // The open interval of (stage, d's interval) as the store holds it, with
  // what the store held read back once when it is not in memory.
  struct OpenInterval;
  absl::StatusOr<OpenInterval*> FindOpenInterval(int64_t run_id, uint32_t stage_id,
                                                 const IntervalDelta& d);
  // Forgets intervals older than the newest few: a delta for one of them
  // (an order finished long after it began) reads its row back again.
  void ForgetOldIntervals();
  absl::Status WriteIntervals(int64_t run_id, const std::vector<IntervalDelta>& intervals);
  // Adds what an earlier delta stored for (stage, d's interval) to the sums.
  absl::Status MergeStoredInterval(int64_t run_id, uint32_t stage_id, const IntervalDelta& d,
                                   uint64_t* samples_all,
                                   std::array<uint64_t, kFlagNames.size()>* flags,
                                   Histogram* merged);
  absl::Status WriteOrders(int64_t run_id, const std::vector<OrderDetail>& orders,
                           uint64_t* already_stored);
  // orders.samples of `o` (its stages named in `stages`, added when new).
  absl::Status SampleCells(int64_t run_id, const OrderDetail& o, IdMemo* memo,
                           std::vector<SampleCell>* cells);
  // The instance `o` is stored under (its own, or the next free one when
  // its id was reused), or nullopt when the same order (same id and first
  // TSC) was stored before a restart. Remembers it as stored.
  absl::StatusOr<std::optional<int64_t>> Admit(int64_t run_id, const OrderDetail& o);
  // The id page (IdPage in sqlite_blocks.h) of `page`, its bits read from
  // order_ids and the blocks when it is not in memory.
  struct IdPageState;
  absl::StatusOr<IdPageState*> FindIdPage(int64_t run_id, int64_t page);
  // Every (id, instance, first TSC) the store holds on `page`, from its blocks.
  absl::StatusOr<std::vector<BlockId>> StoredIdsOfPage(int64_t run_id, int64_t page);
  // Writes the batch's pending blocks (all, or the one of `start`).
  absl::Status FlushBlocks(int64_t run_id);
  struct PendingBlock;
  absl::Status FlushBlock(int64_t run_id, PendingBlock* block);
  // Forgets the id pages (a rollback, retention, too many of them).
  void ForgetIdPages();
  absl::Status WriteSnapshot(int64_t run_id, const Snapshot& snapshot);
  absl::Status WriteProcesses(int64_t run_id, const Snapshot& snapshot);  // and threads, tags
  absl::Status WriteStageStats(int64_t run_id, const Snapshot& snapshot);
  // Deletes the detail of up to `limit` interval rows selected by `where`
  // (bound to run_id and `bound`), oldest first, in one transaction; adds the
  // orders deleted to `deleted`, and the newest start deleted to
  // `newest_start` (when not null). Returns the number of intervals.
  absl::StatusOr<int> DeleteDetail(int64_t run_id, const char* where, int64_t bound, int limit,
                                   uint64_t* deleted, int64_t* newest_start = nullptr);
  // The bytes of the store's pages in use (freed pages are kept for reuse).
  uint64_t LiveBytes();
  // Size retention (sqlite_size.h): retires the oldest detail, of any run,
  // while the live pages are above what keeps the files within `max_bytes`.
  // `run_id`: the run being written.
  absl::Status RetireForSize(int64_t run_id, uint64_t max_bytes, uint64_t* deleted);
  // Deletes the detail of up to `count` intervals, the oldest of the oldest
  // run that has any; returns how many (0: no detail left anywhere).
  absl::StatusOr<int> RetireOldest(int64_t run_id, int count, uint64_t* deleted);
  SqliteSizeGuard size_guard_;
  // Per run, the newest interval start whose detail RetireOldest deleted
  // (INT64_MAX: another run with none left): the next search starts there
  // instead of walking the deleted ones again.
  std::map<int64_t, int64_t> retired_through_;
  sqlite3* db_ = nullptr;
  std::string path_;
  int64_t interval_ns_ = 1'000'000'000;
  bool in_migration_ = false;
  int64_t dictionaries_run_ = -1;
  absl::flat_hash_map<std::string, uint32_t> names_;
  absl::flat_hash_map<std::string, uint32_t> stages_;
  // The intervals the recent batches wrote, by (stage id, start), as stored
  // (committed or in the open transaction; a rollback clears them all): a
  // delta merges here and the sum is written, without reading the row back
  // and decoding it. Histograms are large (Histogram::kBuckets), so only
  // the intervals within kOpenIntervals of the newest are kept.
  static constexpr int64_t kOpenIntervals = 4;
  absl::flat_hash_map<std::pair<uint32_t, int64_t>, std::unique_ptr<OpenInterval>> open_intervals_;
  int64_t open_intervals_run_ = -1;
  int64_t newest_interval_start_ = std::numeric_limits<int64_t>::min();

  // Exactly-once without an index entry per order: per id page of the run,
  // a bit per id the store holds (any instance). A clear bit admits the order
  // at once; a set one (a restart's re-emitted order, a reused id) looks at
  // the ids the page's blocks hold. Bounded: pages not used for a few
  // batches go when there are more than kMaxIdPages, and come back from the
  // store when needed.
  static constexpr size_t kMaxIdPages = size_t{1} << 18;
  absl::flat_hash_map<int64_t, std::unique_ptr<IdPageState>> id_pages_;
  int64_t id_pages_run_ = -1;
  // True while id_pages_ holds every page of the run (it began here and
  // nothing was forgotten): a page not in memory is then empty.
  bool id_pages_complete_ = false;
  uint64_t batch_ = 0;
  // The batch's blocks being filled, by interval start, and the order keys
  // written per interval.
  std::map<int64_t, std::unique_ptr<PendingBlock>> pending_;
  struct Kept {
    uint64_t count = 0;
    int64_t first_key = std::numeric_limits<int64_t>::max();
    int64_t last_key = std::numeric_limits<int64_t>::min();
  };
  std::map<int64_t, Kept> kept_;

  struct Statements;
  std::unique_ptr<Statements> st_;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_WRITER_H_
