// The store's sink in the collector's pipeline: receives finished orders on
// the analysis thread, turns them into what the store keeps, and writes it
// through the store seam (store/include/ticktrace/store/writer.h) on its own thread, so
// that draining never waits for the store.
//
// Per order, on the analysis thread:
//   - every sample goes into its (stage, interval) statistics: a histogram
//     plus counts, the interval being the one of the order's first stamp.
//     These are never skipped: the whole run's and any window's statistics
//     are merges of them (docs/store.md#three-tiers-of-data);
//   - the detail policy decides whether its detail is kept (`all`; `tail`:
//     per stage and interval the slowest `tail_slowest`, every flagged or
//     incomplete order and 1 in `tail_one_in` of the rest; `none`).
//
// Handover: what the analysis thread gathered (detail, interval statistics)
// goes to the writer thread in batches, by size (max_orders_per_transaction)
// or by time (submit_every_ns after the first order gathered), not after every
// pass of the analysis: each handover costs a queue entry, a histogram per
// touched stage and interval, and, in the backend, a write of each interval
// row. Flush, a checkpoint, a new snapshot and Stop hand everything over at
// once, so a snapshot's statistics and the interval rows move together.
//
// Steady state allocates nothing per sample or stamp: the interval
// statistics are flat arrays by stage (interval_stats.h), and the detail of
// orders the writer has written comes back to be filled again.
//
// Behind (live mode): when more than `max_queued_samples` samples of detail
// wait, detail is not queued and counted (orders_not_stored, ...); the
// interval statistics and the snapshot are still written, first, at every
// pass of the writer, so the store's figures stay current whatever the
// backlog. interval_detail tells per interval how much detail is missing.
// In blocking mode (replay, journal recovery) Submit() waits instead.
//
// Counters with the statistics they describe: at every handover the
// analysis thread also takes the analyzer's counters (set_counter_source), and
// each transaction writes those of the newest batch whose interval rows it
// writes (unless the snapshot it writes is newer), so a reader of any commit
// never sees interval rows or order detail ahead of the counters that counted
// them (orders_complete, samples, drained ...). The snapshot alone is replaced
// only about once a second; between, the counters would lag the rows.
//
// Exactly once across restarts: every transaction also writes, as counters,
// the sequence number (FinishedOrder::seq) through which the store holds the
// statistics (store_stats_through) and the detail decisions
// (store_detail_through), and the sink's own counts, so that they always
// agree with the rows. A resumed run re-emits orders with the numbers they
// had (the analysis is a function of the journal); Resume() makes the sink
// skip those at or below the stored numbers, and continue the stored counts.
//
// Thread model: one analysis thread calls everything but the writer thread's
// Loop(); the backend is used only by the writer thread between Start() and
// Stop().

#ifndef TICKTRACE_COLLECTOR_STORE_SINK_H_
#define TICKTRACE_COLLECTOR_STORE_SINK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/sinks/budget_judge.h"
#include "collector/sinks/interval_stats.h"
#include "collector/sinks/order_rows.h"
#include "collector/stream/checkpoint.h"
#include "ticktrace/store/reader.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

struct StoreSinkOptions {
  size_t max_queued_samples = 1u << 20;
  size_t max_orders_per_transaction = 20000;
  // Gathered work goes to the writer at the first Submit() this long after
  // the first order of it came (wall clock: an idle stream's last orders
  // still reach the store), or sooner by size.
  int64_t submit_every_ns = 200'000'000;
  // The clock Submit() reads, in ns (tests); unset: std::chrono::steady_clock.
  std::function<int64_t()> now_ns;
  bool block_when_full = false;
  int64_t interval_ns = 1'000'000'000;
  store::DetailPolicy detail = store::DetailPolicy::kAll;
  size_t tail_slowest = 10;    // per stage and interval
  uint64_t tail_one_in = 100;  // of the unflagged, complete, not-slowest rest
  // A tail interval's choice is final once orders first-stamped this long
  // after its end have finished (the order timeout, the linger, a margin).
  int64_t tail_settle_ns = 3'000'000'000;
  bool include_flagged = false;  // flagged samples count in the histograms too
  // Retention (--retain-detail, --retain). By age, judged against the newest
  // order's first stamp every retention_every_ns of it, so that a replay
  // keeps what the live run would have kept. By size, after every write
  // transaction when the store can measure itself (Writer::Size: SQLite),
  // so that one step adds at most one transaction; else with the ages.
  std::optional<int64_t> retain_detail_ns;  // detail of older intervals deleted
  uint64_t retain_detail_bytes = 0;         // 0: no size limit
  std::optional<int64_t> retain_ns;         // older intervals deleted
  int64_t retention_every_ns = 10'000'000'000;
  // Checkpoints (SubmitCheckpoint): written here once the store holds
  // everything before them; "" : none.
  std::string checkpoint_path;
  bool group_readable = false;
  // Latency budgets judged per closed interval on the writer thread
  // (budget_judge.h; settled as the tail is, after tail_settle_ns); breach
  // lines go to `say_budget`.
  std::vector<Budget> budgets;
  std::function<void(const std::string&)> say_budget;
};

