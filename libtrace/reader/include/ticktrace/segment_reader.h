// The consumer side of a segment (layout: ticktrace/abi.h): discovery, validation
// and draining. Used by the collector and by tests; never by traced processes.
//
// Every byte of a segment is untrusted input, and so is the file itself
// (docs/security.md). Open() refuses, before it maps or allocates anything:
// a name that is not a regular file (a symlink, a FIFO), a file whose owner
// (fstat on the opened descriptor) is neither this process's effective uid
// nor an allowed uid, a header whose sizes disagree with the file's real
// size, and a segment that has reserved more than SegmentOpenLimits allows
// (abi::ReservedBytes: the header, the slot headers and the rings ever
// claimed; not the sparse geometry). It reads the header with pread(), copies
// the geometry once, and later reads use only that copy, so a segment
// overwritten under the reader cannot steer it out of bounds.
//
// What is mapped: the header, the tag table, every slot's control lines and
// the records of the rings claimed so far, each at its own offset inside one
// inaccessible reservation of the geometry's size. A ring claimed later is
// mapped by the first Peek() that finds records in it, after the same limit
// check; the holes of rings never claimed are never mapped.
//
// A segment shrunk (ftruncate) under the reader would make a read of the
// mapping raise SIGBUS. Every access to the mapping runs under a guard: a
// SIGBUS inside this reader's mapping, on the thread using it, abandons that
// access, and the reader becomes truncated(): from then on it reads nothing
// (Peek says DataLoss, Slot and counters read as empty) and the caller drops
// it. A SIGBUS anywhere else keeps its default action.
// Problems come back as absl::Status with the segment's name, never as a crash.
//
// A SegmentReader is the segment's single consumer: one thread of one
// collector may use it at a time. It maps the segment read-write because it
// writes each slot's read_index (and frees retired slots); it never writes a
// line the producer writes on its hot path.

#ifndef TICKTRACE_SEGMENT_READER_H_
#define TICKTRACE_SEGMENT_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/abi.h"
#include "ticktrace/trace.h"  // SegmentName, kMaxSegmentNameSuffix

