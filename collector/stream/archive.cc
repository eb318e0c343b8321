#include "collector/stream/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/stream/private_file.h"

namespace ticktrace::collect {
namespace {

// A full file system (ENOSPC, EDQUOT) is ResourceExhausted: the caller may
// wait for space and retry (docs/collector.md, "Full disk").
absl::Status ArchiveErrno(absl::string_view what, const std::string& path) {
  return absl::Status(errno == ENOENT   ? absl::StatusCode::kNotFound
                      : errno == EEXIST ? absl::StatusCode::kAlreadyExists
                      : errno == ENOSPC || errno == EDQUOT ? absl::StatusCode::kResourceExhausted
                                                           : absl::StatusCode::kInternal,
                      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

// The writer's and the reader's file: closed when open (-1 is none).
void CloseFd(int fd) {
  if (fd >= 0) ::close(fd);
}

// A move-assignment's file: ours closed, `from`'s taken (and left -1).
void TakeFd(int* to, int* from) {
  CloseFd(*to);
  *to = std::exchange(*from, -1);
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
  if (version < kOldestArchiveVersion || version > kArchiveVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("archive format version ", version, " (this collector reads ",
                     kOldestArchiveVersion, " to ", kArchiveVersion, ")"));
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

std::string CorruptSkipLine(std::string_view what, const CorruptSkip& skip) {
  std::string line = absl::StrCat(absl::string_view(what.data(), what.size()),
                                  ": corrupt chunk at byte ", skip.offset, " (",
                                  skip.reason, "): skipped ");
  if (skip.to_end) {
    absl::StrAppend(&line, "the last ", skip.bytes, " bytes (no valid chunk follows)");
  } else {
    absl::StrAppend(&line, skip.bytes, " bytes to the next valid chunk");
  }
  if (skip.rings_with_gaps > 0) {
    absl::StrAppend(&line, "; ", skip.records_lost, " records lost (index gaps of ",
                    skip.rings_with_gaps, skip.rings_with_gaps == 1 ? " ring" : " rings",
                    "; a ring with no later chunk would add unseen ones)");
  } else {
    absl::StrAppend(&line, "; records lost: unknown (no later chunk of a ring shows a gap)");
  }
  return line;
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
    absl::Status s = ArchiveErrno("cannot cut the torn tail", path);
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
    TakeFd(&fd_, &other.fd_);
    size_ = other.size_;
    durable_ = other.durable_;
    path_ = std::move(other.path_);
  }
  return *this;
}

ArchiveWriter::~ArchiveWriter() { CloseFd(fd_); }

absl::Status ArchiveWriter::Append(std::string_view chunk_bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": archive closed"));
  const char* p = chunk_bytes.data();
  size_t left = chunk_bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = ArchiveErrno("write failed", path_);
      // Whole chunks or nothing: a part written before the error goes again.
      Rollback(size_).IgnoreError();
      return s;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  size_ += chunk_bytes.size();
  return absl::OkStatus();
}

absl::Status ArchiveWriter::PunchHole(uint64_t from, uint64_t to) {
  constexpr uint64_t kBlock = 4096;
  from = (from + kBlock - 1) / kBlock * kBlock;
  to = to / kBlock * kBlock;
  if (fd_ < 0 || to <= from) return absl::OkStatus();
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                  static_cast<off_t>(to - from)) != 0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS) {
      return absl::UnimplementedError(
          absl::StrCat(path_, ": the file system cannot free a file's start (no hole punching)"));
    }
    return ArchiveErrno("cannot free journal space", path_);
  }
  return absl::OkStatus();
}

uint64_t ArchiveWriter::DiskBytes() const {
  struct stat st;
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

absl::Status ArchiveWriter::Rollback(uint64_t bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": archive closed"));
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0 ||
      ::lseek(fd_, static_cast<off_t>(bytes), SEEK_SET) < 0) {
    return ArchiveErrno("cannot cut back what failed to be written", path_);
  }
  size_ = bytes;
  return absl::OkStatus();
}

absl::Status ArchiveWriter::Sync() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": archive closed"));
  if (durable_ && ::fdatasync(fd_) != 0) return ArchiveErrno("fdatasync failed", path_);
  return absl::OkStatus();
}

absl::Status ArchiveWriter::Close() {
  if (fd_ < 0) return absl::OkStatus();
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return ArchiveErrno("close failed", path_);
  return absl::OkStatus();
}

// --- ArchiveReader ---