struct StoreSinkCounters {
  uint64_t samples_not_stored = 0;
  uint64_t stamps_not_stored = 0;
  uint64_t orders_not_stored = 0;      // behind: detail not kept
  uint64_t orders_detail_skipped = 0;  // the detail policy did not keep it
  uint64_t orders_already_stored = 0;
  uint64_t orders_stored = 0;
  uint64_t transactions = 0;
  uint64_t writer_cpu_ns = 0;  // CPU time of the writer thread in the backend's Write()
  uint64_t orders_retired = 0;  // detail deleted by retention
  // The store after the last transaction (Writer::Size; all 0 when it cannot
  // say), and the live bytes retention has freed so far: the store's growth
  // is that of live + retired (collector/app/store_projection.h).
  uint64_t store_disk_bytes = 0;
  uint64_t store_live_bytes = 0;
  uint64_t store_bytes_retired = 0;
  bool store_size_known = false;
  uint64_t checkpoints_written = 0;
  uint64_t checkpoint_failures = 0;  // not written (e.g. full disk): the journal is kept longer
};

class StoreSink : public OrderSink {
 public:
  // `backend` must outlive the sink.
  StoreSink(store::Writer* backend, int64_t run_id, const StoreSinkOptions& options);
  ~StoreSink() override;

  // Starts the writer thread. REQUIRES: not started.
  void Start();
  // OrderSink. Analysis thread.
  void OnFinishedOrder(FinishedOrder&& order) override;
  // From the stitcher: the detail is filled into a recycled OrderDetail and
  // the statistics go by the stitcher's stage ids.
  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override;
  // Always true: the interval statistics need every order's rows.
  bool WantsRows() const override { return true; }
  // The end of a pass: hands what was gathered (detail, interval statistics)
  // to the writer when it is due (see "Handover" above).
  void Submit();
  // Hands over what was gathered, then replaces the snapshot written with
  // the next transaction.
  void SetSnapshot(store::Snapshot snapshot);
  // Orders gathered on the analysis thread since the last handover (kept
  // detail and statistics-only orders alike). Analysis thread.
  size_t orders_gathered() const { return orders_gathered_; }
  // Queues a checkpoint behind everything submitted so far. The writer
  // thread writes it to options.checkpoint_path once the store holds all of
  // that (collector/stream/checkpoint.h), then durable_checkpoint_offset() says so.
  // Analysis thread.
  void SubmitCheckpoint(Checkpoint checkpoint);
  // The journal offset of the last checkpoint written (0: none yet): the
  // journal before it may be freed. Any thread.
  uint64_t durable_checkpoint_offset() const {
    // Acquire: pairs with the writer thread's release after the file is durable.
    return durable_checkpoint_offset_.load(std::memory_order_acquire);
  }
  // Waits until everything submitted so far is written.
  void Flush();
  // The stream ended: every pending tail choice is final (kept or counted).
  void SettleAll();
  // Settles every pending tail choice, flushes, stops the thread; returns
  // the first write error, if any.
  absl::Status Stop();

