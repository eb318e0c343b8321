// DrainProgress: what the drain stage tells the analysis stage, and back,
// when the journal is the buffer between them (docs/collector.md, "The
// stages of the collector"). The drain appends each pass to the journal,
// makes it durable, commits the rings' read indices and then publishes the
// journal's durable end here; the analysis reads the journal up to that end
// from the file (JournalTail, collector/stream/journal.h) and publishes how
// far it has analysed. Neither side ever waits for the other while it has
// work: the drain only reads the analysed offset, and the analysis sleeps
// only when it has caught up with the durable end.

#ifndef TICKTRACE_COLLECTOR_DRAIN_PROGRESS_H_
#define TICKTRACE_COLLECTOR_DRAIN_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "collector/drain/drainer.h"

namespace ticktrace::collect {

class DrainProgress {
 public:
  // `durable_end`: the journal's length when the analysis starts reading it
  // (after the run info chunk, or after what a restart recovered).
  explicit DrainProgress(uint64_t durable_end) : durable_end_(durable_end) {}

  // Drain thread, after a pass is durable (fdatasync returned) and its read
  // indices are committed: the journal holds whole chunks up to `durable_end`.
  void Publish(uint64_t durable_end, const DrainerCounters& counters, uint64_t journal_syncs) {
    {
      // Under the lock too, so that a Wait() between its check and its sleep
      // cannot miss the wake-up.
      std::lock_guard lock(mu_);
      counters_ = counters;
      journal_syncs_ = journal_syncs;
      // Release: pairs with the acquire loads in Wait(). The bytes below this
      // offset were written (write(2) returned) before it, so a reader that
      // sees the offset reads them whole from the page cache.
      durable_end_.store(durable_end, std::memory_order_release);
    }
    cv_.notify_one();
  }
  // Drain thread: no pass follows (the analysis ends once it reaches the end).
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_one();
  }
  // Drain thread: the run is stopping (no new checkpoints are asked for then:
  // the store is being told to stop). Relaxed: a hint polled per batch.
  void SetStopping() { stopping_.store(true, std::memory_order_relaxed); }
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  // Analysis thread: the journal's durable end, waiting up to `timeout` while
  // it is at `analysed` (nothing new). Sets *closed when the drain has ended
  // and nothing follows the returned offset.
  uint64_t Wait(uint64_t analysed, std::chrono::milliseconds timeout, bool* closed) {
    // Acquire: pairs with Publish()'s release store.
    uint64_t end = durable_end_.load(std::memory_order_acquire);
    if (end > analysed) {
      *closed = false;
      return end;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
      return closed_ || durable_end_.load(std::memory_order_acquire) > analysed;
    });
    // Closed is read under the lock after the last Publish() (the drain
    // publishes before it closes), so the end read below is the final one.
    *closed = closed_;
    end = durable_end_.load(std::memory_order_acquire);
    if (end > analysed) *closed = false;
    return end;
  }
  // Analysis thread: every chunk before `offset` is analysed.
  void SetAnalysed(uint64_t offset) {
    // Release: pairs with the drain's acquire in analysed(); nothing is
    // published through it but the offset itself (the drain sizes its cap by it).
    analysed_.store(offset, std::memory_order_release);
  }
  // Drain thread: how far the analysis has read (0 until it has read anything).
  uint64_t analysed() const { return analysed_.load(std::memory_order_acquire); }

  // Analysis thread: the drain's counters and sync count as of the last
  // published pass (for the snapshots).
  void ReadCounters(DrainerCounters* counters, uint64_t* journal_syncs) const {
    std::lock_guard lock(mu_);
    *counters = counters_;
    *journal_syncs = journal_syncs_;
  }

 private:
  std::atomic<uint64_t> durable_end_;
  std::atomic<uint64_t> analysed_{0};
  std::atomic<bool> stopping_{false};
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, so TSan cannot see absl::Mutex's synchronisation; pthread mutexes
  // it intercepts.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  DrainerCounters counters_;
  uint64_t journal_syncs_ = 0;
  bool closed_ = false;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_DRAIN_PROGRESS_H_
