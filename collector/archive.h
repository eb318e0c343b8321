// Files of chunks (collector/stream.h): raw archives (--raw, --replay) and the
// journal share this format.
//
// File layout (little-endian):
//   +0  u64 magic  kArchiveMagic ("TTARCHV1")
//   +8  u32 format version (kArchiveVersion)
//   +12 u32 header bytes (32)
//   +16 u32 kind (ArchiveKind)
//   +20 u32 reserved (0)
//   +24 u64 run_id (journal: the store's run the journal belongs to; archive: 0)
//   +32 chunks, back to back
//
// A reader refuses a file whose magic, version or header size it does not
// know. A torn tail (a chunk cut short by a crash) ends the readable part.

#ifndef TICKTRACE_COLLECTOR_ARCHIVE_H_
#define TICKTRACE_COLLECTOR_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/stream.h"

namespace ticktrace::collect {

inline constexpr uint64_t kArchiveMagic = 0x3156484352415454ull;  // "TTARCHV1" little-endian
inline constexpr uint32_t kArchiveVersion = 1;
inline constexpr uint32_t kArchiveHeaderBytes = 32;

enum class ArchiveKind : uint32_t {
  kRaw = 1,      // --raw: every drained record, for replay
  kJournal = 2,  // the collector's durable journal beside the store
};

struct ArchiveHeader {
  ArchiveKind kind = ArchiveKind::kRaw;
  uint64_t run_id = 0;
};

// Encodes a file header.
std::string EncodeArchiveHeader(const ArchiveHeader& header);

// Validates and decodes the first kArchiveHeaderBytes of a file.
absl::StatusOr<ArchiveHeader> DecodeArchiveHeader(std::string_view bytes);

// Appends chunk bytes to a new file. Single owner thread.
class ArchiveWriter {
 public:
  // Creates `path` (it must not exist: nothing is ever overwritten; a symlink
  // there is refused, never followed) with mode 0600, or 0640 when
  // `group_readable` (collector/private_file.h), and writes the header.
  // `durable`: Sync() calls fdatasync.
  static absl::StatusOr<ArchiveWriter> Create(const std::string& path,
                                              const ArchiveHeader& header, bool durable,
                                              bool group_readable = false);
  // Opens an existing archive of this uid for appending at byte `valid_bytes`
  // (the file is truncated there first: a torn tail is cut off). A symlink, or
  // a file another uid owns, is refused.
  static absl::StatusOr<ArchiveWriter> OpenForAppend(const std::string& path,
                                                     uint64_t valid_bytes, bool durable);
  ArchiveWriter(ArchiveWriter&& other) noexcept;
  ArchiveWriter& operator=(ArchiveWriter&& other) noexcept;
  ~ArchiveWriter();

  // Appends whole chunks (write(2) loop; no user-space buffering).
  absl::Status Append(std::string_view chunk_bytes);
  // Makes everything appended so far durable (fdatasync) when `durable`.
  absl::Status Sync();
  // Closes the file; further calls fail.
  absl::Status Close();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return size_; }

 private:
  ArchiveWriter(int fd, std::string path, uint64_t size, bool durable)
      : fd_(fd), path_(std::move(path)), size_(size), durable_(durable) {}
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
  bool durable_ = false;
};

// Streams the chunks of an archive file with bounded memory. Single owner thread.
class ArchiveReader {
 public:
  static constexpr size_t kDefaultReadBufferBytes = 8u << 20;

  // Opens `path` and validates the header. ReadAll reads through a buffer of
  // `read_buffer_bytes`, grown when one chunk is larger.
  static absl::StatusOr<ArchiveReader> Open(const std::string& path,
                                            size_t read_buffer_bytes = kDefaultReadBufferBytes);
  ArchiveReader(ArchiveReader&&) noexcept;
  ArchiveReader& operator=(ArchiveReader&&) noexcept;
  ~ArchiveReader();

  const ArchiveHeader& header() const { return header_; }

  // Reads every chunk and dispatches it to `visitor`. Stops at the end of the
  // file, or at the first chunk that is torn (truncated: `torn_tail` set, OK)
  // or corrupt (DataLoss). Chunks with malformed payloads are skipped and
  // counted in `malformed_chunks`. After return, valid_bytes() is the offset
  // of the end of the last whole chunk.
  absl::Status ReadAll(ChunkVisitor* visitor);

  uint64_t valid_bytes() const { return valid_bytes_; }
  bool torn_tail() const { return torn_tail_; }
  uint64_t malformed_chunks() const { return malformed_chunks_; }

 private:
  ArchiveReader() = default;
  int fd_ = -1;
  std::string path_;
  ArchiveHeader header_;
  uint64_t valid_bytes_ = 0;
  bool torn_tail_ = false;
  uint64_t malformed_chunks_ = 0;
  size_t read_buffer_bytes_ = kDefaultReadBufferBytes;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_ARCHIVE_H_
