#include "common/size.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace ticktrace {

std::optional<uint64_t> ParseSizeBytes(absl::string_view text) {
  static constexpr std::pair<const char*, uint64_t> kUnits[] = {
      {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
      {"KB", 1000ull},     {"MB", 1000000ull},  {"GB", 1000000000ull}, {"TB", 1000000000000ull}};
  constexpr uint64_t kMax = uint64_t{1} << 50;
  for (const auto& [suffix, unit] : kUnits) {
    if (!absl::EndsWith(text, suffix)) continue;
    const absl::string_view number = text.substr(0, text.size() - absl::string_view(suffix).size());
    // SimpleAtoi takes a sign and spaces; a size is digits only.
    if (number.empty() || number.find_first_not_of("0123456789") != absl::string_view::npos) {
      return std::nullopt;
    }
    uint64_t v = 0;
    if (!absl::SimpleAtoi(number, &v) || v == 0 || v > kMax / unit) return std::nullopt;
    return v * unit;
  }
  return std::nullopt;
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  size_t u = 0;
  double v = bytes;
  while (std::fabs(v) >= 999.5 && u + 1 < std::size(kUnits)) {
    v /= 1000;
    ++u;
  }
  if (u == 0) return absl::StrFormat("%.0f B", v);
  const int decimals = std::fabs(v) >= 99.95 ? 0 : std::fabs(v) >= 9.995 ? 1 : 2;
  return absl::StrFormat("%.*f %s", decimals, v, kUnits[u]);
}

}  // namespace ticktrace
