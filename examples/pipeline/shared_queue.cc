#include "shared_queue.h"

#include <signal.h>

#include <cerrno>

#include <boost/interprocess/shared_memory_object.hpp>

namespace ticktrace::examples {

std::string QueueSegmentName(absl::string_view session, absl::string_view channel) {
  return absl::StrCat("ticktrace-example.", session, ".", channel);
}

std::vector<std::string> AllQueueSegmentNames(absl::string_view session) {
  return {QueueSegmentName(session, kTicksChannel), QueueSegmentName(session, kOrdersChannel)};
}

bool RemoveQueueSegment(const std::string& name) {
  // Boost's remove() never throws; it returns false when there was nothing to remove.
  return boost::interprocess::shared_memory_object::remove(name.c_str());
}

bool ProcessAlive(int32_t pid) {
  if (pid <= 0) return false;
  return kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace ticktrace::examples
