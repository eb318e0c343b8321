// The time syntax of --since and --until.
//
//   2026-11-30T08:00:00Z, 2026-11-30T08:00:00.5+01:00   RFC 3339: an absolute time
//   -5m, -1h30m, -250ms                                   before the end of the run
//   +30s, +2m                                             after the start of the run
//
// Units: ns, us, ms, s, m, h (absl::ParseDuration). "The end of the run" is
// runs.ended_utc_ns, or for a run still being written the latest sample's
// start time (or the start of the run when it has no sample yet).
#ifndef TICKTRACE_VIEW_TIME_ARG_H_
#define TICKTRACE_VIEW_TIME_ARG_H_

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace ticktrace::view {

// A parsed --since/--until value, not yet tied to a run.
struct TimeArg {
  enum class Anchor { kAbsolute, kRunStart, kRunEnd };
  Anchor anchor = Anchor::kAbsolute;
  int64_t ns = 0;  // kAbsolute: UTC ns since the epoch; otherwise an offset
};

// Parses `text`; InvalidArgument naming `flag` (e.g. "--since") when it is
// neither RFC 3339 nor a signed duration.
absl::StatusOr<TimeArg> ParseTimeArg(absl::string_view flag, absl::string_view text);

// The UTC ns that `arg` names within a run spanning [start, end].
int64_t ResolveTimeArg(const TimeArg& arg, int64_t run_start_utc_ns, int64_t run_end_utc_ns);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_TIME_ARG_H_
