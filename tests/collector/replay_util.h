// Test-only: replays an ArchiveBuilder's archive through the real collector
// (RunCollector), so a test states only its input, its options and its checks.

#ifndef TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_
#define TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_

#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "collector/app/collector.h"
#include "tests/collector/archive_builder.h"

namespace ticktrace::collect::testing {

struct Replayed {
  absl::Status status;
  RunSummary summary;
  std::string log;  // what the collector printed
};

// Writes `b` to `dir`/in.raw and replays it with `o` (its replay_path, out and
// handle_signals are set here; store_uri is kept: unset for no store).
inline Replayed ReplayArchive(const ArchiveBuilder& b, const TempDir& dir, CollectorOptions o) {
  const std::string raw = dir.File("in.raw");
  b.Write(raw);
  o.replay_path = raw;
  std::ostringstream log;
  o.out = &log;
  o.handle_signals = false;
  Replayed r;
  r.status = RunCollector(o, &r.summary);
  r.log = log.str();
  return r;
}

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_REPLAY_UTIL_H_
