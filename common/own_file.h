// Opening an existing file that a program of ours is about to trust (the
// collector's store, journal and checkpoint; an archive to replay) without
// letting another local user steer it (docs/security.md):
//   - O_NONBLOCK: a FIFO or device planted at the path never hangs open()
//     or a read;
//   - O_NOFOLLOW (unless the path is an input the user names): a planted
//     symlink is refused, never followed;
//   - every check on the open descriptor (fstat), so the name cannot be
//     swapped between the check and the use: a regular file, owned by this
//     uid or root, that others (and, unless allowed, the group) cannot write.
// Every refusal is one line naming the path and the reason.
//
// Cold paths only (start-up, opening a store). Thread-safe (no state).

#ifndef TICKTRACE_COMMON_OWN_FILE_H_
#define TICKTRACE_COMMON_OWN_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace {

struct ExistingFileRules {
  // Refuse a symlink at the path (not followed) and a file of another owner
  // than this uid or root, or one that others may write.
  bool must_be_ours = true;
  // With must_be_ours: accept a file that its group may write (others never).
  bool group_may_write = false;
};

// Opens the existing file `path` with `access` (O_RDONLY, O_WRONLY, O_RDWR)
// under `rules` and returns its descriptor (blocking again, O_CLOEXEC); the
// caller owns it. NotFound when absent; FailedPrecondition for a symlink or
// anything but a regular file; PermissionDenied for a foreign owner, a mode
// others may write, or EACCES; Internal with the errno text otherwise.
absl::StatusOr<int> OpenExistingFile(const std::string& path, int access,
                                     const ExistingFileRules& rules);

}  // namespace ticktrace

#endif  // TICKTRACE_COMMON_OWN_FILE_H_
