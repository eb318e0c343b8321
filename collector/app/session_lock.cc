#include "collector/app/session_lock.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ticktrace::collect {
namespace {

// Creates `dir` 0700 if absent; OK when it is a directory (not a link) of
// this uid that no one else may enter, after a chmod if it was ours but open.
absl::Status MakePrivateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("session lock: cannot create ", dir, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("session lock: ", dir, " is not a directory"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "session lock: ", dir, " belongs to uid ", st.st_uid, ", not to this collector's uid ",
        ::geteuid(), "; remove it (it may be planted) and start again"));
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("session lock: cannot make ", dir, " private: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> LockDirectory() {
  const uid_t uid = ::geteuid();
  struct stat st;
  if (uid == 0) {
    if (::lstat("/run", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
        (st.st_mode & 022) == 0) {
      absl::Status s = MakePrivateDir("/run/ticktrace");
      if (!s.ok()) return s;
      return std::string("/run/ticktrace");
    }
  } else {
    // The home directory of the password database, not $HOME (which the
    // caller sets): only this uid (and root) can create files in it.
    std::vector<char> buf(16384);
    passwd pw;
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
        found->pw_dir != nullptr && found->pw_dir[0] == '/' && ::lstat(found->pw_dir, &st) == 0 &&
        S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 022) == 0) {
      const std::string dir = absl::StrCat(found->pw_dir, "/.ticktrace");
      absl::Status s = MakePrivateDir(dir);
      if (!s.ok()) return s;
      return dir;
    }
  }
  const std::string dir = absl::StrCat("/tmp/ticktrace-", uid);
  absl::Status s = MakePrivateDir(dir);
  if (!s.ok()) return s;
  return dir;
}

}  // namespace

absl::StatusOr<SessionLock> SessionLock::Acquire(const std::string& session) {
  absl::StatusOr<std::string> dir = LockDirectory();
  if (!dir.ok()) return dir.status();
  const std::string path = absl::StrCat(*dir, "/collector.", session, ".lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("session lock ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("session lock ", path, ": not a regular file of this uid"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return absl::AlreadyExistsError(absl::StrCat(
          "session '", session, "' is already being drained by another collector (lock ", path,
          " is held); refusing to start a second one"));
    }
    return absl::InternalError(
        absl::StrCat("session lock ", path, ": flock: ", std::strerror(err)));
  }
  return SessionLock(fd);
}

SessionLock::~SessionLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ticktrace::collect
