// One collector per session: the ring protocol has a single consumer per ring
// (abi.h), and exactly-once needs one journal writer. The lock is an flock(2)
// on "collector.<session>.lock" in a directory that only this uid can create
// files in, so no other local user can hold it or plant it (docs/security.md):
//   root:      /run/ticktrace (/run is root's), else /tmp/ticktrace-0;
//   other uid: ~/.ticktrace (the home directory from the password database),
//              else /tmp/ticktrace-<uid> for users without a home.
// The directory is created 0700 and must be a real directory (not a link)
// owned by us with no group/other access; the lock file is opened with
// O_NOFOLLOW. The kernel releases the lock however the holder dies (SIGKILL
// included); the file stays (never unlinked, so two collectors can never lock
// two different files of one name).

#ifndef TICKTRACE_COLLECTOR_SESSION_LOCK_H_
#define TICKTRACE_COLLECTOR_SESSION_LOCK_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::collect {

class SessionLock {
 public:
  // Called once by the live run before anything is created. AlreadyExists
  // when another collector holds the session.
  static absl::StatusOr<SessionLock> Acquire(const std::string& session);

  SessionLock(SessionLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  SessionLock& operator=(SessionLock&&) = delete;
  ~SessionLock();

 private:
  explicit SessionLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_SESSION_LOCK_H_
