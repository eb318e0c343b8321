#include "viewer/views/top.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <csignal>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "viewer/format/format_units.h"
#include "ticktrace/store/open.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"
#include "common/status_macros.h"
#include "viewer/views/top_frame.h"

namespace ticktrace::view {
namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

void OnStopSignal(int) { g_stop_requested = 1; }

// Installs OnStopSignal for SIGINT and SIGTERM (without SA_RESTART, so a
// sleep ends early) and puts the old handlers back on destruction.
class ScopedStopHandlers {
 public:
  ScopedStopHandlers() {
    g_stop_requested = 0;
    struct sigaction action = {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~ScopedStopHandlers() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  ScopedStopHandlers(const ScopedStopHandlers&) = delete;
  ScopedStopHandlers& operator=(const ScopedStopHandlers&) = delete;

 private:
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
};

// Sleeps `ms` milliseconds or until a stop signal arrives.
void SleepUnlessStopped(int64_t ms) {
  struct timespec remaining = {static_cast<time_t>(ms / 1000),
                               static_cast<long>((ms % 1000) * 1000000)};
  while (!g_stop_requested && nanosleep(&remaining, &remaining) != 0 && errno == EINTR) {
  }
}

}  // namespace

namespace {

// The counters the rates come from, as of one frame.
struct RateSample {
  int64_t run_id = 0;
  int64_t at_ns = 0;
  int64_t drained = 0;
  int64_t orders = 0;
};

// The frame's other half beside the whole run: the latest interval with
// samples (its start from the run's last sample) and the rates since the
// previous frame (`previous`, updated), or since the run began.
absl::StatusOr<internal::TopFrame> ReadTopFrame(store::StoreReader& store, Summary whole,
                                                const QueryOptions& query,
                                                std::optional<RateSample>* previous) {
  internal::TopFrame frame;
  const store::RunRow run = whole.run;
  frame.interval_ns = run.interval_ns;
  if (run.interval_ns > 0) {
    TICKTRACE_ASSIGN_OR_RETURN(auto span, store.SampleSpanUtcNs(run.run_id));
    if (span.has_value()) {
      const int64_t start = span->second - span->second % run.interval_ns;
      frame.last_start_utc_ns = start;
      TICKTRACE_ASSIGN_OR_RETURN(frame.last,
                                 store.Intervals(run.run_id, query.stage,
                                                 store::TimeWindow{start, start + run.interval_ns},
                                                 run.interval_ns));
    }
  }
  RateSample now;
  now.run_id = run.run_id;
  now.at_ns = absl::GetCurrentTimeNanos();
  now.drained = CounterValue(whole, "drained");
  now.orders = CounterValue(whole, "orders_complete") + CounterValue(whole, "orders_incomplete");
  RateSample before;
  if (previous->has_value() && (*previous)->run_id == run.run_id) {
    before = **previous;
  } else {  // the first frame of a run: since it began (or until it ended)
    before.at_ns = run.started_utc_ns;
    now.at_ns = std::min(now.at_ns, run.ended_utc_ns.value_or(now.at_ns));
  }
  const double seconds = static_cast<double>(now.at_ns - before.at_ns) / 1e9;
  // No rate without a start (a store that does not say when the run began).
  if (seconds > 0 && before.at_ns > 0) {
    frame.records_per_s = static_cast<double>(now.drained - before.drained) / seconds;
    frame.orders_per_s = static_cast<double>(now.orders - before.orders) / seconds;
    frame.rate_over_s = seconds;
  }
  now.at_ns = absl::GetCurrentTimeNanos();
  *previous = now;
  frame.whole = std::move(whole);
  return frame;
}

}  // namespace

absl::Status RunTop(const store::StoreUri& store_uri, const TopOptions& options, std::ostream& out) {
  ScopedStopHandlers handlers;
  std::optional<RateSample> previous;
  for (int64_t i = 0; !g_stop_requested; ++i) {
    if (options.iterations > 0 && i >= options.iterations) break;
    // Opened afresh for every frame: a snapshot sees the latest commit, a
    // collector that starts (or a run that begins) later is picked up, and
    // a store nobody writes gets no -wal/-shm files (store::OpenMode::kSnapshot).
    absl::StatusOr<std::unique_ptr<store::StoreReader>> opened = store::OpenReader(store_uri);
    if (absl::IsNotFound(opened.status()) || absl::IsUnavailable(opened.status()) ||
        absl::IsFailedPrecondition(opened.status())) {
      // No store yet (the collector creates it), or busy: wait for it.
      const std::string waiting =
          absl::StrCat("waiting for the store to appear: ", opened.status().message());
      if (options.json) {
        out << nlohmann::ordered_json{{"time_utc_ns", absl::GetCurrentTimeNanos()},
                                      {"waiting", waiting}}
                   .dump()
            << "\n";
      } else {
        out << (options.clear_screen ? "\x1b[H\x1b[2J" : (i > 0 ? "\n" : ""))
            << internal::FitToWidth(
                   absl::StrCat("ticktrace-view top  ", FormatUtcNs(absl::GetCurrentTimeNanos()),
                                "  (Ctrl-C to quit)\n", waiting, "\n"),
                   internal::TerminalColumns());
      }
      out << std::flush;
      if (options.iterations > 0 && i + 1 >= options.iterations) break;
      SleepUnlessStopped(options.interval_ms);
      continue;
    }
    if (!opened.ok()) return opened.status();
    std::unique_ptr<store::StoreReader> store = std::move(*opened);
    if (options.json) {
      // One object per frame and line: {"time_utc_ns", "summary"} or {"time_utc_ns", "waiting"}.
      nlohmann::ordered_json frame{{"time_utc_ns", absl::GetCurrentTimeNanos()}};
      absl::StatusOr<Summary> summary = BuildSummary(*store, options.query);
      if (summary.ok()) {
        frame["summary"] = nlohmann::ordered_json::parse(RenderSummaryJson(*summary));
      } else if (absl::IsUnavailable(summary.status()) ||
                 (absl::IsNotFound(summary.status()) && !options.query.run_id.has_value() &&
                  !options.query.stage.has_value() && !options.query.process.has_value())) {
        frame["waiting"] = std::string(summary.status().message());
      } else {
        return summary.status();
      }
      out << frame.dump() << "\n" << std::flush;
      if (options.iterations > 0 && i + 1 >= options.iterations) break;
      SleepUnlessStopped(options.interval_ms);
      continue;
    }
    const int width = internal::TerminalColumns();
    std::string frame = options.clear_screen ? "\x1b[H\x1b[2J" : (i > 0 ? "\n" : "");
    absl::StrAppend(&frame, internal::FitToWidth(
                                absl::StrCat("ticktrace-view top  ", store->path(), "  ",
                                             FormatUtcNs(absl::GetCurrentTimeNanos()),
                                             "  (Ctrl-C to quit)\n"),
                                width));
    absl::StatusOr<Summary> summary = BuildSummary(*store, options.query);
    const absl::StatusOr<internal::TopFrame> top =
        summary.ok() ? ReadTopFrame(*store, std::move(*summary), options.query, &previous)
                     : absl::StatusOr<internal::TopFrame>(summary.status());
    if (top.ok()) {
      absl::StrAppend(&frame, internal::RenderTopFrame(*top, width));
    } else if (absl::IsUnavailable(top.status()) || absl::IsFailedPrecondition(top.status()) ||
               (absl::IsNotFound(top.status()) && !options.query.run_id.has_value() &&
                !options.query.stage.has_value() && !options.query.process.has_value())) {
      // The store is busy or still being created, or no run has started
      // yet: wait for the collector.
      absl::StrAppend(&frame, internal::FitToWidth(
                                  absl::StrCat("waiting: ", top.status().message(), "\n"), width));
    } else {
      return top.status();
    }
    out << frame << std::flush;
    if (options.iterations > 0 && i + 1 >= options.iterations) break;
    SleepUnlessStopped(options.interval_ms);
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::view
