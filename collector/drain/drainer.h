// The live side: finds the session's segments as they appear and go, copies
// published records out of every ring in batches, and encodes them as chunks
// (collector/stream/stream.h). It never writes a line the producer writes on its hot
// path: it reads write_index (line 1) once per ring per pass, and writes only
// read_index (line 2) and the retired->free state transition (line 0).
//
// One pass:  Pass() peeks every ring and appends chunks; the caller makes the
// chunks durable (journal); CommitPass() then advances each ring's read_index
// to what was peeked, removes segments of processes that exited and were
// drained completely, and frees drained retired slots.
//
// A process is dead when its pid is gone or its start time changed (pid
// reuse). Its segment is drained to the end in that pass, its counters and a
// kProcessExited chunk follow, and after the commit its segment is removed.
// Stale segments of dead processes found at start go the same way.
//
// Trust (docs/security.md): only segments owned by the collector's own uid,
// or by a uid in options.limits.allowed_uids, are drained. Every other segment,
// and every segment that cannot be opened, is too large, or shrinks under the
// reader, is counted (DrainerCounters) and named on the log stream, at most
// RefusalLog::kLinesPerWindow lines per RefusalLog::kWindow (the rest summed
// up in one line). A refused file is remembered by its device and inode, not
// its name: it is not tried again while it exists, under any name, so
// renaming it costs nothing (no open, no read).
//
// A bad ring costs only itself: a ring whose indices are impossible (write
// behind read, or more published than the ring holds: SegmentReader::Peek;
// a range that wraps 2^64, which no chunk can carry; a read index that is
// not the one this collector last committed) is named once, counted
// (slots_corrupt) and skipped from then on, before any of its records is
// encoded. So no chunk the drainer writes
// has an index range that wraps, and the other rings of the pass go on.
// The checks are a few compares per drained ring per pass.
//
// Not thread-safe: the collector's drain thread owns a Drainer. It never
// reads the Analyzer (which the analysis thread owns): what the journal
// already held comes in a DrainerSeed captured before draining starts.

#ifndef TICKTRACE_COLLECTOR_DRAINER_H_
#define TICKTRACE_COLLECTOR_DRAINER_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "collector/analysis/analyzer.h"
#include "collector/drain/refusal_log.h"
#include "collector/stream/stream.h"
#include "ticktrace/segment_reader.h"

namespace ticktrace::collect {

struct DrainerOptions {
  std::string session;
  size_t max_records_per_ring = 1u << 16;  // per pass; a dying segment is drained fully
  std::chrono::milliseconds discovery_interval{100};
  std::chrono::milliseconds open_grace{1000};  // a segment may be mid-creation this long
  SegmentOpenLimits limits;                      // whose segments, and how large
  std::ostream* log = nullptr;                   // refusals, rate-limited; null: std::cerr
};

struct DrainerCounters {
  uint64_t segments_corrupt = 0;     // segments whose header does not hold together
  uint64_t slots_corrupt = 0;        // rings with impossible indices (skipped)
  uint64_t segments_removed = 0;     // segments of exited processes removed
  uint64_t segments_attached = 0;
  uint64_t segments_foreign = 0;     // owned by a uid neither ours nor allowed: not drained
  uint64_t segments_unreadable = 0;  // open/fstat/mmap failed (e.g. EACCES): not drained
  uint64_t segments_oversized = 0;   // reserved above limits.max_segment_bytes: not drained
  uint64_t segments_truncated = 0;   // shrank under the collector (SIGBUS caught): dropped
  // Records published and never consumed in the foreign and oversized
  // segments, and in a ring claimed later that took its segment over the
  // limit, counted when each was refused; an unreadable segment's
  // records cannot be counted by a collector that cannot read them.
  uint64_t records_in_refused_segments = 0;
  // Times the drain stopped because the journal reached its cap (the
  // analysis or the store that far behind): the rings held the records
  // meanwhile, and their producers counted what did not fit. In the stream
  // (continued across restarts); not a store counter yet (the store's
  // names, store/include/ticktrace/store/names.h, do not list it).
  uint64_t journal_cap_stalls = 0;

