#include "src/process_info.h"

#include <fstream>
#include <sstream>
#include <string>

#include "src/text.h"

namespace ticktrace::internal {

Result<uint64_t> ProcessStartTicks(uint32_t pid) {
  std::ifstream in(Cat("/proc/", pid, "/stat"));
  std::string line;
  if (!in || !std::getline(in, line)) {
    return Status(ErrorCode::kNotFound, Cat("process ", pid, " does not exist"));
  }
  // The command name (field 2) may hold spaces and parentheses: fields
  // after it start after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return Status(ErrorCode::kDataLoss, Cat("/proc/", pid, "/stat: no ')' in the line"));
  }
  std::vector<std::string> fields =
      Split(std::string_view(line).substr(close + 1), ' ', /*skip_empty=*/true);
  // fields[0] is field 3 (state), so field 22 is fields[19].
  uint64_t start_ticks = 0;
  if (fields.size() < 20 || !ParseUnsigned(fields[19], &start_ticks)) {
    return Status(ErrorCode::kDataLoss, Cat("/proc/", pid, "/stat: no start time"));
  }
  return start_ticks;
}

std::string ProcessName(uint32_t pid) {
  std::ifstream in(Cat("/proc/", pid, "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace ticktrace::internal
