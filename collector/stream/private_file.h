// Creating the collector's own files (store, journal, checkpoint, raw
// archive) so that no other local user can read them or steer the collector
// into writing somewhere else (docs/security.md):
//   - mode 0600 (0640 with --group-readable), whatever the umask;
//   - O_EXCL: a new file is new; a name someone planted meanwhile is refused;
//   - O_NOFOLLOW: a symlink planted at the path is refused, never followed.
// Every refusal is one line naming the path and the reason.
//
// Called on the collector's cold paths (start-up, journal creation), by
// journal.cc, archive.cc and the store's create path. Thread-safe (no state).

#ifndef TICKTRACE_COLLECTOR_PRIVATE_FILE_H_
#define TICKTRACE_COLLECTOR_PRIVATE_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::collect {

// The mode a new file of the collector gets: 0600, or 0640 when `group_readable`.
mode_t PrivateFileMode(bool group_readable);

// Creates `path` (it must not exist) write-only with PrivateFileMode() and
// returns its descriptor (O_CLOEXEC). AlreadyExists when something is there
// (a symlink included: it is not followed); PermissionDenied / Internal with
// the errno text otherwise. The caller owns the descriptor.
absl::StatusOr<int> CreatePrivateFile(const std::string& path, bool group_readable);

// OK when `path` does not exist or is not a symbolic link; FailedPrecondition
// ("is a symbolic link; refusing to follow it") when it is. For files the
// collector opens by name through a library (SQLite), before it does.
absl::Status CheckNotSymlink(const std::string& path);

// Opens an existing file of ours (journal, checkpoint) for writing or for
// reading: refuses, in one line, a symlink (not followed), anything but a
// regular file (a FIFO or device is never waited on: opened O_NONBLOCK and
// checked with fstat before any read), a file another uid than ours or
// root's owns, and one that group or others may write. NotFound when absent.
absl::StatusOr<int> OpenOwnFileForWriting(const std::string& path);
absl::StatusOr<int> OpenOwnFileForReading(const std::string& path);
// An input the user names (an archive to replay): any owner, through a
// symlink, but only a regular file, never waited on (as above).
absl::StatusOr<int> OpenRegularFileForReading(const std::string& path);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_PRIVATE_FILE_H_
