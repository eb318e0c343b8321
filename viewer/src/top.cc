#include "ticktrace/view/top.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <time.h>

#include <cerrno>
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ticktrace/view/format_units.h"
#include "ticktrace/view/store_reader.h"
#include "ticktrace/view/summary.h"
#include "status_macros.h"

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

absl::Status RunTop(const std::string& store_uri, const TopOptions& options, std::ostream& out) {
  ScopedStopHandlers handlers;
  for (int64_t i = 0; !g_stop_requested; ++i) {
    if (options.iterations > 0 && i >= options.iterations) break;
    // Opened afresh for every frame: a snapshot sees the latest commit, a
    // collector that starts (or a run that begins) later is picked up, and
    // a store nobody writes gets no -wal/-shm files (OpenMode::kSnapshot).
    TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<StoreReader> store, StoreReader::Open(store_uri));
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
    std::string frame = options.clear_screen ? "\x1b[H\x1b[2J" : (i > 0 ? "\n" : "");
    absl::StrAppend(&frame, "ticktrace-view top  ", store->path(), "  ",
                    FormatUtcNs(absl::GetCurrentTimeNanos()), "  (Ctrl-C to quit)\n");
    absl::StatusOr<Summary> summary = BuildSummary(*store, options.query);
    if (summary.ok()) {
      absl::StrAppend(&frame, RenderSummaryText(*summary));
    } else if (absl::IsUnavailable(summary.status()) ||
               (absl::IsNotFound(summary.status()) && !options.query.run_id.has_value() &&
                !options.query.stage.has_value() && !options.query.process.has_value())) {
      // The store is busy, or no run has started yet: wait for the collector.
      absl::StrAppend(&frame, "waiting: ", summary.status().message(), "\n");
    } else {
      return summary.status();
    }
    out << frame << std::flush;
    if (options.iterations > 0 && i + 1 >= options.iterations) break;
    SleepUnlessStopped(options.interval_ms);
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::view
