#include "collector/sinks/store_sink.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"

namespace ticktrace::collect {
namespace {

// SQLite's SQLITE_FULL ("database or disk is full"), or the file system's
// ENOSPC/EDQUOT as a backend reports it: space may come back.
bool StoreIsFull(const absl::Status& s) {
  return absl::IsResourceExhausted(s) || absl::StrContains(s.message(), "disk is full") ||
         absl::StrContains(s.message(), "No space left on device") ||
         absl::StrContains(s.message(), "Disk quota exceeded");
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

// An order held until its interval's tail choice is final; `refs` counts the
// stage heaps it is among.
struct StoreSink::Pending {
  store::OrderDetail detail;
  int refs = 0;
};

struct StoreSink::TailInterval {
  struct Candidate {
    double latency_ns;
    Pending* order;
    bool operator>(const Candidate& o) const { return latency_ns > o.latency_ns; }
  };
  // Per stage: a min-heap (std::greater) of the slowest candidates so far.
  std::map<std::string, std::vector<Candidate>> heaps;
  std::vector<std::unique_ptr<Pending>> pending;
};

StoreSink::StoreSink(store::Writer* backend, int64_t run_id, const StoreSinkOptions& options)
    : backend_(backend), run_id_(run_id), options_(options), stats_(options.include_flagged) {
  options_.interval_ns = std::max<int64_t>(1, options_.interval_ns);
  options_.tail_one_in = std::max<uint64_t>(1, options_.tail_one_in);
  building_.reserve(options_.max_orders_per_transaction);
  if (!options_.budgets.empty()) {
    BudgetJudgeOptions judge;
    judge.budgets = options_.budgets;
    judge.interval_ns = options_.interval_ns;
    judge.settle_ns = options_.tail_settle_ns;
    judge.say = options_.say_budget;
    judge_ = std::make_unique<BudgetJudge>(std::move(judge));
    budget_counts_ = judge_->counts();
  }
}

StoreSink::~StoreSink() { Stop().IgnoreError(); }

void StoreSink::Start() { thread_ = std::thread([this] { Loop(); }); }

int64_t StoreSink::IntervalOf(int64_t utc_ns) const {
  const int64_t n = options_.interval_ns;
  return utc_ns - (((utc_ns % n) + n) % n);
}

int64_t StoreSink::NowNs() const {
  if (options_.now_ns) return options_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

store::OrderDetail StoreSink::Recycled() {
  while (!reuse_.empty()) {
    std::vector<store::OrderDetail>& v = reuse_.back();
    if (!v.empty()) {
      store::OrderDetail d = std::move(v.back());
      v.pop_back();
      return d;
    }
    reuse_.pop_back();
  }
  return store::OrderDetail{};
}

void StoreSink::Recycle(store::OrderDetail&& detail) {
  if (reuse_.empty()) reuse_.emplace_back();
  if (reuse_.back().size() < options_.max_orders_per_transaction) {
    reuse_.back().push_back(std::move(detail));
  }
}

void StoreSink::OnFinishedOrder(FinishedOrder&& order) {
  slots_.resize(order.order.samples.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i] = stats_.SlotOfName(order.order.samples[i].stage);
  }
  Take(std::move(order));
}

void StoreSink::OnStitchedOrder(const StitchedOrder& order, const StitchView& view) {
  if (order.stamps.size() != order.records) {  // as OrderSink::OnStitchedOrder
    OnOrderNotStored(order.samples.size(), order.records);
    return;
  }
  slots_.resize(order.samples.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i] = stats_.SlotOfStage(order.samples[i].stage_id, *view.stages);
  }
  FinishedOrder f;
  f.seq = order.seq;
  f.order = Recycled();
  FillOrderDetail(order, view, &f.order);
  Take(std::move(f));
}

void StoreSink::Take(FinishedOrder&& order) {
  if (orders_gathered_++ == 0) gathering_since_ns_ = NowNs();
  last_seq_ = std::max(last_seq_, order.seq);
  const int64_t interval = IntervalOf(order.order.first_utc_ns);
  newest_first_utc_ns_ = std::max(newest_first_utc_ns_, order.order.first_utc_ns);
  // Re-emitted after a restart: what the store holds of it stays as it is.
  if (order.seq > skip_stats_through_ && order.seq <= identity_through_ &&
      stored_keys_.contains({order.order.order_id, order.order.instance})) {
    Recycle(std::move(order.order));
    return;  // after a corrupt chunk: known by its key, not its number
  }
  if (order.seq == 0 || order.seq > skip_stats_through_) {
    stats_.AddOrder(interval, order.order.samples, slots_.data());
  }
  if (order.seq != 0 && order.seq <= skip_detail_through_) {
    Recycle(std::move(order.order));
    return;
  }
  switch (options_.detail) {
    case store::DetailPolicy::kAll:
      Keep(std::move(order.order));
      break;
    case store::DetailPolicy::kNone:
      ++local_.orders_detail_skipped;
      Recycle(std::move(order.order));
      break;
    case store::DetailPolicy::kTail: {
      store::OrderDetail d = std::move(order.order);
      // Flagged means any flag but cross_core, which most hops carry.
      const bool flagged = (d.flags() & ~store::kFlagCrossCore) != 0;
      if (flagged || !d.complete || tail_seen_++ % options_.tail_one_in == 0) {
        Keep(std::move(d));
      } else {
        OfferToTail(std::move(d), interval);
      }
      SettleTail(IntervalOf(newest_first_utc_ns_ - options_.tail_settle_ns) -
                 options_.interval_ns + 1);
      break;
    }
  }
}

void StoreSink::Keep(store::OrderDetail&& detail) {
  building_samples_ += detail.samples.size() + detail.stamps.size();
  building_.push_back(std::move(detail));
  if (building_.size() >= options_.max_orders_per_transaction) HandOver();
}

void StoreSink::OfferToTail(store::OrderDetail&& detail, int64_t interval) {
  std::unique_ptr<TailInterval>& t = tail_[interval];
  if (t == nullptr) t = std::make_unique<TailInterval>();
  auto p = std::make_unique<Pending>();
  p->detail = std::move(detail);
  for (const store::SampleDetail& s : p->detail.samples) {
    std::vector<TailInterval::Candidate>& heap = t->heaps[s.stage];
    const TailInterval::Candidate c{s.latency_ns, p.get()};
    if (heap.size() < options_.tail_slowest) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      ++p->refs;
    } else if (!heap.empty() && c.latency_ns > heap.front().latency_ns) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      --heap.back().order->refs;  // out of this stage's slowest
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      ++p->refs;
    }
  }
  if (p->refs == 0) {
    ++local_.orders_detail_skipped;
    Recycle(std::move(p->detail));
  } else {
    t->pending.push_back(std::move(p));
  }
}