absl::StatusOr<ArchiveReader> ArchiveReader::Open(const std::string& path,
                                                  size_t read_buffer_bytes) {
  // Never waits: a FIFO or device named as an archive is refused, not opened
  // for ever (private_file.h).
  absl::StatusOr<int> opened = OpenRegularFileForReading(path);
  if (!opened.ok()) {
    if (absl::IsNotFound(opened.status()) || absl::IsPermissionDenied(opened.status())) {
      return ArchiveErrno("cannot open archive", path);
    }
    return absl::InvalidArgumentError(opened.status().message());
  }
  const int fd = *opened;
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
    absl::Status s = ArchiveErrno("cannot seek", path);
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

ArchiveReader::ArchiveReader(ArchiveReader&& o) noexcept { *this = std::move(o); }

ArchiveReader& ArchiveReader::operator=(ArchiveReader&& o) noexcept {
  if (this != &o) {
    TakeFd(&fd_, &o.fd_);
    path_ = std::move(o.path_);
    header_ = o.header_;
    valid_bytes_ = o.valid_bytes_;
    torn_tail_ = o.torn_tail_;
    malformed_chunks_ = o.malformed_chunks_;
    read_buffer_bytes_ = o.read_buffer_bytes_;
    skips_ = std::move(o.skips_);
    corrupt_chunks_ = o.corrupt_chunks_;
    corrupt_records_lost_ = o.corrupt_records_lost_;
    ring_ends_ = std::move(o.ring_ends_);
    buf_ = std::move(o.buf_);
    win_offset_ = o.win_offset_;
    window_bytes_ = o.window_bytes_;
    file_bytes_ = o.file_bytes_;
    stop_at_ = o.stop_at_;
    io_status_ = std::move(o.io_status_);
  }
  return *this;
}

ArchiveReader::~ArchiveReader() { CloseFd(fd_); }

namespace {

// Chunk types a resynchronisation may land on: the known ones and room for
// those a newer writer adds (stream.h), not arbitrary words.
constexpr uint32_t kResyncTypeLimit = 64;

std::string HeaderText(uint32_t type, uint32_t payload_bytes) {
  return absl::StrCat("type ", type, ", ", payload_bytes, " bytes");
}

}  // namespace

size_t ArchiveReader::Ensure(uint64_t pos, size_t need) {
  const uint64_t want_end = std::min<uint64_t>(pos + need, file_bytes_);
  if (pos >= file_bytes_) return 0;
  const uint64_t win_end = win_offset_ + window_bytes_;
  if (pos >= win_offset_ && want_end <= win_end) return static_cast<size_t>(win_end - pos);
  // Keep what is buffered from `pos` on, at the front; read the rest.
  size_t keep = 0;
  if (pos >= win_offset_ && pos < win_end) {
    keep = static_cast<size_t>(win_end - pos);
    std::memmove(buf_.data(), buf_.data() + (pos - win_offset_), keep);
  }
  win_offset_ = pos;
  window_bytes_ = keep;
  if (need > buf_.size()) {
    buf_.resize(std::min<size_t>(std::max(need, buf_.size() * 2),
                                 size_t{kMaxChunkPayload} + kChunkHeaderBytes));
  }
  while (win_offset_ + window_bytes_ < want_end) {
    const ssize_t n = ::pread(fd_, buf_.data() + window_bytes_, buf_.size() - window_bytes_,
                              static_cast<off_t>(win_offset_ + window_bytes_));
    if (n < 0) {
      if (errno == EINTR) continue;
      io_status_ = ArchiveErrno("read failed", path_);
      return 0;
    }
    if (n == 0) {  // shorter than it was: the end is here
      file_bytes_ = win_offset_ + window_bytes_;
      break;
    }
    window_bytes_ += static_cast<size_t>(n);
  }
  return static_cast<size_t>(win_offset_ + window_bytes_ - pos);
}

uint64_t ArchiveReader::FindNextChunk(uint64_t pos, uint64_t hint) {
  // Whole and valid at `q`: a plausible header, the whole payload in the
  // file, and a matching checksum.
  auto valid_at = [this](uint64_t q) {
    if (Ensure(q, kChunkHeaderBytes) < kChunkHeaderBytes) return false;
    uint32_t type, payload_bytes;
    std::memcpy(&type, At(q), 4);
    std::memcpy(&payload_bytes, At(q) + 4, 4);
    if (type == 0 || type >= kResyncTypeLimit || payload_bytes > kMaxChunkPayload) return false;
    const size_t frame = size_t{kChunkHeaderBytes} + payload_bytes;
    if (Ensure(q, frame) < frame) return false;
    uint64_t sum;
    std::memcpy(&sum, At(q) + 8, 8);
    return ChunkChecksum(type, At(q) + kChunkHeaderBytes, payload_bytes) == sum;
  };
  if (hint > pos && valid_at(hint)) return hint;
  for (uint64_t q = pos + 1; q + kChunkHeaderBytes <= file_bytes_ && io_status_.ok(); ++q) {
    // Cheap filter first, on the bytes already buffered.
    if (q >= win_offset_ && q + kChunkHeaderBytes <= win_offset_ + window_bytes_) {
      uint32_t type, payload_bytes;
      std::memcpy(&type, At(q), 4);
      std::memcpy(&payload_bytes, At(q) + 4, 4);
      if (type == 0 || type >= kResyncTypeLimit || payload_bytes > kMaxChunkPayload) continue;
    }
    if (valid_at(q)) return q;
  }
  return 0;
}

bool ArchiveReader::AllZeroFrom(uint64_t pos) {
  while (pos < file_bytes_) {
    const size_t n = Ensure(pos, std::min<uint64_t>(file_bytes_ - pos, 1 << 20));
    if (n == 0) return io_status_.ok();
    const uint8_t* p = At(pos);
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != 0) return false;
    }
    pos += n;
  }
  return true;
}

