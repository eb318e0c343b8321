#include "collector/stream/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/stream/private_file.h"

namespace ticktrace::collect {

std::string JournalPath(const std::string& db_path) { return db_path + ".ttjournal"; }

absl::StatusOr<Journal::Recovered> Journal::Recover(const std::string& path, ChunkVisitor* visitor,
                                                    uint64_t from_offset, uint64_t until) {
  absl::StatusOr<ArchiveReader> reader = ArchiveReader::Open(path);
  if (!reader.ok()) return reader.status();
  if (reader->header().kind != ArchiveKind::kJournal) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a ticktrace journal"));
  }
  if (from_offset > 0) reader->StartAt(from_offset);
  reader->StopAt(until);
  if (absl::Status s = reader->ReadAll(visitor); !s.ok()) return s;
  Recovered r;
  r.run_id = static_cast<int64_t>(reader->header().run_id);
  r.valid_bytes = reader->valid_bytes();
  r.torn_tail = reader->torn_tail();
  r.malformed_chunks = reader->malformed_chunks();
  r.corrupt_chunks = reader->corrupt_chunks();
  r.corrupt_records_lost = reader->corrupt_records_lost();
  r.corrupt_skips = reader->corrupt_skips();
  return r;
}

absl::StatusOr<Journal> Journal::Create(const std::string& path, int64_t run_id,
                                        bool group_readable) {
  ArchiveHeader h;
  h.kind = ArchiveKind::kJournal;
  h.run_id = static_cast<uint64_t>(run_id);
  absl::StatusOr<ArchiveWriter> w =
      ArchiveWriter::Create(path, h, /*durable=*/true, group_readable);
  if (!w.ok()) return w.status();
  return Journal(std::move(*w));
}

absl::StatusOr<Journal> Journal::Continue(const std::string& path, const Recovered& recovered) {
  absl::StatusOr<ArchiveWriter> w =
      ArchiveWriter::OpenForAppend(path, recovered.valid_bytes, /*durable=*/true);
  if (!w.ok()) return w.status();
  return Journal(std::move(*w));
}

absl::Status Journal::AppendDurable(std::string_view chunks) {
  const uint64_t before = writer_.bytes_written();
  absl::Status s = writer_.Append(chunks);
  if (!s.ok()) return s;  // nothing of `chunks` is in the file
  const auto t0 = std::chrono::steady_clock::now();
  s = writer_.Sync();
  const uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - t0)
                                                .count());
  ++syncs_;
  sync_ns_total_ += ns;
  sync_ns_max_ = std::max(sync_ns_max_, ns);
  if (!s.ok()) {
    // After a failed fdatasync the pages' fate is unknown (the kernel may
    // have dropped them): cut the chunks off, so that a retry writes them again.
    writer_.Rollback(before).IgnoreError();
  }
  return s;
}

namespace {

// The bytes FreeBefore keeps: the header and the leading run info chunk (a
// restart reads the run's calibration from them: collector.cc,
// ReadLeadingRunInfo). `fd` is open on the journal.
absl::StatusOr<uint64_t> KeptPrefixBytes(int fd, const std::string& path) {
  uint32_t first_payload = 0;
  if (::pread(fd, &first_payload, 4, kArchiveHeaderBytes + 4) != 4) {
    return absl::InternalError(absl::StrCat(path, ": cannot read"));
  }
  return uint64_t{kArchiveHeaderBytes} + kChunkHeaderBytes + first_payload;
}

}  // namespace

