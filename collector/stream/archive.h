// Files of chunks (collector/stream/stream.h): raw archives (--raw, --replay) and the
// journal share this format.
//
// File layout (little-endian):
//   +0  u64 magic  kArchiveMagic ("TTARCHV1")
//   +8  u32 format version (kArchiveVersion; read: kOldestArchiveVersion..kArchiveVersion)
//   +12 u32 header bytes (32)
//   +16 u32 kind (ArchiveKind)
//   +20 u32 reserved (0)
//   +24 u64 run_id (journal: the store's run the journal belongs to; archive: 0)
//   +32 chunks, back to back
//
// A reader refuses a file whose magic, version or header size it does not
// know. A torn tail (a chunk cut short by a crash) ends the readable part.
// A corrupt chunk (impossible header or checksum mismatch) is skipped: the
// reader resynchronises at the next offset where a whole valid chunk starts
// (ArchiveReader::ReadAll) and reports what it skipped.

#ifndef TICKTRACE_COLLECTOR_ARCHIVE_H_
#define TICKTRACE_COLLECTOR_ARCHIVE_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/stream/stream.h"

namespace ticktrace::collect {

inline constexpr uint64_t kArchiveMagic = 0x3156484352415454ull;  // "TTARCHV1" little-endian
// Version 2: the chunks may hold records of kind kExternal (ABI version 3,
// stamp_at), which a reader of version 1 does not know; it refuses the file
// in one line instead of counting those records malformed. A version 1 file
// holds none, so it reads as it is.
inline constexpr uint32_t kArchiveVersion = 2;
inline constexpr uint32_t kOldestArchiveVersion = 1;
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
  // `group_readable` (collector/stream/private_file.h), and writes the header.
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

  // Appends whole chunks (write(2) loop; no user-space buffering). On an
  // error nothing of `chunk_bytes` stays in the file (Rollback); a full file
  // system (ENOSPC, EDQUOT) is ResourceExhausted, and the caller may retry.
  absl::Status Append(std::string_view chunk_bytes);
  // Cuts the file back to `bytes` (<= bytes_written()): what was appended
  // after it, e.g. chunks whose Sync() failed, is gone.
  absl::Status Rollback(uint64_t bytes);
  // Frees the disk blocks of bytes [from, to), rounded inwards to 4 KiB
  // (fallocate PUNCH_HOLE, KEEP_SIZE): offsets stay, the bytes read as
  // zeros. Unimplemented where the file system cannot punch holes.
  absl::Status PunchHole(uint64_t from, uint64_t to);
  // Bytes the file takes on disk (st_blocks), which holes do not count.
  uint64_t DiskBytes() const;
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

// One stretch of bytes ArchiveReader skipped to resynchronise after a
// corrupt chunk.
struct CorruptSkip {
  uint64_t offset = 0;  // file offset of the corrupt chunk
  uint64_t bytes = 0;   // bytes skipped (to the next valid chunk, or to the end)
  std::string reason;   // what was wrong at `offset`
  bool to_end = false;  // no valid chunk follows (a corrupt tail)
  // Records known lost: the ring index gaps that the next kRecords chunk of
  // each ring seen before the skip shows. A lower bound (a ring with no later
  // chunk shows nothing); `rings_with_gaps` 0 means the loss is unknown.
  uint64_t records_lost = 0;
  uint32_t rings_with_gaps = 0;
};

// One line (no newline) that says what a skip lost, for stderr:
// "<what>: corrupt chunk at byte B (<reason>): skipped N bytes ...; R records lost ...".
std::string CorruptSkipLine(std::string_view what, const CorruptSkip& skip);

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
  // file, or at a chunk that is torn (a header whose chunk runs past the end
  // of the file, or a tail of zero bytes: `torn_tail` set). A corrupt chunk
  // (impossible header, checksum mismatch) is skipped: the reader scans
  // forward for the next offset where a whole valid chunk starts (type in
  // [1, 64), size within kMaxChunkPayload, checksum matching; it tries the
  // end of the bad chunk as its header says first), goes on from there, and
  // records the skip (corrupt_skips()). Memory stays bounded by the read
  // buffer (at most one largest chunk). Chunks with malformed payloads are
  // skipped and counted in `malformed_chunks`. Non-OK only for read errors.
  // After return, valid_bytes() is where an appender continues: the end of
  // the last whole chunk, or the end of a corrupt tail (kept, so that a later
  // reading finds and counts it again; only a torn tail is cut).
  absl::Status ReadAll(ChunkVisitor* visitor);
  // Makes ReadAll start at byte `offset` (a chunk boundary, e.g. a
  // checkpoint's journal offset) instead of after the header.
  void StartAt(uint64_t offset) { valid_bytes_ = std::max<uint64_t>(offset, kArchiveHeaderBytes); }
  // Makes ReadAll read as if the file ended at byte `end` (a live journal
  // that grows while it is read: what a first reading found whole).
  void StopAt(uint64_t end) { stop_at_ = end; }

