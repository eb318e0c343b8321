// The collector's checkpoint: the analyzer's whole state at a point of the
// journal, in a small file beside the store (`<db>.ttcheckpoint`), so that a
// restart replays only the journal after that point (docs/collector.md,
// "Checkpoints").
//
//   1. the drain thread marks a journal offset (every --checkpoint-interval);
//   2. the analysis thread, having analysed every chunk before it, saves its
//      state (Analyzer::SaveState) and queues it behind the orders it has
//      emitted so far (StoreSink::SubmitCheckpoint);
//   3. the store writer, once everything before it is in the store, writes
//      this file atomically (WriteCheckpointFile);
//   4. only then may the journal before the offset be freed (Journal::
//      FreeBefore, a hole punched into the file).
// So a checkpoint file never names a state the store has not caught up
// with, and the journal always holds everything after the checkpoint.
//
// File layout (little-endian):
//   +0  u64 magic "TCWCPT01"   +8  u32 version (2)   +12 u32 reserved (0)
//   +16 i64 run_id            +24 u64 journal offset (replay from here)
//   +32 u64 orders emitted    +40 u64 state bytes   +48 u64 checksum of state
//   +56 state (Analyzer::SaveState)
// The version names the state's format. 2: the stitcher's id table, order
// cells and FIFOs (collector/stitch/stitch_table.h), and the stage
// statistics' core_unknown counts; 1 (the stitcher's hash maps) is refused:
// that run is replayed from its journal's start while the journal still has
// it, and its resume is refused otherwise (collector.cc, CheckCheckpointFormat).
// Thread-safe functions (no shared state).

#ifndef TICKTRACE_COLLECTOR_CHECKPOINT_H_
#define TICKTRACE_COLLECTOR_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::collect {

inline constexpr uint64_t kCheckpointMagic = 0x3130545043574354ull;  // "TCWCPT01"
inline constexpr uint32_t kCheckpointVersion = 2;
inline constexpr size_t kCheckpointHeaderBytes = 56;

struct Checkpoint {
  int64_t run_id = 0;
  uint64_t journal_offset = 0;  // the state is after every journal byte before this
  uint64_t emitted = 0;         // orders emitted by then (FinishedOrder::seq)
  std::string state;            // Analyzer::SaveState
};

// The checkpoint that belongs to the store at `db_path`.
std::string CheckpointPath(const std::string& db_path);

// Writes `c` to `path` atomically: a private temporary file beside it
// (private_file.h: 0600/0640, never through a symlink), fdatasync, rename
// over `path`, fsync of the directory. A crash leaves the old file or the new.
absl::Status WriteCheckpointFile(const std::string& path, const Checkpoint& c,
                                 bool group_readable);

// NotFound when there is none; FailedPrecondition when it is a checkpoint of
// another version (its message says which, in one line); DataLoss when it is
// not a whole, valid checkpoint (wrong magic, cut short, checksum mismatch).
absl::StatusOr<Checkpoint> ReadCheckpointFile(const std::string& path);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_CHECKPOINT_H_
