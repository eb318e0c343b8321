#include "common/duration.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ticktrace {
namespace {

struct Unit {
  const char* suffix;
  int64_t ns;
};
// Two-letter units first, so that "ms" is not read as "m" followed by "s".
constexpr Unit kUnits[] = {{"ns", 1},
                           {"us", 1'000},
                           {"ms", 1'000'000},
                           {"s", 1'000'000'000},
                           {"m", 60'000'000'000},
                           {"h", 3'600'000'000'000},
                           {"d", 86'400'000'000'000}};

// Reads a decimal number ("12", "1.5", ".5") from the front of `*text`.
bool ConsumeNumber(absl::string_view* text, long double* value) {
  size_t i = 0, digits = 0;
  long double v = 0, scale = 1;
  bool fraction = false;
  for (; i < text->size(); ++i) {
    const char c = (*text)[i];
    if (c == '.' && !fraction) {
      fraction = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      ++digits;
      if (fraction) {
        scale /= 10;
        v += (c - '0') * scale;
      } else {
        v = v * 10 + (c - '0');
      }
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  text->remove_prefix(i);
  *value = v;
  return true;
}

// The unit at the front of `text`, or null.
const Unit* UnitAt(absl::string_view text) {
  for (const Unit& u : kUnits) {
    if (absl::StartsWith(text, u.suffix)) return &u;
  }
  return nullptr;
}

// The terms of `text` added up, in ns; false when it is not a duration.
bool SumTerms(absl::string_view text, DurationRules rules, long double* total_ns) {
  long double total = 0;
  absl::string_view rest = text;
  for (bool first = true; !rest.empty(); first = false) {
    long double value = 0;
    if (!ConsumeNumber(&rest, &value)) return false;
    const Unit* unit = UnitAt(rest);
    if (unit == nullptr) {
      // A number alone, the whole text: "0", or seconds where the flag says so.
      if (!first || !rest.empty() || (value != 0 && !rules.bare_number_is_seconds)) return false;
      *total_ns = value * 1e9L;
      return true;
    }
    rest.remove_prefix(std::char_traits<char>::length(unit->suffix));
    total += value * static_cast<long double>(unit->ns);
  }
  *total_ns = total;
  return true;
}

}  // namespace

absl::StatusOr<int64_t> ParseDurationNs(absl::string_view flag, absl::string_view text,
                                        DurationRules rules) {
  long double ns = 0;
  const bool parsed = !text.empty() && SumTerms(text, rules, &ns);
  if (!parsed || ns >= static_cast<long double>(std::numeric_limits<int64_t>::max()) ||
      (ns == 0 && !rules.allow_zero)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": expected a ", rules.allow_zero ? "" : "positive ",
        "duration like 500ms, 30s, 10m, 8h or 7d (units ns, us, ms, s, m, h, d",
        rules.bare_number_is_seconds ? "; a bare number is seconds" : "", "), got '", text,
        "'"));
  }
  return static_cast<int64_t>(ns + 0.5L);
}

}  // namespace ticktrace
