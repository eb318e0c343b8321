// The time syntax of --since and --until.
//
//   2026-11-30T08:00:00Z, 2026-11-30T08:00:00.5+01:00   RFC 3339: an absolute time
//   -5m, -1h30m, -250ms, -1d                              before the run's last sample
//   +30s, +2m                                             after the run's first sample
//
// A relative time is a sign and a duration in every program's syntax
// (common/duration.h: units ns, us, ms, s, m, h, d). Relative times count
// from the run's data (the earliest and latest samples.start_utc_ns), not
// from runs.started/ended_utc_ns, which for a replayed run are the replay's
// wall-clock times; for a run with no sample yet, from its start (and end).
#ifndef TICKTRACE_VIEW_TIME_ARG_H_
#define TICKTRACE_VIEW_TIME_ARG_H_

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace ticktrace::view {

// A parsed --since/--until value, not yet tied to a run.
struct TimeArg {
  // kRunStart: the run's first sample; kRunEnd: its last sample.
  enum class Anchor { kAbsolute, kRunStart, kRunEnd };
  Anchor anchor = Anchor::kAbsolute;
  int64_t ns = 0;  // kAbsolute: UTC ns since the epoch; otherwise an offset
};

// Parses `text`; InvalidArgument naming `flag` (e.g. "--since") when it is
// neither RFC 3339 nor a signed duration.
absl::StatusOr<TimeArg> ParseTimeArg(absl::string_view flag, absl::string_view text);

// The UTC ns that `arg` names for a run whose data spans [first, last].
int64_t ResolveTimeArg(const TimeArg& arg, int64_t first_utc_ns, int64_t last_utc_ns);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_TIME_ARG_H_
