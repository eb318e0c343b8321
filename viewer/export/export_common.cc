#include "viewer/export/export_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <streambuf>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa;
  struct stat sb;
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Writes into the character device `out_path` (/dev/null, a terminal,
// /dev/stdout when that is one) in place: a device has no content to
// replace, and renaming a file over its node would destroy it. Opened
// O_NONBLOCK so that no open can wait, and checked on the descriptor.
absl::Status WriteToDevice(const std::string& out_path,
                           const std::function<absl::Status(std::ostream&)>& write);

absl::Status Exists(const std::string& out_path) {
  return absl::AlreadyExistsError(
      absl::StrCat("--out ", out_path, " exists; add --force to replace it"));
}

// A write-only stream buffer on a file descriptor it owns: the temporary
// file is opened with O_EXCL | O_NOFOLLOW, which std::ofstream cannot ask.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof(buffer_)); }
  ~FdBuf() override { Close(); }
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;

  // Flushes and closes; false when a write or the close failed.
  bool Close() {
    if (fd_ < 0) return ok_;
    ok_ = Flush() && ok_;
    ok_ = ::close(fd_) == 0 && ok_;
    fd_ = -1;
    return ok_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!Flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Flush() ? 0 : -1; }

 private:
  bool Flush() {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        return false;
      }
      p += n;
    }
    setp(buffer_, buffer_ + sizeof(buffer_));
    return true;
  }

  int fd_;
  bool ok_ = true;
  char buffer_[1 << 16];
};

}  // namespace

absl::Status WriteOutput(const std::string& out_path, const std::string& store_path,
                         const std::function<absl::Status(std::ostream&)>& write, bool force) {
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
  // lstat: a symlink is refused as itself, whatever (or whether) it names,
  // unless it names a device, FIFO or socket (/dev/stdout is a link).
  struct stat st;
  const bool exists = ::lstat(out_path.c_str(), &st) == 0;
  struct stat target = st;
  if (exists && S_ISLNK(st.st_mode) && ::stat(out_path.c_str(), &target) != 0) target = st;
  // Never replaced, whatever --force says: a character device is written in
  // place; a FIFO, socket or block device is refused (a FIFO could block the
  // export for ever, and replacing any of them breaks whoever uses it).
  if (exists && S_ISCHR(target.st_mode)) return WriteToDevice(out_path, write);
  if (exists && (S_ISFIFO(target.st_mode) || S_ISSOCK(target.st_mode) ||
                 S_ISBLK(target.st_mode))) {
    const char* kind = S_ISFIFO(target.st_mode)   ? "FIFO"
                       : S_ISSOCK(target.st_mode) ? "socket"
                                                  : "block device";
    return absl::FailedPreconditionError(absl::StrCat(
        "--out ", out_path, " is a ", kind,
        ", not a file; refusing to write into it or replace it (--out - writes to stdout)"));
  }
  if (exists && !force) return Exists(out_path);
  if (exists && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("--out ", out_path, " is a directory"));
  }
  const std::string temp_path = absl::StrCat(out_path, ".tmp.", ::getpid());
  const int fd =
      ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("--out ", out_path, ": cannot create ", temp_path, ": ",
                     std::strerror(errno)));
  }
  {
    FdBuf buf(fd);
    std::ostream file(&buf);
    absl::Status status = write(file);
    file.flush();
    const bool closed = buf.Close();
    if (status.ok() && (!file || !closed)) {
      status = absl::DataLossError(
          absl::StrCat("--out ", out_path, ": write failed: ", std::strerror(errno)));
    }
    if (!status.ok()) {
      std::remove(temp_path.c_str());
      return status;
    }
  }
  // Without --force the rename must not replace a file that appeared while
  // `write` ran: RENAME_NOREPLACE, or link() where the file system lacks it.
  int rc = 0;
  if (force) {
    rc = ::rename(temp_path.c_str(), out_path.c_str());
  } else {
    rc = ::renameat2(AT_FDCWD, temp_path.c_str(), AT_FDCWD, out_path.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
      rc = ::link(temp_path.c_str(), out_path.c_str());
      if (rc == 0) std::remove(temp_path.c_str());
    }
  }
  if (rc != 0) {
    const int err = errno;
    std::remove(temp_path.c_str());
    if (err == EEXIST) return Exists(out_path);
    return absl::PermissionDeniedError(
        absl::StrCat("--out ", out_path, ": cannot rename into place: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

namespace {

absl::Status WriteToDevice(const std::string& out_path,
                           const std::function<absl::Status(std::ostream&)>& write) {
  const int fd = ::open(out_path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("--out ", out_path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("--out ", out_path, " is no longer a character device; refusing it"));
  }
  FdBuf buf(fd);
  std::ostream device(&buf);
  TICKTRACE_RETURN_IF_ERROR(write(device));
  device.flush();
  if (!buf.Close() || !device) {
    return absl::DataLossError(
        absl::StrCat("--out ", out_path, ": write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The orders of `window` the selection starts from: one order's instances,
// the slowest, or all by time.
absl::StatusOr<std::vector<store::OrderRow>> SelectedOrders(store::StoreReader& store,
                                                            int64_t run_id,
                                                            const ExportOptions& options) {
  const store::TimeWindow& w = options.window;
  if (options.order_id.has_value()) return store.OrderInstances(run_id, *options.order_id);
  if (options.slowest.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(
        const std::vector<store::RankedOrder> ranked,
        store.FindSlowest(run_id, std::string(store::kTotalStage), *options.slowest, w));
    std::vector<store::OrderRow> out;
    for (const store::RankedOrder& r : ranked) {
      TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::OrderRow> instances,
                                 store.OrderInstances(run_id, r.order_id));
      for (store::OrderRow& o : instances) out.push_back(std::move(o));
    }
    return out;
  }
  if (!w.since_utc_ns.has_value() && !w.until_utc_ns.has_value() && !options.flagged) {
    return store.OrdersByTime(run_id, options.limit);
  }
  return store.OrdersByTime(run_id, std::nullopt);
}

}  // namespace

absl::StatusOr<std::vector<store::OrderRow>> OrdersToExport(store::StoreReader& store, int64_t run_id,
                                                     const ExportOptions& options) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::OrderRow> all,
                             SelectedOrders(store, run_id, options));
  // (order_id, instance) of the orders with an excluded flag.
  std::set<std::pair<int64_t, int64_t>> flagged;
  if (options.flagged) {
    TICKTRACE_RETURN_IF_ERROR(store.ForEachSample(
        run_id, store::SampleFilter{}, /*ordered=*/false, [&](const store::SampleRow& s) {
          if ((s.flags & options.excluded_flags) != 0) flagged.emplace(s.order_id, s.instance);
        }));
  }
  const store::TimeWindow& w = options.window;
  const bool by_time = !options.order_id.has_value() && !options.slowest.has_value();
  std::vector<store::OrderRow> kept;
  for (store::OrderRow& o : all) {
    if (w.since_utc_ns.has_value() && o.first_utc_ns < *w.since_utc_ns) continue;
    if (w.until_utc_ns.has_value() && o.first_utc_ns >= *w.until_utc_ns) {
      if (by_time) break;
      continue;
    }
    if (options.flagged && flagged.count({o.order_id, o.instance}) == 0) continue;
    if (options.limit.has_value() && static_cast<int64_t>(kept.size()) >= *options.limit) break;
    kept.push_back(std::move(o));
  }
  return kept;
}

}  // namespace ticktrace::view
