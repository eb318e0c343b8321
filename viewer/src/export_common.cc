#include "ticktrace/view/export_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "status_macros.h"

namespace ticktrace::view {
namespace {

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa;
  struct stat sb;
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

absl::Status WriteOutput(const std::string& out_path, const std::string& store_path,
                         const std::function<absl::Status(std::ostream&)>& write) {
  if (out_path.empty()) return absl::InvalidArgumentError("--out: empty path");
  if (out_path == "-") {
    TICKTRACE_RETURN_IF_ERROR(write(std::cout));
    std::cout.flush();
    if (!std::cout) return absl::DataLossError("writing to stdout failed");
    return absl::OkStatus();
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    if (SameFile(out_path, store_path + suffix)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--out ", out_path, " is the store itself; the viewer never writes it"));
    }
  }
  const std::string temp_path = absl::StrCat(out_path, ".tmp.", ::getpid());
  {
    std::ofstream file(temp_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      return absl::PermissionDeniedError(
          absl::StrCat("--out ", out_path, ": cannot create: ", std::strerror(errno)));
    }
    absl::Status status = write(file);
    file.flush();
    if (status.ok() && !file) {
      status = absl::DataLossError(absl::StrCat("--out ", out_path, ": write failed"));
    }
    if (!status.ok()) {
      file.close();
      std::remove(temp_path.c_str());
      return status;
    }
  }
  if (std::rename(temp_path.c_str(), out_path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_path.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("--out ", out_path, ": cannot rename into place: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::view
