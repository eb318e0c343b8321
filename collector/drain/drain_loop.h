// The drain stage of a live run (docs/collector.md, "The stages of the
// collector"): pass after pass over the session's rings, each pass made
// durable in the journal (group commit) before any ring's read index moves.
// The journal is the buffer between the drain and the analysis: after the
// commit the loop publishes the journal's durable end (DrainProgress) and
// goes on; the analysis thread reads the journal from the file at its own
// pace. The drain never waits for it, except when the journal reaches its
// cap (--journal-cap): then no read index moves until the analysis and its
// checkpoints have freed room, the rings hold the records, and their
// producers drop and count what does not fit. Without a journal (no store,
// or use_journal off) passes go through the in-memory PassQueue instead. It
// also puts the stream's clock, UTC anchors, the cores' skew measurements
// and the drainer's counters into the stream, and frees the journal before
// the last durable checkpoint. Runs on the calling thread.

#ifndef TICKTRACE_COLLECTOR_DRAIN_LOOP_H_
#define TICKTRACE_COLLECTOR_DRAIN_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "collector/app/options.h"
#include "collector/app/run_info.h"
#include "collector/drain/drain_progress.h"
#include "collector/drain/drainer.h"
#include "collector/drain/pass_queue.h"
#include "collector/sinks/store_sink.h"
#include "collector/stream/archive.h"
#include "collector/stream/journal.h"
#include "collector/time/core_skew.h"

namespace ticktrace::collect {

struct DrainStage {
  const CollectorOptions* options = nullptr;
  const RunInfo* info = nullptr;
  Drainer* drainer = nullptr;
  Journal* journal = nullptr;    // null: no journal (no store, or --no-journal)
  ArchiveWriter* raw = nullptr;  // null: no --raw copy
  StoreSink* sink = nullptr;     // null: no store (no checkpoints then)
  SkewMonitor* skew = nullptr;
  // With a journal: where each durable pass is announced to the analysis.
  DrainProgress* progress = nullptr;
  // Without a journal: the passes themselves go to the analysis through it.
  PassQueue* queue = nullptr;
  // Written by the analysis thread after each pass: whether idle passes must
  // still advance the stream clock (orders waiting for their clock ticks, or
  // open orders that may time out). Relaxed: hints; a stale value delays a
  // clock tick by one idle pass.
  const std::atomic<bool>* orders_pending = nullptr;
  const std::atomic<bool>* orders_open = nullptr;
  // Polled every pass: true once the run is told to end (a signal, or
  // options->stop); options->duration_s ends it too. The loop then drains
  // what is published and returns.
  std::function<bool()> stop_requested;
  // Called once when stopping begins (the store must not hold the exit).
  std::function<void()> on_stopping;
};

struct DrainResult {
  absl::Status status;  // not OK: a journal or raw append failed (the pass is not committed)
  uint64_t passes = 0;  // passes that carried chunks
  std::chrono::steady_clock::duration elapsed{};
};

// Drains until stage.stop_requested() or the duration, then until the rings are empty (at
// most 1000 more passes). Closes nothing: the caller closes the queue or the progress.
DrainResult RunDrainLoop(const DrainStage& stage);

// Full disk (docs/collector.md): an append of a drained pass failed with
// ResourceExhausted (`status`). The pass is kept and `append` tried again
// every 100 ms; meanwhile no ring's read index moves (the rings hold the
// records, or the producers drop and count them). Says on stderr once what is
// full, and when there is space again. Returns the first result that is not
// ResourceExhausted, or FailedPrecondition when stop_requested() while still
// full (what the journal holds stays for a restart, the rest stays in the
// rings). Drain thread.
absl::Status RetryWhileFull(absl::Status status, const std::function<absl::Status()>& append,
                            const std::function<bool()>& stop_requested);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_DRAIN_LOOP_H_
