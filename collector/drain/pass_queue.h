// PassQueue: the seam between the drain stage and the analysis stage when
// there is no journal (no store, or use_journal off; docs/collector.md,
// "Stages"). With a journal the passes are read back from it instead
// (drain_progress.h), and nothing bounds the drain but the journal's cap.

#ifndef TICKTRACE_COLLECTOR_PASS_QUEUE_H_
#define TICKTRACE_COLLECTOR_PASS_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "collector/drain/drainer.h"

namespace ticktrace::collect {

// Drained passes on their way from the drain thread to the analysis thread.
// Push waits while more than `max_bytes` are queued (the analysis is far
// behind: the rings then fill, and producers count drops, instead of the
// collector growing without bound).
class PassQueue {
 public:
  struct Item {
    std::string bytes;  // whole chunks of one pass
    DrainerCounters drainer;
  };
  explicit PassQueue(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Drain thread.
  void Push(Item item) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return bytes_ <= max_bytes_ || items_.empty(); });
    bytes_ += item.bytes.size();
    items_.push_back(std::move(item));
    cv_.notify_all();
  }
  // Drain thread: no more items.
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  // Analysis thread: false once closed and empty.
  bool Pop(Item* item) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !items_.empty() || closed_; });
    if (items_.empty()) return false;
    *item = std::move(items_.front());
    items_.pop_front();
    bytes_ -= item->bytes.size();
    cv_.notify_all();
    return true;
  }

 private:
  const size_t max_bytes_;
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, so TSan cannot see absl::Mutex's synchronisation; pthread mutexes
  // it intercepts.
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  std::deque<Item> items_;
  size_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_PASS_QUEUE_H_