void ArchiveReader::NoteRecords(const ChunkFrame& f) {
  if (f.type != static_cast<uint32_t>(ChunkType::kRecords) ||
      f.payload_bytes < kRecordsHeaderBytes ||
      (f.payload_bytes - kRecordsHeaderBytes) % sizeof(abi::Record) != 0) {
    return;  // not records, or malformed (DispatchChunk counts those)
  }
  RingKey key;
  uint64_t first_index;
  std::memcpy(&key.process_id, f.payload, 4);
  std::memcpy(&key.slot, f.payload + 4, 4);
  std::memcpy(&key.generation, f.payload + 8, 8);
  std::memcpy(&first_index, f.payload + 16, 8);
  const uint64_t count = (f.payload_bytes - kRecordsHeaderBytes) / sizeof(abi::Record);
  auto [it, inserted] = ring_ends_.try_emplace(key);
  RingEnd& ring = it->second;
  if (!inserted && ring.skips_seen < corrupt_chunks_ && first_index > ring.end_index) {
    // The ring's records between its last chunk and this one were in the
    // first skip after that chunk.
    const uint64_t gap = first_index - ring.end_index;
    corrupt_records_lost_ += gap;
    if (ring.skips_seen < skips_.size()) {
      skips_[ring.skips_seen].records_lost += gap;
      ++skips_[ring.skips_seen].rings_with_gaps;
    }
  }
  if (inserted || first_index + count > ring.end_index) ring.end_index = first_index + count;
  ring.skips_seen = corrupt_chunks_;
}

void ArchiveReader::NoteSkip(uint64_t offset, uint64_t bytes, std::string reason, bool to_end) {
  if (skips_.size() < kMaxListedSkips) {
    skips_.push_back(CorruptSkip{.offset = offset,
                                 .bytes = bytes,
                                 .reason = std::move(reason),
                                 .to_end = to_end});
  }
  ++corrupt_chunks_;
}

absl::Status ArchiveReader::ReadAll(ChunkVisitor* visitor) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": reader closed"));
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ArchiveErrno("cannot stat", path_);
  file_bytes_ = std::min<uint64_t>(static_cast<uint64_t>(st.st_size), stop_at_);
  buf_.assign(std::max<size_t>(read_buffer_bytes_, kChunkHeaderBytes), 0);
  win_offset_ = valid_bytes_;
  window_bytes_ = 0;
  uint64_t pos = valid_bytes_;
  while (true) {
    const size_t head = Ensure(pos, kChunkHeaderBytes);
    if (!io_status_.ok()) break;
    if (head == 0) break;  // the end, after a whole chunk
    std::string reason;
    uint64_t hint = 0;
    bool runs_past_end = false;
    if (head < kChunkHeaderBytes) {
      runs_past_end = true;
      reason = "chunk header cut short by the end of the file";
    } else {
      uint32_t type, payload_bytes;
      std::memcpy(&type, At(pos), 4);
      std::memcpy(&payload_bytes, At(pos) + 4, 4);
      if (type == 0 || payload_bytes > kMaxChunkPayload) {
        reason = absl::StrCat("impossible chunk header (", HeaderText(type, payload_bytes), ")");
      } else {
        const size_t frame = size_t{kChunkHeaderBytes} + payload_bytes;
        if (Ensure(pos, frame) < frame) {
          if (!io_status_.ok()) break;
          runs_past_end = true;
          reason = absl::StrCat("chunk (", HeaderText(type, payload_bytes),
                                ") runs past the end of the file");
        } else {
          absl::StatusOr<ChunkFrame> f = ParseChunkFrame(At(pos), frame);
          if (f.ok()) {
            NoteRecords(*f);
            if (!DispatchChunk(*f, visitor).ok()) ++malformed_chunks_;
            pos += frame;
            valid_bytes_ = pos;
            continue;
          }
          reason = std::string(f.status().message());
          hint = pos + frame;
        }
      }
    }
    // Torn or corrupt at `pos`: go on at the next valid chunk, if there is one.
    const uint64_t next = FindNextChunk(pos, hint);
    if (!io_status_.ok()) break;
    if (next != 0) {
      NoteSkip(pos, next - pos, std::move(reason), /*to_end=*/false);
      pos = next;
      continue;
    }
    // Nothing valid follows. A chunk cut short by the end of the file, or a
    // tail of zeros (space allocated but never written, as a crash leaves
    // it), is a torn tail: cut there. Anything else is a corrupt tail: kept.
    if (runs_past_end || AllZeroFrom(pos)) {
      torn_tail_ = true;
      valid_bytes_ = pos;
    } else {
      NoteSkip(pos, file_bytes_ - pos, absl::StrCat(reason, "; no valid chunk after it"),
               /*to_end=*/true);
      valid_bytes_ = file_bytes_;
    }
    break;
  }
  buf_ = std::vector<uint8_t>();  // the memory goes with the reading
  window_bytes_ = 0;
  if (!io_status_.ok()) return io_status_;
  return absl::OkStatus();
}

}  // namespace ticktrace::collect
