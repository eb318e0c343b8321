// The collector's record stream: a sequence of typed, checksummed chunks.
//
// Everything the analysis sees arrives as chunks: the live drainer encodes what
// it copies out of the rings, the journal stores exactly those bytes, a raw
// archive is a file of them, and replay, journal recovery and live draining
// all feed the same bytes through the same decoder into the same Analyzer.
// So a replay of an archive, or a restart from a journal, makes exactly the
// decisions the live run made.
//
// Chunk layout (little-endian, no padding):
//   +0  u32 type (ChunkType)
//   +4  u32 payload_bytes (<= kMaxChunkPayload)
//   +8  u64 checksum of (type, payload_bytes, payload)
//   +16 payload
//
// Every byte is untrusted: the decoder checks the checksum, the size of every
// field and string, and returns DataLoss/InvalidArgument instead of reading
// out of bounds.

#ifndef TICKTRACE_COLLECTOR_STREAM_H_
#define TICKTRACE_COLLECTOR_STREAM_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

inline constexpr uint32_t kChunkHeaderBytes = 16;
inline constexpr uint32_t kMaxChunkPayload = 64u << 20;  // 64 MiB
inline constexpr uint32_t kMaxStreamString = 4096;
inline constexpr uint32_t kRecordsHeaderBytes = 24;

enum class ChunkType : uint32_t {
  kRunInfo = 1,          // JSON: calibration, settings, session (first chunk of a journal)
  kProcess = 2,          // a segment was opened: process identity
  kTags = 3,             // tag names of a process (new entries only)
  kThread = 4,           // a slot's owner (per generation)
  kRecords = 5,          // records of one ring, with their ring index range
  kSlotDropped = 6,      // a ring's producer-side drop counter, cumulative
  kProcessCounters = 7,  // the segment header's counters, cumulative
  kProcessExited = 8,    // the process exited; its segment was drained completely
  kClock = 9,            // the collector's TSC at the start of a drain pass
};

struct ProcessChunk {
  uint32_t process_id = 0;  // collector-assigned, unique within a run
  uint32_t pid = 0;
  uint64_t start_ticks = 0;
  uint64_t anchor_tsc = 0;
  int64_t anchor_realtime_ns = 0;
  int64_t first_seen_utc_ns = 0;
  std::string segment;
  std::string name;
};

struct TagsChunk {
  uint32_t process_id = 0;
  std::vector<std::pair<uint16_t, std::string>> tags;  // (tag id, name)
};

struct ThreadChunk {
  uint32_t process_id = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint32_t tid = 0;
  std::string name;
};

// Records are not copied out of the chunk: `records` points into the decoded
// buffer and is valid only during the visitor call. It may be misaligned, so
// read each record with RecordAt().
struct RecordsChunk {
  uint32_t process_id = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint64_t first_index = 0;  // ring index of the first record
  const uint8_t* records = nullptr;
  size_t count = 0;

  abi::Record RecordAt(size_t i) const {
    abi::Record r;
    std::memcpy(&r, records + i * sizeof(abi::Record), sizeof(abi::Record));
    return r;
  }
};

struct SlotDroppedChunk {
  uint32_t process_id = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint64_t dropped_total = 0;
};

struct ProcessCountersChunk {
  uint32_t process_id = 0;
  uint64_t tags_rejected = 0;
  uint64_t threads_without_slot = 0;
  uint64_t slotless_dropped = 0;
};

struct ProcessExitedChunk {
  uint32_t process_id = 0;
  int64_t utc_ns = 0;
};

// Receives decoded chunks. Called on the thread that decodes.
class ChunkVisitor {
 public:
  virtual ~ChunkVisitor() = default;
  virtual void OnRunInfo(std::string_view json) = 0;
  virtual void OnProcess(const ProcessChunk& c) = 0;
  virtual void OnTags(const TagsChunk& c) = 0;
  virtual void OnThread(const ThreadChunk& c) = 0;
  virtual void OnRecords(const RecordsChunk& c) = 0;
  virtual void OnSlotDropped(const SlotDroppedChunk& c) = 0;
  virtual void OnProcessCounters(const ProcessCountersChunk& c) = 0;
  virtual void OnProcessExited(const ProcessExitedChunk& c) = 0;
  virtual void OnClock(uint64_t tsc) = 0;
};