  bool operator==(const DrainerCounters&) const = default;
  // (store counter name, value) of each field, for the stream (a kCounters
  // run info update) and the store; FromNamed() reads such a list back.
  std::vector<std::pair<std::string, uint64_t>> Named() const;
  static DrainerCounters FromNamed(const std::map<std::string, uint64_t>& named);
};

// What the stream already holds (after a journal recovery): known processes,
// tags, generations, drop counters and high-water marks. Captured once,
// before draining starts, so that the drainer never reads the Analyzer while
// the analysis thread runs.
struct DrainerSeed {
  struct Slot {
    std::optional<uint64_t> generation;
    uint64_t dropped = 0;
    std::optional<uint64_t> high_water;
  };
  struct Process {
    std::string segment;
    uint64_t start_ticks = 0;
    uint32_t process_id = 0;
    uint32_t tag_count = 0;
    bool exited = false;
    ProcessCountersChunk counters;
    std::map<uint32_t, Slot> slots;
  };
  uint32_t next_process_id = 1;
  std::vector<Process> processes;
  DrainerCounters counters;  // as the stream last carried them: continued

  // REQUIRES: nothing else uses `analyzer` meanwhile.
  static DrainerSeed From(const Analyzer& analyzer);
};

class Drainer {
 public:
  Drainer(const DrainerOptions& options, DrainerSeed seed);
  ~Drainer();

  // One pass over every ring. Appends chunks to `out` and returns the number
  // of records copied. `discover`: also look for new/dead segments and refresh
  // counters now (otherwise at most every discovery_interval).
  size_t Pass(bool discover, std::string* out);

  // REQUIRES: the chunks of the last Pass() are durable (or no durability is wanted).
  void CommitPass();

  size_t attached_segments() const { return segments_.size(); }
  // The fullest ring's fill at the start of the last Pass(): published and
  // not consumed records over the ring's capacity (0 when nothing is
  // attached). The drain loop syncs sooner when a ring is filling.
  double max_fill() const { return max_fill_; }
  const DrainerCounters& counters() const { return counters_; }
  // The drain loop stopped draining at the journal's cap (it goes into the
  // stream with the other counters at the next pass).
  void CountJournalCapStall() { ++counters_.journal_cap_stalls; }

 private:
  struct SlotTrack {
    uint64_t generation = 0;
    bool generation_announced = false;
    uint64_t dropped_announced = 0;
    bool corrupt = false;  // impossible indices, or a ring refused by the size limit: skipped
    // A ring refused by the size limit: its records up to here are counted in
    // records_in_refused_segments; later ones are added at the discovery rate.
    std::optional<uint64_t> refused_counted_to;
    std::optional<uint64_t> high_water;  // from the seed: skip records below it once
    // The read index this collector last stored into the ring (Commit). Only
    // the collector writes read_index, so a ring found at any other read
    // index was rewritten by someone else: corrupt. Unset until the first commit.
    std::optional<uint64_t> committed_read;
  };
  // A file by its device and inode (SegmentId::device, inode).
  using FileKey = std::pair<uint64_t, uint64_t>;
  struct Segment {
    std::unique_ptr<SegmentReader> reader;
    FileKey file;  // as listed when attached
    uint32_t process_id = 0;
    uint32_t tags_announced = 0;
    bool dying = false;
    bool exited_announced = false;
    ProcessCountersChunk counters_announced;
    std::vector<SlotTrack> slots;
  };
  struct PendingCommit {
    Segment* segment;
    uint32_t slot;
    uint64_t end;
  };

  void Discover(std::string* out);
  void Attach(const SegmentId& id, std::string* out);
  // Counts and names a segment Open() refused; false when it may be retried.
  bool Refuse(const absl::Status& status, const SegmentOpenError& why);
  // Says `line` through refusal_log_.
  void LogRefusal(const std::string& line);
  std::ostream& log() const;
  void AnnounceTags(Segment& s, std::string* out);
  void RefreshCounters(Segment& s, std::string* out);
  size_t DrainSlot(Segment& s, uint32_t slot, std::string* out);
  // A ring whose indices are impossible: named once (segment, pid, slot,
  // why), counted in slots_corrupt, and never drained again.
  void MarkCorrupt(Segment& s, uint32_t slot, std::string_view why);

  DrainerOptions options_;
  DrainerSeed seed_;
  std::map<std::string, std::unique_ptr<Segment>> segments_;  // by shm name
  absl::flat_hash_map<std::string, std::chrono::steady_clock::time_point> failing_;
  absl::flat_hash_set<FileKey> refused_;  // files refused, while they exist
  std::unique_ptr<RefusalLog> refusal_log_;
  uint32_t next_process_id_ = 1;
  std::chrono::steady_clock::time_point last_discovery_{};
  std::vector<PendingCommit> pending_;
  std::vector<std::string> to_remove_;
  std::vector<abi::Record> buffer_;
  std::vector<uint64_t> pending_records_;  // per slot, scratch of Pass()
  std::vector<bool> skip_slots_;           // per slot, scratch of CommitPass()
  DrainerCounters counters_;
  double max_fill_ = 0;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_DRAINER_H_
