#include "viewer/cli/time_arg.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/duration.h"

namespace ticktrace::view {

absl::StatusOr<TimeArg> ParseTimeArg(absl::string_view flag, absl::string_view text) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": bad time '", text, "' (", why,
        "; expected RFC 3339 like 2026-11-30T08:00:00Z, or -5m / +30s relative to the run)"));
  };
  if (text.empty()) return bad("empty");
  TimeArg arg;
  if (text.front() == '+' || text.front() == '-') {
    const absl::StatusOr<int64_t> offset_ns =
        ParseDurationNs(flag, text.substr(1), {.allow_zero = true});
    if (!offset_ns.ok()) return bad("not a duration: units ns, us, ms, s, m, h, d");
    arg.anchor = text.front() == '+' ? TimeArg::Anchor::kRunStart : TimeArg::Anchor::kRunEnd;
    arg.ns = text.front() == '-' ? -*offset_ns : *offset_ns;
    return arg;
  }
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &error)) {
    return bad(error);
  }
  arg.anchor = TimeArg::Anchor::kAbsolute;
  arg.ns = absl::ToUnixNanos(t);
  return arg;
}

int64_t ResolveTimeArg(const TimeArg& arg, int64_t first_utc_ns, int64_t last_utc_ns) {
  switch (arg.anchor) {
    case TimeArg::Anchor::kRunStart:
      return first_utc_ns + arg.ns;
    case TimeArg::Anchor::kRunEnd:
      return last_utc_ns + arg.ns;
    case TimeArg::Anchor::kAbsolute:
      break;
  }
  return arg.ns;
}

}  // namespace ticktrace::view
