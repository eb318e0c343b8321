// Facts about a process read from /proc, and the (TSC, CLOCK_REALTIME) anchor.
// Cold path; any thread may call these.

#ifndef TICKTRACE_SRC_PROCESS_INFO_H_
#define TICKTRACE_SRC_PROCESS_INFO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ticktrace::internal {

// /proc/<pid>/stat field 22: start time in clock ticks since boot.
// NotFound when the process does not exist.
absl::StatusOr<uint64_t> ProcessStartTicks(uint32_t pid);

// /proc/<pid>/comm without the newline; "" when unreadable.
std::string ProcessName(uint32_t pid);

// Reads rdtsc, CLOCK_REALTIME, rdtsc `tries` times and keeps the tightest
// pair: the clock value with the midpoint of the two TSC reads around it.
void ReadAnchor(uint64_t* tsc, int64_t* realtime_ns, int tries = 7);

}  // namespace ticktrace::internal

#endif  // TICKTRACE_SRC_PROCESS_INFO_H_
