// ticktrace-collector's command line: its flag table on the one flag parser
// (common/flags.h: grammar, help layout, error wording) and the conversion
// of what was typed into CollectorOptions. Durations take the one syntax of
// every program (common/duration.h: 500ms, 90s, 10m, 8h, 7d).
//
// To add a flag: a field in CollectorFlags, one row in kFlagTable in
// command_line.cc (dashes in its name), and its conversion in
// OptionsFromFlags.

#ifndef TICKTRACE_COLLECTOR_COMMAND_LINE_H_
#define TICKTRACE_COLLECTOR_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collector/app/options.h"

namespace ticktrace::collect {

inline constexpr char kCollectorProgram[] = "ticktrace-collector";

// The flags as typed; values are strings so that every bad value gets the
// one wording and exit 2. Defaults are the ones --help shows.
struct CollectorFlags {
  std::string session;
  std::string db = "ticktrace.db";
  std::string store;
  std::string pipeline;
  std::string order_timeout_ms = "1000";
  std::string duration_s = "0";
  std::string raw;
  std::string replay;
  std::string tsc_hz;
  std::string host_name;
  std::string clock_error_ns;
  std::string exchange_clock_error_ns;
  std::string test_clock_offset_ns;
  bool include_flagged = false;
  bool correct_skew = false;
  std::string skew_interval = "600";
  std::string skew_cores = "allowed";
  std::string allow_uid;
  std::string max_segment_bytes = "64GiB";  // as kDefaultMaxSegmentBytes
  bool group_readable = false;
  bool group_writable_store = false;
  std::string cpu;
  std::string checkpoint_interval = "2";
  std::string journal_cap = "2GiB";
  std::string max_open_orders = "2000000";
  std::string detail = "all";
  std::string interval_s = "1";
  std::string retain_detail;
  std::string retain;
  std::string metrics_listen;
  bool metrics_required = false;  // a --metrics-listen that cannot bind stops the collector
  std::vector<std::string> budgets;  // --budget, each given
  std::string budgets_file;          // --budgets
  // OpenTelemetry push (collector/sinks/otlp_sink.h).
  std::string otlp_endpoint;
  std::string otlp_slowest = "10";
};

// Parses argv into flags: on --help or --version prints and exits 0; on a
// usage error prints "ticktrace-collector: <message> (see --help)" and exits 2.
CollectorFlags ParseFlagsOrExit(int argc, const char* const* argv);

// The options `flags` ask for, checked (ValidateOptions included), with the
// session from $TICKTRACE_SESSION when --session is not given.
// InvalidArgument, one line naming the flag, for a bad value.
absl::StatusOr<CollectorOptions> OptionsFromFlags(const CollectorFlags& flags);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_COMMAND_LINE_H_
