// The collector's journal: an append-only file of chunks (archive format,
// kind kJournal) beside the store, `<db>.ttjournal`. It is what makes draining
// exactly-once across a SIGKILL (docs/collector.md#exactly-once-into-the-store):
//
//   1. a drain pass copies records out of the rings and encodes them, with
//      their ring index ranges, as chunks;
//   2. Append() + Sync() make the chunks durable (one fdatasync per pass);
//   3. only then is each ring's read_index advanced (SegmentReader::Commit);
//   4. only then are the chunks analysed (on the analysis thread) and stored
//      (on the store writer thread).
// A restarted collector replays the journal through the same Analyzer, which
// rebuilds open orders, statistics and per-ring high-water marks; the store
// ignores orders it already holds; records at or below a mark are skipped when
// the rings are read again. The store may lag the journal; the rings never
// wait for the store. The journal is removed when a run ends cleanly.
//
// Journal: single owner thread (the collector's drain thread); the analysis
// thread reads the same file through a JournalTail of its own.

#ifndef TICKTRACE_COLLECTOR_JOURNAL_H_
#define TICKTRACE_COLLECTOR_JOURNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/stream/archive.h"
#include "collector/stream/stream.h"

namespace ticktrace::collect {

// The journal that belongs to the store at `db_path`.
std::string JournalPath(const std::string& db_path);

class Journal {
 public:
  // What Recover found.
  struct Recovered {
    int64_t run_id = 0;
    uint64_t valid_bytes = 0;
    bool torn_tail = false;
    uint64_t malformed_chunks = 0;
    // Corrupt chunks skipped (resynchronised at the next valid chunk; their
    // records are lost): ArchiveReader::ReadAll.
    uint64_t corrupt_chunks = 0;
    uint64_t corrupt_records_lost = 0;    // known from ring index gaps (a lower bound)
    std::vector<CorruptSkip> corrupt_skips;  // the first ArchiveReader::kMaxListedSkips
  };

  // Reads an existing journal and dispatches every whole chunk to `visitor`,
  // skipping corrupt chunks (Recovered says which). NotFound when there is
  // none; InvalidArgument when the file is not a journal; Internal when it
  // cannot be read.
  // `from_offset`: a checkpoint's journal offset (collector/stream/checkpoint.h):
  // only the chunks from there on are read; 0 reads them all. `until`: read
  // as if the file ended there (a journal appended to meanwhile: the
  // valid_bytes of an earlier Recover of it).
  static absl::StatusOr<Recovered> Recover(const std::string& path, ChunkVisitor* visitor,
                                           uint64_t from_offset = 0, uint64_t until = UINT64_MAX);

  // Starts a new journal for `run_id`. The file must not exist; it is created
  // 0600 (0640 with `group_readable`), never through a symlink (private_file.h).
  static absl::StatusOr<Journal> Create(const std::string& path, int64_t run_id,
                                        bool group_readable = false);
  // Continues a recovered journal at recovered.valid_bytes (cuts a torn tail;
  // a corrupt chunk, even at the end, stays, so that every later recovery
  // finds and counts it again).
  static absl::StatusOr<Journal> Continue(const std::string& path, const Recovered& recovered);

  // Appends whole chunks and makes them durable (fdatasync) before returning.
  // On an error none of `chunks` stays in the journal, so the caller may
  // retry with the same bytes; ResourceExhausted when the file system is full.
  absl::Status AppendDurable(std::string_view chunks);
  // Frees the disk space of the journal before `offset` (a checkpoint's,
  // durable), keeping the header and the leading run info chunk, so that the
  // journal on disk is what came after the last checkpoint. The file keeps
  // its length (the freed part is a hole). Unimplemented where the file
  // system cannot punch holes; the journal then keeps growing.
  absl::Status FreeBefore(uint64_t offset);
  // Whether the journal at `path` has been freed before some offset
  // (FreeBefore by the run that wrote it): it has a hole after its run info.
  static absl::StatusOr<bool> StartFreed(const std::string& path);
  // Bytes the journal takes on disk now.
  uint64_t disk_bytes() const { return writer_.DiskBytes(); }
  uint64_t freed_before() const { return freed_before_; }

  // Closes and deletes the journal (the run ended cleanly and is in the store).
  absl::Status Remove();

  uint64_t syncs() const { return syncs_; }
  uint64_t sync_ns_total() const { return sync_ns_total_; }
  uint64_t sync_ns_max() const { return sync_ns_max_; }
  uint64_t bytes() const { return writer_.bytes_written(); }
  const std::string& path() const { return writer_.path(); }

 private:
  explicit Journal(ArchiveWriter writer) : writer_(std::move(writer)) {}
  ArchiveWriter writer_;
  uint64_t syncs_ = 0;
  uint64_t sync_ns_total_ = 0;
  uint64_t sync_ns_max_ = 0;
  uint64_t freed_before_ = 0;
};

// The analysis stage's reading side of a live journal: the chunks from an
// offset on, read back (pread, from the page cache: they were just written)
// up to the durable end the drain stage publishes (drain_progress.h). Its own
// read-only descriptor, so it shares nothing with the Journal the drain
// thread appends through. Single owner thread (the analysis thread).
class JournalTail {
 public:
  // Opens `path` to read from byte `offset` (a chunk boundary).
  static absl::StatusOr<JournalTail> Open(const std::string& path, uint64_t offset);
  JournalTail(JournalTail&& other) noexcept;
  JournalTail& operator=(JournalTail&& other) noexcept;
  ~JournalTail();

  // Dispatches the whole chunks in [offset(), min(end, offset() + max_bytes
  // rounded up to a whole chunk)) to `visitor`. REQUIRES: `end` is a chunk
  // boundary at or before the durable end. A chunk whose checksum or header
  // does not hold (the file changed under us) is DataLoss: the rest up to
  // `end` is skipped, so that the run goes on; a malformed payload is
  // skipped and counted (malformed_chunks()), as a recovery counts it.
  absl::Status Dispatch(uint64_t end, size_t max_bytes, ChunkVisitor* visitor);

  uint64_t offset() const { return offset_; }
  uint64_t malformed_chunks() const { return malformed_chunks_; }

 private:
  JournalTail(int fd, std::string path, uint64_t offset)
      : fd_(fd), path_(std::move(path)), offset_(offset) {}
  int fd_ = -1;
  std::string path_;
  uint64_t offset_ = 0;
  uint64_t malformed_chunks_ = 0;
  // The batch read from offset_ on; its size is the largest batch so far.
  std::string buf_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_JOURNAL_H_