  uint64_t valid_bytes() const { return valid_bytes_; }
  bool torn_tail() const { return torn_tail_; }
  uint64_t malformed_chunks() const { return malformed_chunks_; }
  // Every skip (the first kMaxListedSkips; corrupt_chunks() counts them all).
  static constexpr size_t kMaxListedSkips = 1000;
  const std::vector<CorruptSkip>& corrupt_skips() const { return skips_; }
  uint64_t corrupt_chunks() const { return corrupt_chunks_; }
  // Sum of the skips' records_lost (of all skips, listed or not).
  uint64_t corrupt_records_lost() const { return corrupt_records_lost_; }

 private:
  // Where each ring's records end, to measure what a skip lost.
  struct RingEnd {
    uint64_t end_index = 0;   // one past the last ring index seen
    uint64_t skips_seen = 0;  // corrupt_chunks_ when it was seen
  };
  struct RingKey {
    uint32_t process_id, slot;
    uint64_t generation;
    bool operator==(const RingKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const RingKey& k) {
      return H::combine(std::move(h), k.process_id, k.slot, k.generation);
    }
  };
  // Makes buf_ hold the file's bytes from `pos` on, at least `need` of them
  // unless the file ends first; returns how many it holds from `pos` (0 at
  // the end, or after a read error: io_status_).
  size_t Ensure(uint64_t pos, size_t need);
  const uint8_t* At(uint64_t pos) const { return buf_.data() + (pos - win_offset_); }
  // The offset of the next whole valid chunk after the corrupt one at `pos`
  // (`hint`, the end of the bad chunk as its header says, tried first; 0:
  // none), or 0 when there is none before the end of the file.
  uint64_t FindNextChunk(uint64_t pos, uint64_t hint);
  bool AllZeroFrom(uint64_t pos);
  void NoteRecords(const ChunkFrame& f);
  void NoteSkip(uint64_t offset, uint64_t bytes, std::string reason, bool to_end);

  ArchiveReader() = default;
  int fd_ = -1;
  std::string path_;
  ArchiveHeader header_;
  uint64_t valid_bytes_ = 0;
  bool torn_tail_ = false;
  uint64_t malformed_chunks_ = 0;
  size_t read_buffer_bytes_ = kDefaultReadBufferBytes;
  std::vector<CorruptSkip> skips_;
  uint64_t corrupt_chunks_ = 0;
  uint64_t corrupt_records_lost_ = 0;
  absl::flat_hash_map<RingKey, RingEnd> ring_ends_;
  // ReadAll's window on the file: buf_[0, window_bytes_) holds the bytes at
  // [win_offset_, win_offset_ + window_bytes_).
  std::vector<uint8_t> buf_;
  uint64_t win_offset_ = 0;
  size_t window_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t stop_at_ = UINT64_MAX;
  absl::Status io_status_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_ARCHIVE_H_
