#include "common/own_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ticktrace {
namespace {

absl::Status OpenErrno(const std::string& path, int access, int err) {
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (err == ENOENT) code = absl::StatusCode::kNotFound;
  if (err == EACCES || err == EPERM) code = absl::StatusCode::kPermissionDenied;
  const char* what = access == O_RDONLY   ? "cannot open for reading"
                     : access == O_WRONLY ? "cannot open for writing"
                                          : "cannot open for reading and writing";
  if (err == ENOENT) return absl::Status(code, absl::StrCat(path, ": ", std::strerror(err)));
  return absl::Status(code, absl::StrCat(path, ": ", what, ": ", std::strerror(err)));
}

}  // namespace

absl::StatusOr<int> OpenExistingFile(const std::string& path, int access,
                                     const ExistingFileRules& rules) {
  const bool own = rules.must_be_ours;
  const int fd = ::open(path.c_str(), access | (own ? O_NOFOLLOW : 0) | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP && own) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": is a symbolic link; refusing to follow it"));
    }
    return OpenErrno(path, access, err);
  }
  struct stat st;
  absl::Status refused;
  const mode_t may_not_write = rules.group_may_write ? S_IWOTH : (S_IWGRP | S_IWOTH);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    refused = absl::FailedPreconditionError(
        absl::StrCat(path, ": not a regular file (a FIFO, device or directory); refusing it"));
  } else if (own && st.st_uid != ::geteuid() && st.st_uid != 0) {
    refused = absl::PermissionDeniedError(absl::StrCat(
        path, ": belongs to uid ", st.st_uid, ", not to this uid ", ::geteuid(),
        " (or root); refusing it"));
  } else if (own && (st.st_mode & may_not_write) != 0) {
    refused = absl::PermissionDeniedError(absl::StrFormat(
        "%s: other users may write it (mode %04o); refusing it", path, st.st_mode & 07777));
  }
  // Blocking again for the reads and writes that follow: a regular file
  // never blocks, and callers expect whole reads.
  if (refused.ok() && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    refused = OpenErrno(path, access, errno);
  }
  if (!refused.ok()) {
    ::close(fd);
    return refused;
  }
  return fd;
}

}  // namespace ticktrace
