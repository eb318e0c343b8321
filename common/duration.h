// One duration syntax for every program's flags (the collector's --retain,
// --checkpoint-interval, --skew-interval; the viewer's --every,
// --stitch-window and the relative --since/--until; the examples'):
//
//   500ms  30s  10m  8h  7d      a number and a unit
//   1h30m  1.5s  250us  100ns    fractions, and terms added up
//
// Units: ns, us, ms, s, m, h, d (a day is 86400 s: no calendar, no leap
// seconds). No sign: a caller that takes one (--since -5m) strips it first.
// A bare number has no unit and is refused, except "0" where zero is allowed
// and where a flag documents a bare number as seconds (rules below).

#ifndef TICKTRACE_COMMON_DURATION_H_
#define TICKTRACE_COMMON_DURATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ticktrace {

// What a flag accepts besides a positive duration with units.
struct DurationRules {
  bool allow_zero = false;              // "0", "0s": zero (e.g. "at start only", "never")
  bool bare_number_is_seconds = false;  // "600": 600 s (flags documented as SECONDS)
};

// Parses `text` into nanoseconds. InvalidArgument, one line naming `flag`
// (e.g. "--retain") and the accepted units, for anything else, and for a
// duration beyond what int64 nanoseconds hold (about 292 years).
absl::StatusOr<int64_t> ParseDurationNs(absl::string_view flag, absl::string_view text,
                                        DurationRules rules = {});

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_DURATION_H_
