#include "collector/store_writer.h"

#include <utility>

namespace ticktrace::collect {

StoreWriter::StoreWriter(Store* store, int64_t run_id, const StoreWriterOptions& options)
    : store_(store), run_id_(run_id), options_(options) {
  building_.reserve(options_.max_orders_per_transaction);
}

StoreWriter::~StoreWriter() { Stop().IgnoreError(); }

void StoreWriter::Start() { thread_ = std::thread([this] { Loop(); }); }

size_t StoreWriter::Samples(const std::vector<FinishedOrder>& orders) const {
  size_t n = 0;
  for (const FinishedOrder& f : orders) n += f.samples.size() + f.stamps.size();
  return n;
}

void StoreWriter::OnFinishedOrder(FinishedOrder&& order) {
  building_samples_ += order.samples.size() + order.stamps.size();
  building_.push_back(std::move(order));
  if (building_.size() >= options_.max_orders_per_transaction) Submit();
}

bool StoreWriter::WantsRows() const {
  return options_.block_when_full ||
         queued_hint_.load(std::memory_order_relaxed) + building_samples_ <
             options_.max_queued_samples;
}

void StoreWriter::OnOrderNotStored(size_t samples, size_t stamps) {
  skipped_.samples_not_stored += samples;
  skipped_.stamps_not_stored += stamps;
  ++skipped_.orders_not_stored;
}

void StoreWriter::Submit() {
  if (building_.empty()) return;
  std::vector<FinishedOrder> batch;
  batch.swap(building_);
  building_.reserve(options_.max_orders_per_transaction);
  const size_t rows = building_samples_;
  building_samples_ = 0;
  std::unique_lock lock(mu_);
  if (options_.block_when_full) {
    idle_cv_.wait(lock, [this, rows] {
      return queued_samples_ == 0 || queued_samples_ + rows <= options_.max_queued_samples ||
             stop_;
    });
  } else if (queued_samples_ + rows > options_.max_queued_samples && queued_samples_ > 0) {
    // Behind: these orders are not stored; statistics already have them.
    for (const FinishedOrder& f : batch) {
      counters_.samples_not_stored += f.samples.size();
      counters_.stamps_not_stored += f.stamps.size();
    }
    counters_.orders_not_stored += batch.size();
    return;
  }
  queued_samples_ += rows;
  queued_hint_.store(queued_samples_, std::memory_order_relaxed);
  queue_.push_back(std::move(batch));
  work_cv_.notify_one();
}

void StoreWriter::SetSnapshot(StoreSnapshot snapshot) {
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snapshot);
  work_cv_.notify_one();
}

void StoreWriter::Flush() {
  Submit();
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] {
    return (queue_.empty() && !snapshot_.has_value() && !busy_) || !thread_.joinable();
  });
}

absl::Status StoreWriter::Stop() {
  if (thread_.joinable()) {
    Flush();
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      work_cv_.notify_one();
    }
    thread_.join();
  }
  std::lock_guard lock(mu_);
  return error_;
}

StoreWriterCounters StoreWriter::counters() const {
  std::lock_guard lock(mu_);
  StoreWriterCounters c = counters_;
  c.samples_not_stored += skipped_.samples_not_stored;
  c.stamps_not_stored += skipped_.stamps_not_stored;
  c.orders_not_stored += skipped_.orders_not_stored;
  return c;
}

void StoreWriter::Loop() {
  // Not niced: the rings are freed by the drain thread, which never waits for
  // this one; a niced writer starved on a loaded machine (orders reached the
  // store seconds late), and when it is behind it drops rows, counted.
  while (true) {
    std::vector<FinishedOrder> orders;
    std::optional<StoreSnapshot> snapshot;
    size_t rows = 0;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [this] { return !queue_.empty() || snapshot_.has_value() || stop_; });
      if (queue_.empty() && !snapshot_.has_value() && stop_) return;
      // Coalesce what is queued into one transaction, up to a bound.
      while (!queue_.empty() && orders.size() < options_.max_orders_per_transaction) {
        std::vector<FinishedOrder>& front = queue_.front();
        if (orders.empty()) {
          orders.swap(front);
        } else {
          for (FinishedOrder& f : front) orders.push_back(std::move(f));
        }
        queue_.pop_front();
      }
      rows = Samples(orders);
      if (queue_.empty()) snapshot.swap(snapshot_);  // the snapshot follows the orders it counts
      busy_ = true;
    }
    uint64_t already = 0;
    absl::Status s = store_->WriteBatch(run_id_, orders, snapshot ? &*snapshot : nullptr, &already);
    {
      std::lock_guard lock(mu_);
      busy_ = false;
      queued_samples_ -= rows;
      queued_hint_.store(queued_samples_, std::memory_order_relaxed);
      counters_.orders_already_stored += already;
      counters_.orders_stored += orders.size() - already;
      ++counters_.transactions;
      if (!s.ok() && error_.ok()) error_ = s;
      idle_cv_.notify_all();
    }
  }
}

}  // namespace ticktrace::collect
