// Human-readable units for the viewer's text output.
#ifndef TICKTRACE_VIEW_FORMAT_UNITS_H_
#define TICKTRACE_VIEW_FORMAT_UNITS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace ticktrace::view {

// A latency with the unit chosen for its size and three significant digits:
// "83.3 ns", "1.24 µs", "12.0 ms", "2.50 s". Negative values keep their sign.
std::string FormatDurationNs(double ns);
// FormatDurationNs, or "-" when unset.
std::string FormatDurationNs(std::optional<double> ns);
// A frequency: "2.9952 GHz", "24.000 MHz".
std::string FormatHz(double hz);
// UTC nanoseconds since the epoch as RFC 3339 with nanoseconds:
// "2026-11-30T08:00:01.123456789Z".
std::string FormatUtcNs(int64_t utc_ns);
// An order ID as the traced program used it: unsigned 64-bit (the store keeps
// IDs of 2^63 and above as negative INTEGERs).
std::string FormatOrderId(int64_t order_id);
// Flag bits (ticktrace/store/flags.h) as a short mark: "" for none, else letters from
// "M" migrated, "N" negative, "X" cross-core, "E" external (a time read by
// another clock), e.g. "NX".
std::string FlagLetters(uint32_t flags);
// Flag bits as words: "migrated,negative,cross_core" ("" for none).
std::string FlagWords(uint32_t flags);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_FORMAT_UNITS_H_