// Reads chunks and does nothing with them (a scan for corrupt chunks).
class NullChunkVisitor : public ChunkVisitor {
 public:
  void OnRunInfo(std::string_view) override {}
  void OnProcess(const ProcessChunk&) override {}
  void OnTags(const TagsChunk&) override {}
  void OnThread(const ThreadChunk&) override {}
  void OnRecords(const RecordsChunk&) override {}
  void OnSlotDropped(const SlotDroppedChunk&) override {}
  void OnProcessCounters(const ProcessCountersChunk&) override {}
  void OnProcessExited(const ProcessExitedChunk&) override {}
  void OnClock(uint64_t) override {}
};

// Appends encoded chunks to a byte buffer. Not thread-safe; one owner.
class ChunkEncoder {
 public:
  // Appends a chunk to `out`. Each function encodes one ChunkType.
  static void RunInfo(std::string_view json, std::string* out);
  static void Process(const ProcessChunk& c, std::string* out);
  static void Tags(const TagsChunk& c, std::string* out);
  static void Thread(const ThreadChunk& c, std::string* out);
  // REQUIRES: records.size() * 32 + 24 <= kMaxChunkPayload.
  static void Records(uint32_t process_id, uint32_t slot, uint64_t generation,
                      uint64_t first_index, std::span<const abi::Record> records,
                      std::string* out);
  static void SlotDropped(const SlotDroppedChunk& c, std::string* out);
  static void ProcessCounters(const ProcessCountersChunk& c, std::string* out);
  static void ProcessExited(const ProcessExitedChunk& c, std::string* out);
  static void Clock(uint64_t tsc, std::string* out);
};

// The most records one kRecords chunk may hold.
inline constexpr size_t kMaxRecordsPerChunk =
    (kMaxChunkPayload - kRecordsHeaderBytes) / sizeof(abi::Record);

// Checksum of a chunk's type, size and payload (not cryptographic: it catches
// torn writes and garbage, fast enough for 10M records/s).
uint64_t ChunkChecksum(uint32_t type, const uint8_t* payload, size_t n);

// Result of looking at the bytes at the start of a buffer.
struct ChunkFrame {
  uint32_t type = 0;
  uint32_t payload_bytes = 0;
  const uint8_t* payload = nullptr;
  size_t frame_bytes = 0;  // header + payload
};

// Parses the chunk header at `data` (n bytes available). Returns:
//   OutOfRange when fewer than a whole chunk's bytes are available (a torn tail);
//   DataLoss when the header is impossible or the checksum does not match.
absl::StatusOr<ChunkFrame> ParseChunkFrame(const uint8_t* data, size_t n);

// Decodes one framed chunk and calls the matching visitor function. Unknown
// chunk types are skipped (OK: newer writers may add types). InvalidArgument
// when a known type's payload is malformed; the visitor is not called then.
absl::Status DispatchChunk(const ChunkFrame& frame, ChunkVisitor* visitor);

// Decodes every whole chunk in `bytes` and dispatches it. Stops at the first
// problem and returns it, with the offset in the message.
// REQUIRES: `bytes` holds whole chunks (as the drainer produces them).
absl::Status DispatchAll(std::string_view bytes, ChunkVisitor* visitor);

// As DispatchAll, but a chunk whose payload is malformed is skipped and
// counted in *malformed_chunks, and the chunks after it are dispatched: what
// the journal and archive readers do, so that a live pass and a replay of
// the same bytes feed the analysis the same chunks. Stops only where a
// chunk's frame (header, checksum) does not hold, since nothing after it can
// be found; returns that, with the offset in the message.
absl::Status DispatchEach(std::string_view bytes, ChunkVisitor* visitor,
                          uint64_t* malformed_chunks);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STREAM_H_
