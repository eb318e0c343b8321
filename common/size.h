// One size syntax for every flag that takes bytes (the collector's
// --retain-detail, --journal-cap, --max-segment-bytes), and one way to print
// a size back:
//
//   500MB  2GB  1TB        decimal units (KB, MB, GB, TB: powers of 1000)
//   512MiB  2GiB           binary units (KiB, MiB, GiB, TiB: powers of 1024)
//
// A whole number and a unit; no fractions, no sign, no bare number (a flag
// that also takes plain bytes parses those itself).

#ifndef TICKTRACE_COMMON_SIZE_H_
#define TICKTRACE_COMMON_SIZE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace ticktrace {

// "500MB" -> 500000000, "1GiB" -> 1073741824; nullopt when `text` is not a
// positive whole number followed by one of the units above, or is beyond
// 1 PiB.
std::optional<uint64_t> ParseSizeBytes(absl::string_view text);

// Three significant digits in decimal units: "812 B", "53.2 kB", "1.60 GB",
// "12.3 TB".
std::string FormatBytes(double bytes);

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_SIZE_H_
