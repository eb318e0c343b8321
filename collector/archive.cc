#include "collector/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/private_file.h"

namespace ticktrace::collect {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::Status(errno == ENOENT ? absl::StatusCode::kNotFound
                      : errno == EEXIST ? absl::StatusCode::kAlreadyExists
                                        : absl::StatusCode::kInternal,
                      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

std::string EncodeArchiveHeader(const ArchiveHeader& header) {
  std::string out(kArchiveHeaderBytes, '\0');
  const uint32_t version = kArchiveVersion, size = kArchiveHeaderBytes,
                 kind = static_cast<uint32_t>(header.kind);
  std::memcpy(out.data(), &kArchiveMagic, 8);
  std::memcpy(out.data() + 8, &version, 4);
  std::memcpy(out.data() + 12, &size, 4);
  std::memcpy(out.data() + 16, &kind, 4);
  std::memcpy(out.data() + 24, &header.run_id, 8);
  return out;
}

absl::StatusOr<ArchiveHeader> DecodeArchiveHeader(std::string_view bytes) {
  if (bytes.size() < kArchiveHeaderBytes) {
    return absl::InvalidArgumentError("too short for a ticktrace archive header");
  }
  uint64_t magic, run_id;
  uint32_t version, size, kind;
  std::memcpy(&magic, bytes.data(), 8);
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&size, bytes.data() + 12, 4);
  std::memcpy(&kind, bytes.data() + 16, 4);
  std::memcpy(&run_id, bytes.data() + 24, 8);
  if (magic != kArchiveMagic) return absl::InvalidArgumentError("not a ticktrace archive (bad magic)");
  if (version != kArchiveVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("archive format version ", version, " (this collector reads ",
                     kArchiveVersion, ")"));
  }
  if (size != kArchiveHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("archive header size ", size));
  }
  if (kind != static_cast<uint32_t>(ArchiveKind::kRaw) &&
      kind != static_cast<uint32_t>(ArchiveKind::kJournal)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown archive kind ", kind));
  }
  ArchiveHeader h;
  h.kind = static_cast<ArchiveKind>(kind);
  h.run_id = run_id;
  return h;
}

// --- ArchiveWriter ---

absl::StatusOr<ArchiveWriter> ArchiveWriter::Create(const std::string& path,
                                                    const ArchiveHeader& header, bool durable,
                                                    bool group_readable) {
  absl::StatusOr<int> fd = CreatePrivateFile(path, group_readable);
  if (!fd.ok()) return fd.status();
  ArchiveWriter w(*fd, path, 0, durable);
  absl::Status s = w.Append(EncodeArchiveHeader(header));
  if (s.ok()) s = w.Sync();
  if (!s.ok()) {
    w.Close().IgnoreError();
    ::unlink(path.c_str());
    return s;
  }
  return w;
}

absl::StatusOr<ArchiveWriter> ArchiveWriter::OpenForAppend(const std::string& path,
                                                           uint64_t valid_bytes, bool durable) {
  absl::StatusOr<int> opened = OpenOwnFileForWriting(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  if (::ftruncate(fd, static_cast<off_t>(valid_bytes)) != 0 ||
      ::lseek(fd, static_cast<off_t>(valid_bytes), SEEK_SET) < 0) {
    absl::Status s = Errno("cannot cut the torn tail", path);
    ::close(fd);
    return s;
  }
  return ArchiveWriter(fd, path, valid_bytes, durable);
}

ArchiveWriter::ArchiveWriter(ArchiveWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      size_(other.size_),
      durable_(other.durable_) {}

ArchiveWriter& ArchiveWriter::operator=(ArchiveWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    size_ = other.size_;
    durable_ = other.durable_;
  }
  return *this;
}

ArchiveWriter::~ArchiveWriter() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ArchiveWriter::Append(std::string_view chunk_bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": archive closed"));
  const char* p = chunk_bytes.data();
  size_t left = chunk_bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write failed", path_);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  size_ += chunk_bytes.size();
  return absl::OkStatus();
}

