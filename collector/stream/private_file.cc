#include "collector/stream/private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

namespace {

// Opens an existing file of ours with `access` (O_RDONLY, O_WRONLY): never
// through a symlink, and never blocking (O_NONBLOCK: a FIFO or a device
// planted at the path would hang open() or read() for ever), then checks the
// open file (fstat, so the name cannot be swapped in between): a regular
// file, owned by this uid or root, that no group or other user may write.
// `own`: also refuse a symlink and a file that is not ours (above); else
// (an input the user names, e.g. an archive to replay) only what can block.
absl::StatusOr<int> OpenExisting(const std::string& path, int access, const char* what, bool own) {
  const int fd = ::open(path.c_str(), access | (own ? O_NOFOLLOW : 0) | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": is a symbolic link; refusing to follow it"));
    }
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(err)));
    return ErrnoStatus(path, what, err);
  }
  struct stat st;
  absl::Status refused;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    refused = absl::FailedPreconditionError(
        absl::StrCat(path, ": not a regular file (a FIFO, device or directory); refusing it"));
  } else if (own && st.st_uid != ::geteuid() && st.st_uid != 0) {
    refused = absl::PermissionDeniedError(absl::StrCat(
        path, ": belongs to uid ", st.st_uid, ", not to this collector's uid ", ::geteuid(),
        " (or root); refusing it"));
  } else if (own && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    refused = absl::PermissionDeniedError(absl::StrFormat(
        "%s: other users may write it (mode %04o); refusing it", path, st.st_mode & 07777));
  }
  if (refused.ok() && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    refused = ErrnoStatus(path, what, errno);
  }
  if (!refused.ok()) {
    ::close(fd);
    return refused;
  }
  return fd;
}

}  // namespace

absl::StatusOr<int> OpenOwnFileForWriting(const std::string& path) {
  return OpenExisting(path, O_WRONLY, "cannot open for writing", /*own=*/true);
}

absl::StatusOr<int> OpenOwnFileForReading(const std::string& path) {
  return OpenExisting(path, O_RDONLY, "cannot open for reading", /*own=*/true);
}

absl::StatusOr<int> OpenRegularFileForReading(const std::string& path) {
  return OpenExisting(path, O_RDONLY, "cannot open for reading", /*own=*/false);
}

}  // namespace ticktrace::collect