void StoreSink::SettleTail(int64_t before_interval) {
  while (!tail_.empty() && tail_.begin()->first < before_interval) {
    for (std::unique_ptr<Pending>& p : tail_.begin()->second->pending) {
      if (p->refs > 0) {
        Keep(std::move(p->detail));
      } else {
        ++local_.orders_detail_skipped;
        Recycle(std::move(p->detail));
      }
    }
    tail_.erase(tail_.begin());
  }
}

void StoreSink::set_block_when_full(bool block) {
  {
    std::lock_guard lock(mu_);
    options_.block_when_full = block;
  }
  idle_cv_.notify_all();
}

void StoreSink::Submit() {
  if (orders_gathered_ == 0 && building_.empty()) return;  // nothing since the last handover
  // (Detail kept without an order gathered: tail choices settled by SettleAll.)
  if (orders_gathered_ > 0 && NowNs() - gathering_since_ns_ < options_.submit_every_ns) return;
  HandOver();
}

void StoreSink::HandOver() {
  orders_gathered_ = 0;
  Batch b;
  stats_.TakeDeltas(&b.intervals, &b.interval_orders);
  b.orders.swap(building_);
  building_.reserve(options_.max_orders_per_transaction);
  b.samples = building_samples_;
  building_samples_ = 0;
  b.newest_first_utc_ns = newest_first_utc_ns_;
  b.closes_through_utc_ns = std::max(newest_first_utc_ns_, analysed_until_utc_ns_);
  b.last_seq = last_seq_;
  b.detail_skipped_total = local_.orders_detail_skipped;
  if (counter_source_) {
    b.counters = counter_source_();
    b.counters_epoch = ++counters_epoch_;
  }
  std::vector<std::vector<store::OrderDetail>> spent;
  {
    std::lock_guard lock(mu_);
    spent.swap(spent_);
  }
  // The written detail is filled again (two batches' worth at most); the rest
  // is freed here, off the writer thread.
  for (std::vector<store::OrderDetail>& v : spent) {
    if (reuse_.size() < 2) reuse_.push_back(std::move(v));
  }
  spent.clear();
  std::unique_lock lock(mu_);
  if (b.intervals.empty() && b.orders.empty() &&
      (b.last_seq <= detail_through_ || (!queue_.empty() && !queue_.back().checkpoint))) {
    // Nothing to write but the sequence number: a later batch carries it.
    // The budgets' clock moves on with nothing to write (an idle stream).
    if (queue_.empty()) {
      idle_closes_through_utc_ns_ = std::max(idle_closes_through_utc_ns_, b.closes_through_utc_ns);
    }
    if (!queue_.empty()) {
      queue_.back().last_seq = std::max(queue_.back().last_seq, b.last_seq);
      queue_.back().closes_through_utc_ns =
          std::max(queue_.back().closes_through_utc_ns, b.closes_through_utc_ns);
      queue_.back().detail_skipped_total = b.detail_skipped_total;
      if (b.counters_epoch != 0) {
        queue_.back().counters = std::move(b.counters);
        queue_.back().counters_epoch = b.counters_epoch;
      }
    }
    return;
  }
  if (options_.block_when_full) {
    idle_cv_.wait(lock, [&] {
      return queued_samples_ == 0 || queued_samples_ + b.samples <= options_.max_queued_samples ||
             stop_ || !options_.block_when_full;
    });
  } else if (queued_samples_ + b.samples > options_.max_queued_samples && queued_samples_ > 0) {
    // Behind: this detail is not kept (interval_detail shows where); the
    // interval statistics still go.
    for (const store::OrderDetail& o : b.orders) {
      written_.samples_not_stored += o.samples.size();
      written_.stamps_not_stored += o.stamps.size();
    }
    written_.orders_not_stored += b.orders.size();
    if (reuse_.size() < 2) reuse_.push_back(std::move(b.orders));
    b.orders.clear();
    b.samples = 0;
  }
  b.orders_not_stored_total = written_.orders_not_stored;
  b.samples_not_stored_total = written_.samples_not_stored;
  b.stamps_not_stored_total = written_.stamps_not_stored;
  queued_samples_ += b.samples;
  queue_.push_back(std::move(b));
  work_cv_.notify_one();
}

