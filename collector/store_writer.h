// Writes finished orders and snapshots to the Store on its own thread, behind
// a bounded queue, so that draining never waits for SQLite.
//
// Push() never blocks in the default (live) mode: when more than
// `max_queued_samples` samples wait, the orders being pushed are not stored
// and counted (samples_not_stored, stamps_not_stored, orders_not_stored); the
// statistics still cover them. In blocking mode (replay: there is no producer
// to protect) Push() waits for room instead.
//
// Thread model: one producer thread (the collector's analysis thread) calls
// Push/SetSnapshot/Flush/Stop; the writer thread owns the Store in between
// Start() and Stop().

#ifndef TICKTRACE_COLLECTOR_STORE_WRITER_H_
#define TICKTRACE_COLLECTOR_STORE_WRITER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "collector/store.h"
#include "collector/stitcher.h"

namespace ticktrace::collect {

struct StoreWriterOptions {
  size_t max_queued_samples = 1u << 20;
  size_t max_orders_per_transaction = 20000;
  bool block_when_full = false;
};

struct StoreWriterCounters {
  uint64_t samples_not_stored = 0;
  uint64_t stamps_not_stored = 0;
  uint64_t orders_not_stored = 0;
  uint64_t orders_already_stored = 0;
  uint64_t transactions = 0;
  uint64_t orders_stored = 0;
};

class StoreWriter : public OrderSink {
 public:
  // `store` must outlive the writer; it is used only by the writer thread
  // between Start() and Stop().
  StoreWriter(Store* store, int64_t run_id, const StoreWriterOptions& options);
  ~StoreWriter() override;

  // Starts the writer thread. REQUIRES: not started.
  void Start();
  // Queues a finished order (OrderSink). Analysis thread.
  void OnFinishedOrder(FinishedOrder&& order) override;
  // False while the queue is full in live mode: rows would be dropped.
  bool WantsRows() const override;
  // Counts an order whose rows were not built because the store is behind.
  void OnOrderNotStored(size_t samples, size_t stamps) override;
  // Hands the queued orders to the writer (orders are batched until this or
  // until a batch is large). Analysis thread.
  void Submit();
  // Replaces the snapshot to write with the next transaction. Analysis thread.
  void SetSnapshot(StoreSnapshot snapshot);
  // Waits until everything submitted so far is written. Analysis thread.
  void Flush();
  // Flushes, stops the thread, and returns the first write error, if any.
  absl::Status Stop();

  // Analysis thread.
  StoreWriterCounters counters() const;

  // Switches between dropping (live) and waiting (replay, journal recovery)
  // when the queue is full. Analysis thread.
  void set_block_when_full(bool block) { options_.block_when_full = block; }

 private:
  void Loop();
  size_t Samples(const std::vector<FinishedOrder>& orders) const;

  Store* store_;
  int64_t run_id_;
  StoreWriterOptions options_;
  std::vector<FinishedOrder> building_;  // analysis thread only
  size_t building_samples_ = 0;          // analysis thread only
  StoreWriterCounters skipped_;          // analysis thread only: rows never built
  // Mirrors queued_samples_ for WantsRows() without the lock. Relaxed: a
  // hint; a stale value only moves the point where rows start being dropped.
  std::atomic<size_t> queued_hint_{0};

  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, so TSan cannot see absl::Mutex's synchronisation; pthread mutexes
  // it intercepts.
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // notified when work arrives or stop is asked
  std::condition_variable idle_cv_;  // notified when the queue drains or a batch finishes
  // Guarded by mu_:
  std::deque<std::vector<FinishedOrder>> queue_;
  std::optional<StoreSnapshot> snapshot_;
  size_t queued_samples_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  absl::Status error_;
  StoreWriterCounters counters_;
  std::thread thread_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STORE_WRITER_H_
