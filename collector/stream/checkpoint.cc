#include "collector/stream/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "collector/stream/private_file.h"
#include "collector/stream/state_codec.h"
#include "collector/stream/stream.h"

namespace ticktrace::collect {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  const int e = errno;
  return absl::InternalError(
      absl::StrCat(path, ": ", absl::string_view(what.data(), what.size()), ": ", std::strerror(e)));
}

uint64_t StateChecksum(const std::string& state) {
  return ChunkChecksum(0, reinterpret_cast<const uint8_t*>(state.data()), state.size());
}

absl::Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return errno == ENOSPC || errno == EDQUOT
                 ? absl::ResourceExhaustedError(
                       absl::StrCat(path, ": file system full writing the checkpoint"))
                 : Errno("write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointPath(const std::string& db_path) { return db_path + ".ttcheckpoint"; }

absl::Status WriteCheckpointFile(const std::string& path, const Checkpoint& c,
                                 bool group_readable) {
  StateWriter w;
  w.Put<uint64_t>(kCheckpointMagic);
  w.Put<uint32_t>(kCheckpointVersion);
  w.Put<uint32_t>(0);
  w.Put<int64_t>(c.run_id);
  w.Put<uint64_t>(c.journal_offset);
  w.Put<uint64_t>(c.emitted);
  w.Put<uint64_t>(c.state.size());
  w.Put<uint64_t>(StateChecksum(c.state));

  const std::string tmp = path + ".tmp";
  // A temporary file left by a collector that died writing one: ours to drop
  // (a symlink there is refused below, never followed).
  if (absl::Status s = CheckNotSymlink(tmp); !s.ok()) return s;
  ::unlink(tmp.c_str());
  absl::StatusOr<int> fd = CreatePrivateFile(tmp, group_readable);
  if (!fd.ok()) return fd.status();
  absl::Status s = WriteAll(*fd, w.bytes(), tmp);
  if (s.ok()) s = WriteAll(*fd, c.state, tmp);
  if (s.ok() && ::fdatasync(*fd) != 0) s = Errno("fdatasync", tmp);
  ::close(*fd);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = Errno("rename", tmp);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself is durable once the directory is.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/"
                                                            : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Errno("open directory", dir);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return Errno("fsync directory", dir);
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> ReadCheckpointFile(const std::string& path) {
  absl::StatusOr<int> opened = OpenOwnFileForReading(path);
  if (!opened.ok()) {
    if (absl::IsNotFound(opened.status())) {
      return absl::NotFoundError(absl::StrCat(path, ": no checkpoint"));
    }
    return opened.status();
  }
  const int fd = *opened;
  std::string bytes;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Errno("read", path);
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto bad = [&path](std::string_view why) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid checkpoint (",
                                            absl::string_view(why.data(), why.size()), ")"));
  };
  StateReader r(bytes);
  if (r.Get<uint64_t>() != kCheckpointMagic) return bad("wrong magic");
  const uint32_t version = r.Get<uint32_t>();
  if (!r.ok()) return bad("cut short");
  if (version != kCheckpointVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": a checkpoint of format ", version, " (this collector reads format ",
                     kCheckpointVersion, ")"));
  }
  r.Get<uint32_t>();
  Checkpoint c;
  c.run_id = r.Get<int64_t>();
  c.journal_offset = r.Get<uint64_t>();
  c.emitted = r.Get<uint64_t>();
  const uint64_t size = r.Get<uint64_t>();
  const uint64_t checksum = r.Get<uint64_t>();
  if (!r.ok() || bytes.size() - kCheckpointHeaderBytes != size) return bad("cut short");
  c.state = bytes.substr(kCheckpointHeaderBytes);
  if (StateChecksum(c.state) != checksum) return bad("checksum mismatch");
  return c;
}

}  // namespace ticktrace::collect
