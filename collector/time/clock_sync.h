// How far this host's CLOCK_REALTIME may be from true UTC, for several hosts in one store:
// the bound that a stage whose two stamps come from different hosts inherits
// from both hosts (docs/clickhouse.md#clock-synchronisation).
//
// Where the bound comes from, first found wins:
//   chrony   `chronyc -n tracking` while synchronised: |System time| + Root
//            dispersion + Root delay / 2 (chrony's own maximum-error estimate)
//   ptp      `pmc -u -b 0 'GET TIME_STATUS_NP'` (ptp4l running, a grandmaster
//            present): |master_offset| of the PTP hardware clock; phc2sys's
//            copy to the system clock adds its own offset, not included
//   flag     --clock-error-ns
//   unknown  none of them: cross-host stages carry no uncertainty
//
// Called once by the collector at the start of a live run (cold path: runs
// two short commands with a 2-s timeout each).
#ifndef TICKTRACE_COLLECTOR_CLOCK_SYNC_H_
#define TICKTRACE_COLLECTOR_CLOCK_SYNC_H_

#include <optional>
#include <string>
#include <string_view>

namespace ticktrace::collect {

struct ClockSync {
  std::string source = "unknown";  // "chrony", "ptp", "flag" or "unknown"
  std::optional<double> error_ns;  // unset when unknown
  std::string detail;              // one line for the collector's log
};

// The bound in ns from `chronyc -n tracking` output; nullopt when chrony is
// not synchronised or the text is not that output.
std::optional<double> ParseChronyTracking(std::string_view text);

// |master_offset| in ns from pmc's TIME_STATUS_NP answer; nullopt without a
// grandmaster (gmPresent false) or when the text is not that answer.
std::optional<double> ParsePmcTimeStatus(std::string_view text);

// Asks chrony, then ptp4l (through pmc), then takes `flag_error_ns`;
// without `ask_daemons` (a replay: this host's clock is not the data's) only
// the flag.
ClockSync ReadClockSync(std::optional<double> flag_error_ns, bool ask_daemons = true);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_CLOCK_SYNC_H_