  StoreSinkCounters counters() const;
  // A resumed run: takes the stored sequence numbers and counts (the run's
  // counters, store::RunState). REQUIRES: before the first order.
  //
  // After a corrupt journal chunk the numbers after it are shifted (the
  // chunk's orders are not emitted again): then `exact_through` is the
  // checkpoint's count (numbers up to it are sure), and `stored_keys` the
  // (order id, instance) of the orders the store holds beyond it
  // (Writer::LastStoredOrders): a re-emitted order beyond exact_through is
  // skipped when the store holds it, and taken when it does not.
  void Resume(const std::map<std::string, int64_t>& stored_counters,
              std::optional<uint64_t> exact_through = std::nullopt,
              const std::vector<std::pair<uint64_t, uint32_t>>& stored_keys = {});
  // The highest sequence number through which the store holds statistics
  // and detail decisions (0: none yet).
  uint64_t stored_through() const;
  // What the analysis has counted so far (the analyzer's counters by name):
  // called at every handover, so that each batch carries the counters as of
  // its statistics. REQUIRES: before Start(). Called on the analysis thread.
  using CounterSource = std::function<std::vector<std::pair<std::string, int64_t>>()>;
  void set_counter_source(CounterSource source) { counter_source_ = std::move(source); }
  // Whether Submit() waits for the writer when it is far behind (true) or
  // drops and counts the detail (false). Any thread: a Submit() waiting is
  // woken to look again.
  void set_block_when_full(bool block);
  // How far the analysis has read the stream (the newest clock anchor's
  // UTC): an interval closes for the budgets once this, or the newest
  // order's first stamp, is tail_settle_ns past its end, so that budgets are
  // judged while the stream is idle too. Analysis thread.
  void set_analysed_until(int64_t utc_ns) {
    analysed_until_utc_ns_ = std::max(analysed_until_utc_ns_, utc_ns);
  }
  // A resumed run with budgets: what the store holds of the intervals its
  // budgets have not judged yet (after Resume(), before Start()).
  absl::Status SeedBudgets(store::StoreReader& reader);
  // Per budget (options.budgets order), as of the last transaction written.
  // Any thread.
  std::vector<BudgetCount> budget_counts() const;

 private:
  struct Pending;        // an order held for the tail choice
  struct TailInterval;   // one interval's slowest candidates per stage
  struct Batch {
    std::vector<store::IntervalDelta> intervals;
    std::vector<store::IntervalOrders> interval_orders;
    std::vector<store::OrderDetail> orders;
    size_t samples = 0;
    int64_t newest_first_utc_ns = INT64_MIN;
    uint64_t last_seq = 0;               // of the orders gathered up to this batch
    uint64_t detail_skipped_total = 0;   // local_.orders_detail_skipped then
    // written_'s not-stored counts once this batch's detail was dropped or not.
    uint64_t orders_not_stored_total = 0, samples_not_stored_total = 0;
    uint64_t stamps_not_stored_total = 0;
    std::unique_ptr<Checkpoint> checkpoint;  // a marker batch: nothing else in it
    // The counter source's values as of this batch's statistics, and which
    // capture they are (counters_epoch_; 0: none).
    std::vector<std::pair<std::string, int64_t>> counters;
    uint64_t counters_epoch = 0;
    // max(newest first stamp, analysed until) when it was handed over.
    int64_t closes_through_utc_ns = INT64_MIN;
  };

  // What one transaction of the writer thread takes from the queue.
  struct Transaction {
    Batch work;
    int64_t newest_ns = INT64_MIN;  // newest first stamp of the detail taken
    std::optional<store::Snapshot> snapshot;
    std::unique_ptr<Checkpoint> checkpoint;
    size_t samples = 0;
    uint64_t stats_through = 0, detail_through = 0;
    int64_t closes_through_utc_ns = INT64_MIN;  // of the batches whose statistics it takes
    bool last = false;                          // stopping: every open interval is judged
    uint64_t orders_retired = 0;  // written_'s count when the transaction was taken
  };

