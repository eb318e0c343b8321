// Facts about a process read from /proc.
// Cold path; any thread may call these.

#ifndef TICKTRACE_SRC_PROCESS_INFO_H_
#define TICKTRACE_SRC_PROCESS_INFO_H_

#include <cstdint>
#include <string>

#include "ticktrace/status.h"

namespace ticktrace::internal {

// /proc/<pid>/stat field 22: start time in clock ticks since boot.
// NotFound when the process does not exist.
Result<uint64_t> ProcessStartTicks(uint32_t pid);

// /proc/<pid>/comm without the newline; "" when unreadable.
std::string ProcessName(uint32_t pid);

}  // namespace ticktrace::internal

#endif  // TICKTRACE_SRC_PROCESS_INFO_H_