namespace ticktrace {

// A segment name split into its parts.
struct SegmentId {
  std::string name;     // "ticktrace.<session>.<pid>[.<suffix>]", the shm object name
  std::string session;
  uint32_t pid = 0;
  uint32_t suffix = 0;  // 0: none; 1..kMaxSegmentNameSuffix: the plain name was taken
  // The file under that name when it was listed (ListSegments: /dev/shm's
  // device and the entry's inode; 0 when not listed): a refused file is
  // remembered by these, so that renaming it does not make it new.
  uint64_t device = 0;
  uint64_t inode = 0;
};

// Parses "ticktrace.<session>.<pid>" and "ticktrace.<session>.<pid>.<n>"
// (n in 1..kMaxSegmentNameSuffix); InvalidArgument for anything else.
absl::StatusOr<SegmentId> ParseSegmentName(std::string_view name);

// Segments of `session` present now (scans /dev/shm), by pid then suffix,
// each with its device and inode (no system call per entry: readdir's d_ino).
// Unparseable names are skipped.
absl::StatusOr<std::vector<SegmentId>> ListSegments(std::string_view session);

// Removes a segment's shm object. NotFound if it is not there.
absl::Status RemoveSegment(std::string_view name);

// /proc/<pid>/stat field 22 (start time in clock ticks since boot); NotFound when
// the process does not exist. With the pid, it identifies a process across pid reuse.
absl::StatusOr<uint64_t> ReadProcessStartTicks(uint32_t pid);

// False only when the process is certainly gone: `pid` does not exist, or it
// started at another time than `start_ticks` (pid reuse). When its start time
// cannot be read, or `start_ticks` is 0 (unknown), a process whose pid exists
// counts as alive: its segment must not be removed on a guess.
bool ProcessAlive(uint32_t pid, uint64_t start_ticks);

// Checks one drained record: a known kind, known flag bits, and a tag id below
// `tag_count` (for kinds that carry a tag). kTagInvalid is reported as
// OutOfRange "tag table was full" so it can be counted apart from corruption.
absl::Status ValidateRecord(const abi::Record& record, uint32_t tag_count);

// Geometry and identity of a segment, copied and validated at Open().
struct SegmentInfo {
  std::string name;
  uint32_t pid = 0;
  uint64_t process_start_ticks = 0;
  std::string process_name;
  uint64_t anchor_tsc = 0;
  int64_t anchor_realtime_ns = 0;
  uint32_t ring_capacity = 0;
  uint32_t slot_count = 0;
  uint32_t tag_capacity = 0;
  uint64_t segment_size = 0;    // the sparse geometry: what the file is sized to
  uint32_t rings_claimed = 0;   // at Open(): slots with generation != 0
  uint64_t reserved_bytes = 0;  // at Open(): abi::ReservedBytes with rings_claimed
};

// The producer-side counters of the header, read at one moment.
struct SegmentCounters {
  uint64_t tags_rejected = 0;
  uint64_t threads_without_slot = 0;
  uint64_t slotless_dropped = 0;
  uint64_t rings_refused = 0;       // of threads_without_slot: /dev/shm could not hold their ring
  uint32_t last_refusal_errno = 0;  // why the latest was refused (ENOSPC: /dev/shm full); 0: none
};

// One slot's control words, read at one moment.
struct SlotView {
  uint32_t state = abi::kSlotFree;  // abi::SlotState
  uint32_t tid = 0;
  uint64_t generation = 0;
  std::string thread_name;
  uint64_t write_index = 0;
  uint64_t read_index = 0;
  uint64_t dropped = 0;
};

// The most a segment may have reserved (abi::ReservedBytes) for Open() to
// map it, by default: 64 GiB. libtrace's largest ring (kMaxRingCapacity,
// 2^24 records, 512 MiB) in each of its default 64 rings reserves 32 GiB and
// a little; 64 GiB leaves room for twice the rings. What a producer reserves is
// bounded by /dev/shm; the limit keeps one segment from taking the
// collector's whole address space and page tables. The collector's
// --max-segment-bytes changes it.
inline constexpr uint64_t kDefaultMaxSegmentBytes = uint64_t{64} << 30;

// Whose segments Open() accepts and how large.
struct SegmentOpenLimits {
  std::vector<uint32_t> allowed_uids;  // owners accepted besides this process's effective uid
  uint64_t max_segment_bytes = kDefaultMaxSegmentBytes;
  // The newest ABI version accepted: abi::kAbiVersion. Lower only to read as a
  // reader built against that older version would (tests of the refusal).
  uint32_t newest_abi_version = abi::kAbiVersion;
};

// Why Open() refused a segment; the collector counts each kind apart.
enum class SegmentRefusal : uint8_t {
  kNone = 0,
  kNotReady,    // magic not published yet (may be mid-creation): try again later
  kForeign,     // owned by a uid that is neither ours nor allowed
  kUnreadable,  // open(2) or fstat(2) failed (errno says why: EACCES for another's 0600 file)
  kOversized,   // it reserved more than SegmentOpenLimits::max_segment_bytes
  kCorrupt,     // not a regular file, or a header that does not hold together
};

// The details of a refusal, filled by Open() when it fails.
struct SegmentOpenError {
  SegmentRefusal refusal = SegmentRefusal::kNone;
  uint32_t owner_uid = 0;    // the file's owner, when fstat got that far
  int error_number = 0;      // kUnreadable: the errno
  // Records published and not consumed in a refused segment whose header and
  // control lines could be read (pread; nothing mapped): what refusing it
  // leaves undrained at this moment. 0 when they could not be read.
  // Counted only for segments of at most kMaxRingsCounted rings, two preads
  // a ring, so that a hostile header cannot make refusing it expensive;
  // beyond that unconsumed_unknown is true and the count 0.
  uint64_t unconsumed_records = 0;
  bool unconsumed_unknown = false;
  // kOversized: the bytes it has reserved (abi::ReservedBytes), which is the
  // smallest limit that accepts it.
  uint64_t reserved_bytes = 0;
};

// The most rings of a refused segment whose waiting records Open() counts
// (libtrace's default ring count; SegmentOpenError::unconsumed_unknown).
inline constexpr uint32_t kMaxRingsCounted = 64;

class SegmentReader {
 public:
  // Opens, checks and maps the segment `name` (/dev/shm/<name>): a regular
  // file, not a symlink; owned by the effective uid or one of
  // `limits.allowed_uids`; magic, ABI version, record and header sizes and
  // geometry checked, from a pread() copy of the header, against the file's
  // size, and its reserved bytes against `limits.max_segment_bytes`, before
  // anything is mapped. On failure
  // `error` (if given) says which kind of refusal it was.
  static absl::StatusOr<std::unique_ptr<SegmentReader>> Open(
      std::string_view name, const SegmentOpenLimits& limits = SegmentOpenLimits(),
      SegmentOpenError* error = nullptr);

  // As Open(), over `size` bytes at `base` that the caller keeps alive and
  // writable for the reader's lifetime: for fuzzers and tests.
  // REQUIRES: base is aligned to abi::kCacheLineSize.
  static absl::StatusOr<std::unique_ptr<SegmentReader>> OpenMemory(std::string_view name,
                                                                   uint8_t* base, uint64_t size);
  ~SegmentReader();
  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  const SegmentInfo& info() const { return info_; }
  // The owner of the file (fstat at Open(); OpenMemory: this process's euid).
  uint32_t owner_uid() const { return owner_uid_; }
  // True once an access found the file shorter than its mapping (SIGBUS,
  // caught): the segment was shrunk under the reader, which reads nothing more.
  bool truncated() const { return truncated_; }