  int64_t IntervalOf(int64_t utc_ns) const;
  // OnFinishedOrder's work; slots_ holds the stage slots of its samples.
  void Take(FinishedOrder&& order);
  void HandOver();
  int64_t NowNs() const;
  // A written or dropped OrderDetail to fill again, or a fresh one.
  store::OrderDetail Recycled();
  void Recycle(store::OrderDetail&& detail);
  void Keep(store::OrderDetail&& detail);
  void OfferToTail(store::OrderDetail&& detail, int64_t interval);
  void SettleTail(int64_t before_interval);
  void Loop();
  // Writer thread. Waits for work; false once stopped with nothing left.
  bool TakeWork(Transaction* t);
  // Writer thread: the newest counters taken (a batch's) replace the
  // snapshot's own when they were captured after it.
  static void PutBatchCounters(std::vector<std::pair<std::string, int64_t>> counters,
                               store::Snapshot* snapshot);
  static void PutSinkCounters(const Transaction& t, const Batch* last_taken,
                              store::Snapshot* snapshot);
  absl::Status WriteUntilItFits(Transaction& t, uint64_t* already);
  // `size_known`: the store measured itself (Writer::Size) for this check.
  absl::StatusOr<uint64_t> RetainIfDue(int64_t newest_ns, bool size_known);
  bool WriteCheckpoint(const Checkpoint& checkpoint);
  // Writer thread: judges the budgets on what `t` writes, into its snapshot.
  void JudgeBudgets(Transaction& t);

  store::Writer* backend_;
  int64_t run_id_;
  StoreSinkOptions options_;

  // Analysis thread only.
  IntervalStats stats_;
  std::vector<uint32_t> slots_;  // the current order's samples' stage slots
  size_t orders_gathered_ = 0;
  int64_t gathering_since_ns_ = 0;  // NowNs() at the first order gathered
  // Details to fill again: batches the writer has written, taken from the back.
  std::vector<std::vector<store::OrderDetail>> reuse_;
  std::vector<store::OrderDetail> building_;
  size_t building_samples_ = 0;
  uint64_t tail_seen_ = 0;
  int64_t newest_first_utc_ns_ = INT64_MIN;
  int64_t analysed_until_utc_ns_ = INT64_MIN;
  std::map<int64_t, std::unique_ptr<TailInterval>> tail_;
  StoreSinkCounters local_;
  CounterSource counter_source_;
  uint64_t counters_epoch_ = 0;  // captures so far (batches' counters and snapshots)
  uint64_t last_seq_ = 0;              // of the last order received
  uint64_t skip_stats_through_ = 0;    // Resume(): already in the store
  uint64_t skip_detail_through_ = 0;
  // Resume() after a corrupt chunk: orders numbered in (skip_stats_through_,
  // identity_through_] are skipped when their key is in stored_keys_.
  uint64_t identity_through_ = 0;
  absl::flat_hash_set<std::pair<uint64_t, uint32_t>> stored_keys_;

  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, so TSan cannot see absl::Mutex's synchronisation.
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // work arrived, or stop
  std::condition_variable idle_cv_;  // a write finished
  // Guarded by mu_:
  std::deque<Batch> queue_;
  std::optional<store::Snapshot> snapshot_;
  uint64_t snapshot_epoch_ = 0;  // counters_epoch_ when snapshot_ was set
  size_t queued_samples_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  absl::Status error_;
  StoreSinkCounters written_;
  uint64_t stats_through_ = 0;   // as last written (store_stats_through)
  uint64_t detail_through_ = 0;  // as last written (store_detail_through)
  // The budgets' clock (Batch::closes_through_utc_ns) of handovers that had
  // nothing to write while the queue was empty.
  int64_t idle_closes_through_utc_ns_ = INT64_MIN;
  int64_t retention_done_at_ns_ = INT64_MIN;  // writer thread only
  // Writer thread only (before Start(): the analysis thread's, for a resume).
  std::unique_ptr<BudgetJudge> judge_;
  bool judged_all_ = false;                   // the last transaction judged every interval
  std::vector<BudgetCount> budget_counts_;   // guarded by mu_: judge_'s, as last written
  // Written detail, freed by the analysis thread (Submit), which has time to
  // spare, instead of the writer, which is the bottleneck of a replay.
  std::vector<std::vector<store::OrderDetail>> spent_;
  std::atomic<uint64_t> durable_checkpoint_offset_{0};
  std::thread thread_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STORE_SINK_H_
