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

DrainResult RunDrainLoop(const DrainStage& stage) {
  const CollectorOptions& o = *stage.options;
  const RunInfo& info = *stage.info;
  Drainer& drainer = *stage.drainer;
  Journal* const journal = stage.journal;
  ArchiveWriter* const raw = stage.raw;
  StoreSink* const sink = stage.sink;
  DrainResult result;

  auto last_anchor = Clock::now();
  const auto t0 = Clock::now();
  const auto deadline = o.duration_s > 0 ? t0 + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(o.duration_s))
                                         : Clock::time_point::max();
  // Idle passes advance the clock (for completions and timeouts) at most this often.
  // With a journal every pass is an fdatasync: passes are spaced by the
  // group-commit window (options.h, sync_window) unless a ring is filling.
  const auto pending_clock_every =
      journal != nullptr
          ? std::max<std::chrono::milliseconds>(std::chrono::milliseconds(1), o.sync_window)
          : std::chrono::milliseconds(1);
  const auto busy_pass_every =
      journal != nullptr ? std::max<std::chrono::microseconds>(o.min_pass_interval, o.sync_window)
                         : std::chrono::microseconds(o.min_pass_interval);
  auto last_checkpoint_mark = Clock::now();
  DrainerCounters counters_in_stream = drainer.counters();
  uint64_t marked_offset = 0;  // the last checkpoint asked for
  bool freeing_works = true;   // false once the file system refused to punch a hole
  const auto open_clock_every =
      std::chrono::milliseconds(std::clamp<int64_t>(info.order_timeout_ms / 8, 1, 100));
  auto last_clock = t0;
  std::chrono::microseconds idle_sleep{0};
  // Deep idle: after 1 s without a record the back-off may reach 4 x
  // max_idle_sleep (4 ms: ~250 wake-ups/s instead of ~700, under 1% of a core
  // idle; a 64 Ki-record ring still holds 16 ms at 4 M records/s).
  auto last_records_at = Clock::now();
  auto idle_bound = [&](Clock::time_point now) {
    return now - last_records_at >= std::chrono::seconds(1) ? 4 * o.max_idle_sleep
                                                            : o.max_idle_sleep;
  };
  auto back_off = [&](Clock::time_point now) {
    idle_sleep = std::min<std::chrono::microseconds>(
        idle_bound(now),
        std::max<std::chrono::microseconds>(std::chrono::microseconds(10), idle_sleep * 2));
    std::this_thread::sleep_for(idle_sleep);
  };
  bool stopping = false;
  int final_passes = 0;
  std::string buf;
  absl::Status& status = result.status;
  while (true) {
    const auto pass_start = Clock::now();
    bool discover = false;
    if (!stopping && (stage.stop_requested() || pass_start >= deadline)) {
      stopping = true;
      discover = true;  // catch segments that appeared since the last look
      if (stage.on_stopping) stage.on_stopping();
    }
    buf.clear();
    ChunkEncoder::Clock(ReadTsc(), &buf);
    const size_t clock_bytes = buf.size();
    // A UTC anchor every anchor interval (about 100 ns: two clock reads), and
    // the skew thread's measurements, as run info updates in the stream.
    if (pass_start - last_anchor >= o.anchor_interval) {
      RunInfoUpdate anchor;
      ReadTscRealtimeAnchor(&anchor.anchor.tsc, &anchor.anchor.utc_ns);
      anchor.anchor.utc_ns += o.test_clock_offset_ns;  // tests only (options.h)
      ChunkEncoder::RunInfo(anchor.ToJson(), &buf);
      last_anchor = pass_start;
    }
    if (stage.skew != nullptr) stage.skew->TakeChunks(&buf);
    const size_t records = drainer.Pass(discover, &buf);
    if (!(drainer.counters() == counters_in_stream)) {
      // The drainer's counters go into the stream (journaled, checkpointed):
      // a restart continues them (DrainerSeed).
      RunInfoUpdate u;
      u.kind = RunInfoUpdate::Kind::kCounters;
      u.counters = drainer.counters().Named();
      ChunkEncoder::RunInfo(u.ToJson(), &buf);
      counters_in_stream = drainer.counters();
    }
    const bool has_chunks = buf.size() > clock_bytes;
    const bool clock_due = (stage.orders_pending->load(std::memory_order_relaxed) &&
                            pass_start - last_clock >= pending_clock_every) ||
                           (stage.orders_open->load(std::memory_order_relaxed) &&
                            pass_start - last_clock >= open_clock_every);
    if (!has_chunks && !clock_due) {
      if (stopping) break;   // everything published is drained
      back_off(pass_start);  // idle: poll idle rings rarely
      continue;
    }
    ++result.passes;
    last_clock = pass_start;
    // Durable first (journal), then the rings may reuse the cells, then analyse.
    if (journal != nullptr) {
      status = journal->AppendDurable(buf);
      if (absl::IsResourceExhausted(status)) {  // full disk: the same pass again until it fits
        status = RetryWhileFull(
            status, [&] { return journal->AppendDurable(buf); }, stage.stop_requested);
      }
      if (!status.ok()) break;
    }
    if (raw != nullptr) {
      status = raw->Append(buf);
      if (absl::IsResourceExhausted(status)) {
        status = RetryWhileFull(
            status, [&] { return raw->Append(buf); }, stage.stop_requested);
      }
      if (!status.ok()) break;
    }
    drainer.CommitPass();
    PassQueue::Item item;
    item.bytes.swap(buf);
    item.drainer = drainer.counters();
    item.journal_syncs = journal != nullptr ? journal->syncs() : 0;
    if (journal != nullptr && sink != nullptr && o.checkpoint_interval.count() > 0 &&
        raw == nullptr && !stopping && pass_start - last_checkpoint_mark >= o.checkpoint_interval &&
        sink->durable_checkpoint_offset() >= marked_offset) {
      // One checkpoint at a time: the next is asked for once the last is written.
      item.checkpoint_offset = marked_offset = journal->bytes();
      last_checkpoint_mark = pass_start;
    }
    if (journal != nullptr && sink != nullptr && freeing_works &&
        sink->durable_checkpoint_offset() > journal->freed_before()) {
      absl::Status freed = journal->FreeBefore(sink->durable_checkpoint_offset());
      if (!freed.ok()) {
        freeing_works = false;
        std::cerr << "ticktrace-collector: " << freed.message()
                  << "; the journal keeps everything until the run ends\n"
                  << std::flush;
      }
    }
    stage.queue->Push(std::move(item));  // waits while the analysis is far behind
    if (stopping) {
      if (records == 0 || ++final_passes > 1000) break;
      continue;
    }
    if (records > 0) {
      idle_sleep = std::chrono::microseconds(0);
      last_records_at = pass_start;
      // Busy: still read each ring's index no more often than min_pass_interval.
      const auto next = pass_start + (drainer.max_fill() >= o.sync_sooner_fill
                                          ? std::chrono::microseconds(o.min_pass_interval)
                                          : busy_pass_every);
      if (Clock::now() < next) std::this_thread::sleep_until(next);
    } else {
      back_off(pass_start);
    }
  }
  result.elapsed = Clock::now() - t0;
  return result;
}

}  // namespace ticktrace::collect