  SegmentCounters counters() const;

  // Tag names by id, as published now (tag_count clamped to the capacity; names
  // are cut at the first NUL or at abi::kTagNameMax and must be printable,
  // otherwise the entry reads as "" and the result says DataLoss).
  absl::StatusOr<std::vector<std::string>> Tags() const;

  // REQUIRES: slot < info().slot_count.
  SlotView Slot(uint32_t slot) const;

  // Copies up to `max_records` published, unconsumed records of `slot` into
  // `out` (appended) and returns the index one past the last one copied, which
  // is what Commit() later takes. DataLoss if the indices are impossible
  // (write before read, or more published than the ring holds): the slot is
  // corrupt and should be skipped. Does not change the segment.
  // If `generation` is given, it receives the slot's generation read after the
  // records: the claim that wrote every record copied (a slot is reclaimed only
  // once drained, so one Peek never mixes two owners).
  // A ring not mapped yet (claimed after Open()) is mapped first:
  // ResourceExhausted, naming the limit, when its records would take the
  // segment's reserved bytes above it (the ring then stays unmapped), or
  // Unavailable when mmap fails.
  absl::StatusOr<uint64_t> Peek(uint32_t slot, size_t max_records, std::vector<abi::Record>* out,
                                uint64_t* generation = nullptr) const;

  // Marks records below `new_read_index` consumed, so the producer may reuse
  // their cells. Call only after what Peek() copied is durable. False when
  // the segment was found truncated (nothing written).
  // REQUIRES: read_index <= new_read_index <= the value Peek() returned.
  bool Commit(uint32_t slot, uint64_t new_read_index);

  // A retired slot whose records are all consumed goes back to free, for a
  // new thread to claim. Returns true if it did.
  bool FreeIfDrained(uint32_t slot);

  // The batch forms, for a consumer that visits every slot on each pass: one
  // SIGBUS guard (a sigsetjmp) for all slots instead of one per slot.
  // PendingRecords: (*pending)[slot] = records published and not consumed
  // (write_index - read_index, as Peek sees them; more than ring_capacity
  // when the indices are impossible). False when the file was found shrunk.
  bool PendingRecords(std::vector<uint64_t>* pending) const;
  // FreeIfDrained for every slot whose `skip[slot]` is false (skip has
  // slot_count entries); returns how many were freed.
  uint32_t FreeDrainedSlots(const std::vector<bool>& skip);

  // What the segment has reserved as far as this reader knows: at Open(),
  // plus each ring mapped since (abi::ReservedBytes).
  uint64_t reserved_bytes() const { return reserved_bytes_; }

  // The raw mapping, for tests that corrupt a segment on purpose.
  uint8_t* base_for_testing() { return base_; }

 private:
  SegmentReader() = default;
  // Validates `header` (a copy) against `size`, the bytes of the file, and
  // fills the reader's geometry. Maps nothing.
  static absl::StatusOr<std::unique_ptr<SegmentReader>> Validate(const std::string& name,
                                                                 uint32_t name_pid,
                                                                 const abi::SegmentHeader& header,
                                                                 uint64_t size,
                                                                 uint32_t newest_abi_version =
                                                                     abi::kAbiVersion);
  // Maps bytes [begin, end) of the file at the same offset of the reservation.
  bool MapRange(uint64_t begin, uint64_t end) const;
  // Maps `slot`'s records if they are not mapped yet, within the limit.
  absl::Status MapRing(uint32_t slot) const;
  abi::SlotControl* control(uint32_t slot) const;
  const abi::Record* records(uint32_t slot) const;
  // Runs `access` (which reads or writes the mapping) under the SIGBUS guard.
  // False, and truncated() from then on, when the access faulted.
  template <typename Access>
  bool Guarded(Access&& access) const;

  SegmentInfo info_;
  std::shared_ptr<void> mapping_;  // the mapped region; unmapped with the reader
  uint32_t owner_uid_ = 0;
  mutable bool truncated_ = false;
  uint8_t* base_ = nullptr;
  uint64_t mapped_size_ = 0;
  uint64_t tag_table_offset_ = 0;
  uint64_t slots_offset_ = 0;
  uint64_t slot_stride_ = 0;
  // Mapping state; mutable: Peek() maps a newly claimed ring on first use.
  int fd_ = -1;  // owned by mapping_; -1 for OpenMemory (all mapped)
  uint64_t max_segment_bytes_ = UINT64_MAX;
  mutable uint64_t reserved_bytes_ = 0;
  mutable std::vector<bool> ring_mapped_;
};

}  // namespace ticktrace

#endif  // TICKTRACE_SEGMENT_READER_H_
