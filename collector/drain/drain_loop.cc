#include "collector/drain/drain_loop.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/stream/stream.h"
#include "ticktrace/calibration.h"
#include "ticktrace/tsc.h"

namespace ticktrace::collect {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::Status RetryWhileFull(absl::Status status, const std::function<absl::Status()>& append,
                            const std::function<bool()>& stop_requested) {
  std::cerr << "ticktrace-collector: " << status.message()
            << "; not draining until there is space (the rings keep the records, or their "
               "producers drop and count them); retrying every 100 ms\n"
            << std::flush;
  const auto since = Clock::now();
  while (absl::IsResourceExhausted(status)) {
    if (stop_requested()) {
      return absl::FailedPreconditionError(
          absl::StrCat("stopped while full (", status.message(),
                       "); the undrained records stay in the rings and the journal for a restart"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = append();
  }
  if (status.ok()) {
    std::cerr << "ticktrace-collector: space again after "
              << absl::StrFormat("%.1f",
                                 std::chrono::duration<double>(Clock::now() - since).count())
              << " s; draining\n"
              << std::flush;
  }
  return status;
}

namespace {

// One live run's drain loop: its pacing and the state it carries from pass
// to pass. Per pass, never per record, so its helpers cost nothing that shows.
class DrainLoop {
 public:
  explicit DrainLoop(const DrainStage& stage);
  DrainResult Run();

 private:
  // Puts the pass's clock tick (clock_bytes_ then), a UTC anchor when due, the skew thread's
  // measurements, the drained records and changed drainer counters into
  // buf_; returns the records drained.
  size_t EncodePass(Clock::time_point pass_start, bool discover);
  // Durable first (journal, --raw), then the rings may reuse the cells.
  absl::Status Persist();
  // After the commit: the pass to the analysis (the journal's durable end,
  // or without a journal a copy of the pass through the queue).
  void Hand();
  // Frees the journal before the last durable checkpoint.
  void FreeJournal();
  // True while the journal holds at least the cap: what the disk holds
  // since the last freed checkpoint, or, when stopping (no checkpoints
  // then) or where holes cannot be punched, what the analysis has not read.
  bool AtCap() const;
  // At the cap: no pass (no read index moves); says so once per run and
  // counts each stall; waits a little for the analysis and the checkpoints.
  void StallAtCap();
  // Sleeps after a pass that carried chunks: busy, or backing off when idle.
  void Pace(Clock::time_point pass_start, size_t records);
  void BackOff(Clock::time_point now);

  const DrainStage& stage_;
  const CollectorOptions& o_;
  Drainer& drainer_;
  Journal* const journal_;
  ArchiveWriter* const raw_;
  StoreSink* const sink_;
  const Clock::time_point t0_ = Clock::now();
  const Clock::time_point deadline_;
  // Idle passes advance the clock (for completions and timeouts) at most this often.
  // With a journal every pass is an fdatasync: passes are spaced by the
  // group-commit window (options.h, sync_window) unless a ring is filling.
  const std::chrono::milliseconds pending_clock_every_;
  const std::chrono::microseconds busy_pass_every_;
  const std::chrono::milliseconds open_clock_every_;
  Clock::time_point last_anchor_ = t0_;
  uint64_t later_anchors_ = 0;  // anchors this loop took (the run's first is not one)
  Clock::time_point last_clock_ = t0_;
  // Deep idle: after 1 s without a record the back-off may reach 4 x
  // max_idle_sleep (4 ms: ~250 wake-ups/s instead of ~700, under 1% of a core
  // idle; a 64 Ki-record ring still holds 16 ms at 4 M records/s).
  Clock::time_point last_records_at_ = t0_;
  std::chrono::microseconds idle_sleep_{0};
  DrainerCounters counters_in_stream_;
  bool freeing_works_ = true;   // false once the file system refused to punch a hole
  bool stopping_ = false;
  bool stalled_ = false;   // at the journal's cap since the last pass
  bool cap_said_ = false;  // the cap's stderr line is said once per run
  // Reused from pass to pass: its capacity stays (a pass never allocates
  // once the buffer has grown to the largest pass).
  std::string buf_;
  size_t clock_bytes_ = 0;  // buf_'s size with the pass's clock tick alone
};

DrainLoop::DrainLoop(const DrainStage& stage)
    : stage_(stage),
      o_(*stage.options),
      drainer_(*stage.drainer),
      journal_(stage.journal),
      raw_(stage.raw),
      sink_(stage.sink),
      deadline_(o_.duration_s > 0 ? t0_ + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(o_.duration_s))
                                  : Clock::time_point::max()),
      pending_clock_every_(
          journal_ != nullptr
              ? std::max<std::chrono::milliseconds>(std::chrono::milliseconds(1), o_.sync_window)
              : std::chrono::milliseconds(1)),
      busy_pass_every_(journal_ != nullptr
                           ? std::max<std::chrono::microseconds>(o_.min_pass_interval,
                                                                 o_.sync_window)
                           : std::chrono::microseconds(o_.min_pass_interval)),
      open_clock_every_(std::chrono::milliseconds(
          std::clamp<int64_t>(stage.info->order_timeout_ms / 8, 1, 100))),
      counters_in_stream_(drainer_.counters()) {}

void DrainLoop::BackOff(Clock::time_point now) {
  const std::chrono::microseconds bound = now - last_records_at_ >= std::chrono::seconds(1)
                                              ? 4 * o_.max_idle_sleep
                                              : o_.max_idle_sleep;
  idle_sleep_ = std::min<std::chrono::microseconds>(
      bound, std::max<std::chrono::microseconds>(std::chrono::microseconds(10), idle_sleep_ * 2));
  std::this_thread::sleep_for(idle_sleep_);
}

size_t DrainLoop::EncodePass(Clock::time_point pass_start, bool discover) {
  buf_.clear();
  ChunkEncoder::Clock(ReadTsc(), &buf_);
  clock_bytes_ = buf_.size();
  // A UTC anchor every anchor interval (about 100 ns: two clock reads), and
  // the skew thread's measurements, as run info updates in the stream.
  // The first one at the first pass: until a second anchor exists, the rate
  // between the TSC and CLOCK_REALTIME is not measured, and a time read by
  // another clock is placed with the largest slew the kernel allows
  // (collector/time/external_clock.h). The run's own anchor was read before
  // the calibration's end and the cores' measurement, a piece long enough.
  const auto due = later_anchors_ == 0 ? std::chrono::milliseconds(0) : o_.anchor_interval;
  if (pass_start - last_anchor_ >= due) {
    RunInfoUpdate anchor;
    ReadTscRealtimeAnchor(&anchor.anchor.tsc, &anchor.anchor.utc_ns);
    anchor.anchor.utc_ns += o_.test_clock_offset_ns;  // tests only (options.h)
    ChunkEncoder::RunInfo(anchor.ToJson(), &buf_);
    last_anchor_ = pass_start;
    ++later_anchors_;
  }
  if (stage_.skew != nullptr) stage_.skew->TakeChunks(&buf_);
  const size_t records = drainer_.Pass(discover, &buf_);
  if (!(drainer_.counters() == counters_in_stream_)) {
    // The drainer's counters go into the stream (journaled, checkpointed):
    // a restart continues them (DrainerSeed).
    RunInfoUpdate u;
    u.kind = RunInfoUpdate::Kind::kCounters;
    u.counters = drainer_.counters().Named();
    ChunkEncoder::RunInfo(u.ToJson(), &buf_);
    counters_in_stream_ = drainer_.counters();
  }
  return records;
}

absl::Status DrainLoop::Persist() {
  if (journal_ != nullptr) {
    absl::Status status = journal_->AppendDurable(buf_);
    if (absl::IsResourceExhausted(status)) {  // full disk: the same pass again until it fits
      status = RetryWhileFull(
          status, [&] { return journal_->AppendDurable(buf_); }, stage_.stop_requested);
    }
    if (!status.ok()) return status;
  }
  if (raw_ != nullptr) {
    absl::Status status = raw_->Append(buf_);
    if (absl::IsResourceExhausted(status)) {
      status = RetryWhileFull(status, [&] { return raw_->Append(buf_); }, stage_.stop_requested);
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void DrainLoop::Hand() {
  if (stage_.progress != nullptr) {
    stage_.progress->Publish(journal_->bytes(), drainer_.counters(), journal_->syncs());
    return;
  }
  // A copy, not a swap: buf_ keeps its capacity for the next pass.
  PassQueue::Item item;
  item.bytes.assign(buf_);
  item.drainer = drainer_.counters();
  stage_.queue->Push(std::move(item));  // waits while the analysis is far behind
}

bool DrainLoop::AtCap() const {
  if (journal_ == nullptr || stage_.progress == nullptr) return false;
  const uint64_t end = journal_->bytes();
  const uint64_t from = freeing_works_ && !stopping_
                            ? journal_->freed_before()
                            : stage_.progress->analysed();  // acquire (drain_progress.h)
  return end > from && end - from >= o_.journal_cap_bytes;
}

void DrainLoop::StallAtCap() {
  if (!stalled_) {
    stalled_ = true;
    drainer_.CountJournalCapStall();
    if (!cap_said_) {
      cap_said_ = true;
      std::cerr << "ticktrace-collector: the journal reached its cap (--journal-cap "
                << o_.journal_cap_bytes
                << " bytes): the analysis or the store is that far behind; not draining until "
                   "checkpoints free room (the rings keep the records, or their producers "
                   "drop and count them; said once)\n"
                << std::flush;
    }
  }
  FreeJournal();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void DrainLoop::FreeJournal() {
  if (journal_ == nullptr || sink_ == nullptr || !freeing_works_ ||
      sink_->durable_checkpoint_offset() <= journal_->freed_before()) {
    return;
  }
  absl::Status freed = journal_->FreeBefore(sink_->durable_checkpoint_offset());
  if (!freed.ok()) {
    freeing_works_ = false;
    std::cerr << "ticktrace-collector: " << freed.message()
              << "; the journal keeps everything until the run ends\n"
              << std::flush;
  }
}

void DrainLoop::Pace(Clock::time_point pass_start, size_t records) {
  if (records == 0) {
    BackOff(pass_start);
    return;
  }
  idle_sleep_ = std::chrono::microseconds(0);
  last_records_at_ = pass_start;
  // Busy: still read each ring's index no more often than min_pass_interval.
  const auto next = pass_start + (drainer_.max_fill() >= o_.sync_sooner_fill
                                      ? std::chrono::microseconds(o_.min_pass_interval)
                                      : busy_pass_every_);
  if (Clock::now() < next) std::this_thread::sleep_until(next);
}

DrainResult DrainLoop::Run() {
  DrainResult result;
  int final_passes = 0;
  while (true) {
    const auto pass_start = Clock::now();
    bool discover = false;
    if (!stopping_ && (stage_.stop_requested() || pass_start >= deadline_)) {
      stopping_ = true;
      discover = true;  // catch segments that appeared since the last look
      if (stage_.progress != nullptr) stage_.progress->SetStopping();
      if (stage_.on_stopping) stage_.on_stopping();
    }
    if (AtCap()) {
      StallAtCap();
      continue;
    }
    stalled_ = false;
    const size_t records = EncodePass(pass_start, discover);
    const bool has_chunks = buf_.size() > clock_bytes_;
    const bool clock_due = (stage_.orders_pending->load(std::memory_order_relaxed) &&
                            pass_start - last_clock_ >= pending_clock_every_) ||
                           (stage_.orders_open->load(std::memory_order_relaxed) &&
                            pass_start - last_clock_ >= open_clock_every_);
    if (!has_chunks && !clock_due) {
      if (stopping_) break;  // everything published is drained
      BackOff(pass_start);   // idle: poll idle rings rarely
      continue;
    }
    ++result.passes;
    last_clock_ = pass_start;
    result.status = Persist();
    if (!result.status.ok()) break;
    drainer_.CommitPass();
    Hand();
    FreeJournal();
    if (stopping_) {
      if (records == 0 || ++final_passes > 1000) break;
      continue;
    }
    Pace(pass_start, records);
  }
  result.elapsed = Clock::now() - t0_;
  return result;
}

}  // namespace

DrainResult RunDrainLoop(const DrainStage& stage) { return DrainLoop(stage).Run(); }

}  // namespace ticktrace::collect