absl::StatusOr<bool> Journal::StartFreed(const std::string& path) {
  absl::StatusOr<int> opened = OpenOwnFileForReading(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  absl::StatusOr<uint64_t> keep = KeptPrefixBytes(fd, path);
  struct stat st {};
  off_t hole = -1;
  if (keep.ok() && ::fstat(fd, &st) == 0) hole = ::lseek(fd, static_cast<off_t>(*keep), SEEK_HOLE);
  ::close(fd);
  if (!keep.ok()) return keep.status();
  // Appends never leave a hole, so one before the end (which SEEK_HOLE
  // reports as the first hole when there is none) is FreeBefore's. A file
  // system without holes reports none, and could not punch one either.
  if (hole < 0) return absl::InternalError(absl::StrCat(path, ": cannot look for holes"));
  return hole < st.st_size;
}

absl::Status Journal::FreeBefore(uint64_t offset) {
  if (offset <= freed_before_) return absl::OkStatus();
  const int fd = ::open(writer_.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return absl::InternalError(absl::StrCat(writer_.path(), ": cannot open"));
  absl::StatusOr<uint64_t> keep = KeptPrefixBytes(fd, writer_.path());
  ::close(fd);
  if (!keep.ok()) return keep.status();
  absl::Status s = writer_.PunchHole(*keep, std::min(offset, writer_.bytes_written()));
  if (s.ok()) freed_before_ = offset;
  return s;
}

absl::Status Journal::Remove() {
  const std::string path = writer_.path();
  absl::Status s = writer_.Close();
  if (::unlink(path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(path, ": cannot remove journal"));
  }
  return s;
}

absl::StatusOr<JournalTail> JournalTail::Open(const std::string& path, uint64_t offset) {
  absl::StatusOr<int> fd = OpenOwnFileForReading(path);
  if (!fd.ok()) return fd.status();
  return JournalTail(*fd, path, offset);
}

JournalTail::JournalTail(JournalTail&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      offset_(other.offset_),
      malformed_chunks_(other.malformed_chunks_),
      buf_(std::move(other.buf_)) {}

JournalTail& JournalTail::operator=(JournalTail&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    offset_ = other.offset_;
    malformed_chunks_ = other.malformed_chunks_;
    buf_ = std::move(other.buf_);
  }
  return *this;
}

JournalTail::~JournalTail() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status JournalTail::Dispatch(uint64_t end, size_t max_bytes, ChunkVisitor* visitor) {
  if (end <= offset_) return absl::OkStatus();
  // Read up to `max_bytes` (more when one chunk is larger) into buf_, which
  // never shrinks: a steady run neither allocates nor clears it per batch.
  const uint64_t want = std::min<uint64_t>(end - offset_, std::max<size_t>(max_bytes, 1));
  size_t have = 0;
  if (buf_.size() < want) buf_.resize(static_cast<size_t>(want));
  while (have < want) {
    const ssize_t n = ::pread(fd_, buf_.data() + have, static_cast<size_t>(want) - have,
                              static_cast<off_t>(offset_ + have));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "the file is shorter";
      offset_ = end;  // skipped: the run goes on with what follows
      return absl::DataLossError(
          absl::StrCat(path_, ": cannot read the journal at byte ", offset_, ": ", why));
    }
    have += static_cast<size_t>(n);
  }
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data());
  size_t at = 0;
  while (at < have) {
    absl::StatusOr<ChunkFrame> f = ParseChunkFrame(p + at, have - at);
    if (absl::IsOutOfRange(f.status())) {
      // The batch ends inside a chunk: read that chunk whole next (its
      // header first when that is cut too; ParseChunkFrame has checked the
      // payload size against kMaxChunkPayload when the header is whole).
      size_t need = kChunkHeaderBytes;
      if (have - at >= kChunkHeaderBytes) {
        uint32_t payload = 0;
        std::memcpy(&payload, p + at + 4, 4);
        need += payload;
      }
      if (offset_ + at + need > end) {
        f = absl::DataLossError("a chunk runs past the durable end");
      } else {
        offset_ += at;
        return Dispatch(end, need, visitor);
      }
    }
    if (!f.ok()) {
      const uint64_t bad = offset_ + at;
      offset_ = end;
      return absl::DataLossError(absl::StrCat(path_, ": at byte ", bad, ": ", f.status().message(),
                                              "; the journal up to byte ", end, " skipped"));
    }
    if (!DispatchChunk(*f, visitor).ok()) ++malformed_chunks_;
    at += f->frame_bytes;
  }
  offset_ += at;
  return absl::OkStatus();
}

}  // namespace ticktrace::collect