absl::Status ArchiveWriter::Sync() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": archive closed"));
  if (durable_ && ::fdatasync(fd_) != 0) return Errno("fdatasync failed", path_);
  return absl::OkStatus();
}

absl::Status ArchiveWriter::Close() {
  if (fd_ < 0) return absl::OkStatus();
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return Errno("close failed", path_);
  return absl::OkStatus();
}

// --- ArchiveReader ---

absl::StatusOr<ArchiveReader> ArchiveReader::Open(const std::string& path,
                                                  size_t read_buffer_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open archive", path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  char header[kArchiveHeaderBytes];
  const ssize_t n = ::pread(fd, header, sizeof(header), 0);
  if (n != static_cast<ssize_t>(sizeof(header))) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": too short for a ticktrace archive"));
  }
  absl::StatusOr<ArchiveHeader> h = DecodeArchiveHeader(std::string_view(header, sizeof(header)));
  if (!h.ok()) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", h.status().message()));
  }
  if (::lseek(fd, kArchiveHeaderBytes, SEEK_SET) < 0) {
    absl::Status s = Errno("cannot seek", path);
    ::close(fd);
    return s;
  }
  ArchiveReader r;
  r.fd_ = fd;
  r.path_ = path;
  r.header_ = *h;
  r.valid_bytes_ = kArchiveHeaderBytes;
  r.read_buffer_bytes_ = read_buffer_bytes;
  return r;
}

ArchiveReader::ArchiveReader(ArchiveReader&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      header_(o.header_),
      valid_bytes_(o.valid_bytes_),
      torn_tail_(o.torn_tail_),
      malformed_chunks_(o.malformed_chunks_),
      read_buffer_bytes_(o.read_buffer_bytes_) {}

ArchiveReader& ArchiveReader::operator=(ArchiveReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    header_ = o.header_;
    valid_bytes_ = o.valid_bytes_;
    torn_tail_ = o.torn_tail_;
    malformed_chunks_ = o.malformed_chunks_;
    read_buffer_bytes_ = o.read_buffer_bytes_;
  }
  return *this;
}

ArchiveReader::~ArchiveReader() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ArchiveReader::ReadAll(ChunkVisitor* visitor) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": reader closed"));
  std::vector<uint8_t> buf(std::max<size_t>(read_buffer_bytes_, kChunkHeaderBytes));
  size_t begin = 0, end = 0;  // unparsed bytes are buf[begin, end)
  uint64_t file_off = valid_bytes_;  // file offset of buf[begin]
  bool eof = false;
  while (true) {
    absl::StatusOr<ChunkFrame> f = ParseChunkFrame(buf.data() + begin, end - begin);
    if (f.ok()) {
      absl::Status s = DispatchChunk(*f, visitor);
      if (!s.ok()) ++malformed_chunks_;
      begin += f->frame_bytes;
      file_off += f->frame_bytes;
      valid_bytes_ = file_off;
      continue;
    }
    if (f.status().code() != absl::StatusCode::kOutOfRange) {
      return absl::DataLossError(absl::StrCat(path_, ": at byte ", file_off, ": ",
                                              f.status().message()));
    }
    if (eof) {
      torn_tail_ = end > begin;
      return absl::OkStatus();
    }
    // Need more bytes: move the partial chunk to the front, grow if one chunk
    // is larger than the buffer, and read.
    if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      begin = 0;
    }
    if (end == buf.size()) {
      if (buf.size() >= kMaxChunkPayload + kChunkHeaderBytes) {
        return absl::DataLossError(absl::StrCat(path_, ": at byte ", file_off,
                                                ": chunk larger than the limit"));
      }
      buf.resize(std::min<size_t>(buf.size() * 2, kMaxChunkPayload + kChunkHeaderBytes));
    }
    const ssize_t n = ::read(fd_, buf.data() + end, buf.size() - end);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("read failed", path_);
    }
    if (n == 0) eof = true;
    end += static_cast<size_t>(n);
  }
}

}  // namespace ticktrace::collect
