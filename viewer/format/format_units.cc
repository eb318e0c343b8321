#include "viewer/format/format_units.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::view {
namespace {

// `value` with three significant digits (value >= 0).
std::string ThreeDigits(double value) {
  if (value < 9.995) return absl::StrFormat("%.2f", value);
  if (value < 99.95) return absl::StrFormat("%.1f", value);
  return absl::StrFormat("%.0f", value);
}

}  // namespace

std::string FormatDurationNs(double ns) {
  if (std::isnan(ns)) return "nan";
  const char* sign = ns < 0 ? "-" : "";
  const double a = std::fabs(ns);
  // Thresholds sit where ThreeDigits would round up to 1000 of the unit.
  if (a < 999.5) return absl::StrCat(sign, ThreeDigits(a), " ns");
  if (a < 999.5e3) return absl::StrCat(sign, ThreeDigits(a / 1e3), " µs");
  if (a < 999.5e6) return absl::StrCat(sign, ThreeDigits(a / 1e6), " ms");
  return absl::StrCat(sign, ThreeDigits(a / 1e9), " s");
}

std::string FormatDurationNs(std::optional<double> ns) {
  return ns.has_value() ? FormatDurationNs(*ns) : "-";
}

std::string FormatHz(double hz) {
  if (hz >= 1e9) return absl::StrFormat("%.4f GHz", hz / 1e9);
  if (hz >= 1e6) return absl::StrFormat("%.3f MHz", hz / 1e6);
  return absl::StrFormat("%.0f Hz", hz);
}

std::string FormatUtcNs(int64_t utc_ns) {
  const absl::Time t = absl::FromUnixNanos(utc_ns);
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", t, absl::UTCTimeZone());
}

std::string FormatOrderId(int64_t order_id) {
  return absl::StrCat(static_cast<uint64_t>(order_id));
}

std::string FlagLetters(uint32_t flags) {
  std::string out;
  if (flags & store::kFlagMigrated) out += 'M';
  if (flags & store::kFlagNegative) out += 'N';
  if (flags & store::kFlagCrossCore) out += 'X';
  if (flags & store::kFlagSaturated) out += 'S';
  if (flags & store::kFlagSkew) out += 'K';
  if (flags & store::kFlagOutOfOrder) out += 'O';
  if (flags & store::kFlagLate) out += 'L';
  if (flags & store::kFlagExternal) out += 'E';
  return out;
}

std::string FlagWords(uint32_t flags) {
  std::vector<const char*> words;
  if (flags & store::kFlagMigrated) words.push_back("migrated");
  if (flags & store::kFlagNegative) words.push_back("negative");
  if (flags & store::kFlagCrossCore) words.push_back("cross_core");
  if (flags & store::kFlagSaturated) words.push_back("saturated");
  if (flags & store::kFlagSkew) words.push_back("skew");
  if (flags & store::kFlagOutOfOrder) words.push_back("out_of_order");
  if (flags & store::kFlagLate) words.push_back("late");
  if (flags & store::kFlagExternal) words.push_back("external");
  return absl::StrJoin(words, ",");
}

}  // namespace ticktrace::view