void StoreSink::SubmitCheckpoint(Checkpoint checkpoint) {
  HandOver();
  Batch b;
  b.last_seq = last_seq_;
  b.checkpoint = std::make_unique<Checkpoint>(std::move(checkpoint));
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(b));
  work_cv_.notify_one();
}

void StoreSink::SetSnapshot(store::Snapshot snapshot) {
  HandOver();
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snapshot);
  snapshot_epoch_ = ++counters_epoch_;
  work_cv_.notify_one();
}

void StoreSink::SettleAll() { SettleTail(std::numeric_limits<int64_t>::max()); }

void StoreSink::Flush() {
  HandOver();
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] {
    return (queue_.empty() && !snapshot_.has_value() && !busy_) || !thread_.joinable();
  });
}

absl::Status StoreSink::Stop() {
  if (thread_.joinable()) {
    SettleTail(std::numeric_limits<int64_t>::max());
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

void StoreSink::Resume(const std::map<std::string, int64_t>& stored,
                       std::optional<uint64_t> exact_through,
                       const std::vector<std::pair<uint64_t, uint32_t>>& stored_keys) {
  auto get = [&stored](store::Counter c) -> uint64_t {
    auto it = stored.find(std::string(store::CounterName(c)));
    return it == stored.end() || it->second < 0 ? 0 : static_cast<uint64_t>(it->second);
  };
  skip_stats_through_ = get(store::Counter::kStoreStatsThrough);
  skip_detail_through_ = std::min(skip_stats_through_, get(store::Counter::kStoreDetailThrough));
  if (exact_through.has_value() && *exact_through < skip_stats_through_) {
    identity_through_ = skip_stats_through_;
    stored_keys_.insert(stored_keys.begin(), stored_keys.end());
    skip_stats_through_ = *exact_through;
    skip_detail_through_ = std::min(skip_detail_through_, *exact_through);
  }
  last_seq_ = skip_detail_through_;
  if (judge_ != nullptr) judge_->Resume(stored);
  local_.orders_detail_skipped = get(store::Counter::kOrdersDetailSkipped);
  std::lock_guard lock(mu_);
  if (judge_ != nullptr) budget_counts_ = judge_->counts();
  stats_through_ = skip_stats_through_;
  detail_through_ = skip_detail_through_;
  written_.orders_not_stored = get(store::Counter::kOrdersNotStored);
  written_.samples_not_stored = get(store::Counter::kSamplesNotStored);
  written_.stamps_not_stored = get(store::Counter::kStampsNotStored);
  written_.orders_already_stored = get(store::Counter::kOrdersAlreadyStored);
  written_.orders_retired = get(store::Counter::kOrdersRetired);
}

uint64_t StoreSink::stored_through() const {
  std::lock_guard lock(mu_);
  return std::min(stats_through_, detail_through_);
}

StoreSinkCounters StoreSink::counters() const {
  std::lock_guard lock(mu_);
  StoreSinkCounters c = written_;
  c.orders_detail_skipped += local_.orders_detail_skipped;
  return c;
}

void StoreSink::PutBatchCounters(std::vector<std::pair<std::string, int64_t>> counters,
                                 store::Snapshot* snapshot) {
  std::map<std::string, int64_t> merged(snapshot->counters.begin(), snapshot->counters.end());
  for (auto& [name, value] : counters) merged[std::move(name)] = value;
  snapshot->counters.assign(merged.begin(), merged.end());
}

// The sink's counts go with the batch they describe, not as of now: the
// snapshot's own copies are replaced by those of the last batch whose detail
// the transaction takes, beside the sequence numbers the store will hold
// (store_sink.h, "Exactly once").
void StoreSink::PutSinkCounters(const Transaction& t, const Batch* last_taken,
                                store::Snapshot* snapshot) {
  std::erase_if(snapshot->counters, [](const std::pair<std::string, int64_t>& c) {
    const std::optional<store::Counter> k = store::CounterByName(c.first);
    return k == store::Counter::kOrdersNotStored || k == store::Counter::kSamplesNotStored ||
           k == store::Counter::kStampsNotStored || k == store::Counter::kOrdersDetailSkipped;
  });
  auto put = [snapshot](store::Counter c, uint64_t v) {
    snapshot->counters.emplace_back(std::string(store::CounterName(c)), static_cast<int64_t>(v));
  };
  put(store::Counter::kStoreStatsThrough, t.stats_through);
  put(store::Counter::kStoreDetailThrough, t.detail_through);
  // As of the retention before this transaction (the writer thread's count).
  put(store::Counter::kOrdersRetired, t.orders_retired);
  if (last_taken != nullptr) {
    put(store::Counter::kOrdersNotStored, last_taken->orders_not_stored_total);
    put(store::Counter::kSamplesNotStored, last_taken->samples_not_stored_total);
    put(store::Counter::kStampsNotStored, last_taken->stamps_not_stored_total);
    put(store::Counter::kOrdersDetailSkipped, last_taken->detail_skipped_total);
  }
}

bool StoreSink::TakeWork(Transaction* t) {
  Batch taken_counts;
  const Batch* last_taken = nullptr;  // the last batch whose detail this transaction takes
  // The newest counters of the batches whose statistics this transaction takes.
  std::vector<std::pair<std::string, int64_t>> counters;
  uint64_t counters_epoch = 0;
  std::unique_lock lock(mu_);
  t->stats_through = stats_through_;
  t->detail_through = detail_through_;
  t->orders_retired = written_.orders_retired;
  work_cv_.wait(lock, [this] { return !queue_.empty() || snapshot_.has_value() || stop_; });
  // Stopping with nothing left: one more (empty) transaction judges the
  // budgets' last intervals, when there are budgets.
  if (queue_.empty() && !snapshot_.has_value() && stop_ && (judge_ == nullptr || judged_all_)) {
    return false;
  }
  // Every queued interval delta, and detail up to a bound: statistics
  // and counters never wait behind a detail backlog.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->checkpoint != nullptr) {
      // Everything before a checkpoint is written first; it goes alone.
      if (it == queue_.begin()) {
        t->checkpoint = std::move(it->checkpoint);
        queue_.erase(it);
      }
      break;
    }
    for (store::IntervalDelta& d : it->intervals) t->work.intervals.push_back(std::move(d));
    it->intervals.clear();
    for (const store::IntervalOrders& io : it->interval_orders) {
      t->work.interval_orders.push_back(io);
    }
    it->interval_orders.clear();
    if (it->counters_epoch > counters_epoch) {
      counters = std::move(it->counters);
      counters_epoch = it->counters_epoch;
      it->counters_epoch = 0;
    }
    t->stats_through = std::max(t->stats_through, it->last_seq);
    t->closes_through_utc_ns = std::max(t->closes_through_utc_ns, it->closes_through_utc_ns);
    if (t->work.orders.size() < options_.max_orders_per_transaction) {
      t->detail_through = std::max(t->detail_through, it->last_seq);
      taken_counts.detail_skipped_total = it->detail_skipped_total;
      taken_counts.orders_not_stored_total = it->orders_not_stored_total;
      taken_counts.samples_not_stored_total = it->samples_not_stored_total;
      taken_counts.stamps_not_stored_total = it->stamps_not_stored_total;
      last_taken = &taken_counts;
      // Retention is judged by the orders written, never by queued ones.
      t->newest_ns = std::max(t->newest_ns, it->newest_first_utc_ns);
      for (store::OrderDetail& o : it->orders) t->work.orders.push_back(std::move(o));
      t->samples += it->samples;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  // One delta per (stage, interval): a backend writes each interval row once.
  MergePerKey(&t->work.intervals, &t->work.interval_orders);
  t->last = stop_ && queue_.empty();
  // Everything handed over is in this transaction or was written before it.
  if (queue_.empty()) {
    t->closes_through_utc_ns = std::max(t->closes_through_utc_ns, idle_closes_through_utc_ns_);
  }
  const uint64_t snapshot_epoch = snapshot_.has_value() ? snapshot_epoch_ : 0;
  t->snapshot.swap(snapshot_);
  busy_ = true;
  // What the store holds, the analysis's counters and the sink's counts, in
  // the same transaction as the rows they describe.
  if (!t->snapshot.has_value()) t->snapshot.emplace();
  if (counters_epoch > snapshot_epoch) PutBatchCounters(std::move(counters), &*t->snapshot);
  PutSinkCounters(*t, last_taken, &*t->snapshot);
  return true;
}

// Full disk (docs/collector.md#full-disk): the transaction was rolled back;
// the same batch again every 100 ms until it fits (said once). Meanwhile the
// queue fills, and what does not fit in it is counted as not stored.
absl::Status StoreSink::WriteUntilItFits(Transaction& t, uint64_t* already) {
  absl::Status s = backend_->Write(run_id_, t.work.intervals, t.work.interval_orders,
                                   t.work.orders, t.snapshot ? &*t.snapshot : nullptr, already);
  for (bool said = false; !s.ok() && StoreIsFull(s);) {
    if (!said) {
      std::cerr << "ticktrace-collector: store " << s.message()
                << "; waiting for space, retrying every 100 ms\n"
                << std::flush;
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    *already = 0;
    s = backend_->Write(run_id_, t.work.intervals, t.work.interval_orders, t.work.orders,
                        t.snapshot ? &*t.snapshot : nullptr, already);
    if (s.ok()) std::cerr << "ticktrace-collector: store: space again; writing\n" << std::flush;
  }
  return s;
}

// Retention by age every retention_every_ns of the newest written order's
// first stamp; by size after every transaction when the store measures
// itself (store_sink.h). Returns the orders retired (0 when not due).
absl::StatusOr<uint64_t> StoreSink::RetainIfDue(int64_t newest_ns, bool size_known) {
  const bool by_age = options_.retain_detail_ns.has_value() || options_.retain_ns.has_value();
  const bool by_size = options_.retain_detail_bytes > 0;
  const bool period_due = newest_ns != INT64_MIN &&
                          (retention_done_at_ns_ == INT64_MIN ||
                           newest_ns - retention_done_at_ns_ >= options_.retention_every_ns);
  const bool age_due = (by_age || (by_size && !size_known)) && period_due;
  if (!age_due && !(by_size && size_known)) return 0;
  if (age_due) retention_done_at_ns_ = newest_ns;
  // Orders first-stamped up to tail_settle_ns (the order timeout, the
  // linger, a margin) before the newest may still come: their intervals
  // are not retired before then.
  auto before = [&](const std::optional<int64_t>& keep) -> std::optional<int64_t> {
    if (!age_due || !keep.has_value()) return std::nullopt;
    return newest_ns - *keep - options_.tail_settle_ns;
  };
  return backend_->ApplyRetention(run_id_, before(options_.retain_detail_ns),
                                  options_.retain_detail_bytes, before(options_.retain_ns));
}

void StoreSink::JudgeBudgets(Transaction& t) {
  judge_->Add(t.work.intervals);
  judge_->Close(t.closes_through_utc_ns, t.last, &t.snapshot->budget_breaches);
  if (t.last) judged_all_ = true;
  judge_->PutCounters(&t.snapshot->counters);
}

absl::Status StoreSink::SeedBudgets(store::StoreReader& reader) {
  if (judge_ == nullptr) return absl::OkStatus();
  store::TimeWindow window;
  if (judge_->judged_through_utc_ns() != INT64_MIN) {
    window.since_utc_ns = judge_->judged_through_utc_ns() + 1;
  }
  return reader.ForEachIntervalHistogram(
      run_id_, window,
      [this](const std::string& stage, int64_t start_utc_ns,
             std::string_view encoded) -> absl::Status {
        if (!judge_->Budgeted(stage)) return absl::OkStatus();
        absl::StatusOr<store::Histogram> h = store::Histogram::Decode(encoded);
        if (!h.ok()) return h.status();
        judge_->Seed(stage, start_utc_ns, *h);
        return absl::OkStatus();
      });
}

std::vector<BudgetCount> StoreSink::budget_counts() const {
  std::lock_guard lock(mu_);
  return budget_counts_;
}

// True when the checkpoint file is durable.
bool StoreSink::WriteCheckpoint(const Checkpoint& checkpoint) {
  if (options_.checkpoint_path.empty()) return false;
  {
    // Never after a batch that failed: the checkpoint would skip it.
    std::lock_guard lock(mu_);
    if (!error_.ok()) return false;
  }
  if (!WriteCheckpointFile(options_.checkpoint_path, checkpoint, options_.group_readable).ok()) {
    return false;
  }
  // Release: pairs with durable_checkpoint_offset()'s acquire (the drain
  // thread frees the journal before it).
  durable_checkpoint_offset_.store(checkpoint.journal_offset, std::memory_order_release);
  return true;
}

void StoreSink::Loop() {
  while (true) {
    Transaction t;
    if (!TakeWork(&t)) return;
    uint64_t already = 0;
    const uint64_t cpu_before_ns = ThreadCpuNs();
    if (judge_ != nullptr) JudgeBudgets(t);
    absl::Status s = WriteUntilItFits(t, &already);
    uint64_t retired = 0;
    // The store's size around retention: what it freed is part of the growth.
    const std::optional<store::StoreSize> size_before = s.ok() ? backend_->Size() : std::nullopt;
    std::optional<store::StoreSize> size_after = size_before;
    if (s.ok()) {
      absl::StatusOr<uint64_t> r = RetainIfDue(t.newest_ns, size_before.has_value());
      if (r.ok()) {
        retired = *r;
        if (retired > 0 && size_before.has_value()) size_after = backend_->Size();
      } else {
        s = r.status();
      }
    }
    const bool checkpoint_written =
        t.checkpoint != nullptr && s.ok() && WriteCheckpoint(*t.checkpoint);
    const uint64_t cpu_ns = ThreadCpuNs() - cpu_before_ns;
    std::lock_guard lock(mu_);
    busy_ = false;
    queued_samples_ -= t.samples;
    written_.orders_already_stored += already;
    written_.orders_stored += t.work.orders.size() - already;
    ++written_.transactions;
    written_.writer_cpu_ns += cpu_ns;
    written_.orders_retired += retired;
    if (judge_ != nullptr && s.ok()) budget_counts_ = judge_->counts();
    if (size_after.has_value()) {
      written_.store_size_known = true;
      written_.store_disk_bytes = size_after->disk_bytes;
      written_.store_live_bytes = size_after->live_bytes;
      if (size_before->live_bytes > size_after->live_bytes) {
        written_.store_bytes_retired += size_before->live_bytes - size_after->live_bytes;
      }
    }
    if (t.checkpoint != nullptr) {
      ++(checkpoint_written ? written_.checkpoints_written : written_.checkpoint_failures);
    }
    if (s.ok()) {
      stats_through_ = t.stats_through;
      detail_through_ = t.detail_through;
    }
    if (!t.work.orders.empty() && spent_.size() < 64) spent_.push_back(std::move(t.work.orders));
    if (!s.ok() && error_.ok()) error_ = s;
    idle_cv_.notify_all();
  }
}

}  // namespace ticktrace::collect
