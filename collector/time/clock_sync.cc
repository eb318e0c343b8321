// ClockSync (clock_sync.h): the host's clock-sync error bound.

#include "collector/time/clock_sync.h"

#include <stdio.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace ticktrace::collect {
namespace {

// The value after "Key :" on the line of `text` that starts with `key`.
std::optional<std::string> ChronyField(std::string_view text, std::string_view key) {
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    if (!absl::StartsWith(line, absl::string_view(key.data(), key.size()))) continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) return std::nullopt;
    return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return std::nullopt;
}

// The first number of `value` ("0.000012 seconds fast of NTP time").
std::optional<double> LeadingSeconds(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  const std::vector<absl::string_view> words = absl::StrSplit(*value, ' ', absl::SkipEmpty());
  double v = 0;
  if (words.empty() || !absl::SimpleAtod(words[0], &v) || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Runs `command` (a fixed string of ours) and returns its stdout, or nullopt
// when the program is not installed or fails.
std::optional<std::string> Output(const std::vector<const char*>& programs, const char* args) {
  const char* program = nullptr;
  for (const char* p : programs) {
    if (::access(p, X_OK) == 0) {
      program = p;
      break;
    }
  }
  if (program == nullptr) return std::nullopt;
  const std::string command = absl::StrCat("timeout 2 ", program, " ", args, " 2>/dev/null");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0 || out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<double> ParseChronyTracking(std::string_view text) {
  const std::optional<std::string> leap = ChronyField(text, "Leap status");
  if (!leap || !absl::StartsWith(*leap, "Normal")) return std::nullopt;
  const std::optional<double> offset = LeadingSeconds(ChronyField(text, "System time"));
  const std::optional<double> delay = LeadingSeconds(ChronyField(text, "Root delay"));
  const std::optional<double> dispersion = LeadingSeconds(ChronyField(text, "Root dispersion"));
  if (!offset || !delay || !dispersion) return std::nullopt;
  return (std::fabs(*offset) + *dispersion + *delay / 2) * 1e9;
}

std::optional<double> ParsePmcTimeStatus(std::string_view text) {
  std::optional<double> offset;
  bool gm_present = false;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    const std::vector<absl::string_view> words = absl::StrSplit(line, absl::ByAnyChar(" \t"),
                                                               absl::SkipEmpty());
    if (words.size() < 2) continue;
    if (words[0] == "master_offset") {
      double v = 0;
      if (absl::SimpleAtod(words[1], &v) && std::isfinite(v)) offset = std::fabs(v);
    }
    if (words[0] == "gmPresent") gm_present = words[1] == "true";
  }
  if (!gm_present) return std::nullopt;
  return offset;
}

ClockSync ReadClockSync(std::optional<double> flag_error_ns, bool ask_daemons) {
  ClockSync s;
  if (!ask_daemons) {
  } else if (std::optional<std::string> t =
          Output({"/usr/bin/chronyc", "/usr/sbin/chronyc", "/bin/chronyc"}, "-n tracking")) {
    if (std::optional<double> bound = ParseChronyTracking(*t)) {
      s.source = "chrony";
      s.error_ns = *bound;
      s.detail = absl::StrFormat("clock sync: chrony, error bound %.0f ns", *bound);
      return s;
    }
  }
  if (!ask_daemons) {
  } else if (std::optional<std::string> t = Output({"/usr/sbin/pmc", "/usr/bin/pmc"},
                                            "-u -b 0 'GET TIME_STATUS_NP'")) {
    if (std::optional<double> bound = ParsePmcTimeStatus(*t)) {
      s.source = "ptp";
      s.error_ns = *bound;
      s.detail = absl::StrFormat("clock sync: ptp4l, PHC offset %.0f ns (phc2sys not included)",
                                 *bound);
      return s;
    }
  }
  if (flag_error_ns) {
    s.source = "flag";
    s.error_ns = *flag_error_ns;
    s.detail = absl::StrFormat("clock sync: --clock-error-ns %.0f", *flag_error_ns);
    return s;
  }
  s.detail =
      "clock sync: unknown (no synchronised chrony or ptp4l, no --clock-error-ns): cross-host "
      "stages carry no uncertainty";
  return s;
}

}  // namespace ticktrace::collect
