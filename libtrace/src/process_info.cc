#include "src/process_info.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ticktrace::internal {

absl::StatusOr<uint64_t> ProcessStartTicks(uint32_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " does not exist"));
  }
  // The command name (field 2) may hold spaces and parentheses: fields
  // after it start after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return absl::DataLossError(absl::StrCat("/proc/", pid, "/stat: no ')' in the line"));
  }
  std::vector<std::string> fields =
      absl::StrSplit(line.substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state), so field 22 is fields[19].
  uint64_t start_ticks = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &start_ticks)) {
    return absl::DataLossError(absl::StrCat("/proc/", pid, "/stat: no start time"));
  }
  return start_ticks;
}

std::string ProcessName(uint32_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace ticktrace::internal
