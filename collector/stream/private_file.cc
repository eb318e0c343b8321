#include "collector/stream/private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/own_file.h"

namespace ticktrace::collect {
namespace {

absl::Status ErrnoStatus(const std::string& path, absl::string_view what, int err) {
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (err == EEXIST) code = absl::StatusCode::kAlreadyExists;
  if (err == ENOENT) code = absl::StatusCode::kNotFound;
  if (err == EACCES || err == EPERM) code = absl::StatusCode::kPermissionDenied;
  return absl::Status(code, absl::StrCat(path, ": ", what, ": ", std::strerror(err)));
}

}  // namespace

mode_t PrivateFileMode(bool group_readable) { return group_readable ? 0640 : 0600; }

absl::StatusOr<int> CreatePrivateFile(const std::string& path, bool group_readable) {
  const mode_t mode = PrivateFileMode(group_readable);
  // O_EXCL with O_CREAT never follows a symlink at the last component (open(2)):
  // a planted link is EEXIST like any other file. O_NOFOLLOW says so twice.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    if (err == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return absl::AlreadyExistsError(
          absl::StrCat(path, ": is a symbolic link; refusing to follow it or write over it"));
    }
    if (err == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(path, ": exists; refusing to write over it"));
    }
    return ErrnoStatus(path, "cannot create", err);
  }
  // fchmod: the mode asked for, whatever the umask (which can only remove bits).
  if (::fchmod(fd, mode) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return ErrnoStatus(path, absl::StrFormat("cannot set mode 0%o", mode), err);
  }
  return fd;
}

absl::Status CheckNotSymlink(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // absent: nothing to follow
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": is a symbolic link; refusing to follow it"));
  }
  return absl::OkStatus();
}

// The checks themselves live in common/own_file.h, shared with the store.
absl::StatusOr<int> OpenOwnFileForWriting(const std::string& path) {
  return OpenExistingFile(path, O_WRONLY, {.must_be_ours = true});
}

absl::StatusOr<int> OpenOwnFileForReading(const std::string& path) {
  return OpenExistingFile(path, O_RDONLY, {.must_be_ours = true});
}

absl::StatusOr<int> OpenRegularFileForReading(const std::string& path) {
  return OpenExistingFile(path, O_RDONLY, {.must_be_ours = false});
}

}  // namespace ticktrace::collect
