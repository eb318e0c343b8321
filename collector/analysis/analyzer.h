// The analysis side of the collector: consumes the chunk stream (live, from a
// journal, or from a raw archive), validates every record, attributes it to
// its process, thread and tag, drops what was already handled (per-ring
// high-water marks), and feeds the Stitcher. It also keeps the store's rows
// of the processes, threads and tags tables (ticktrace/store/rows.h) and
// what its counters table needs.
//
// Not thread-safe: one analysis thread owns an Analyzer (the collector's main
// loop; the store writer thread only receives copies).

#ifndef TICKTRACE_COLLECTOR_ANALYZER_H_
#define TICKTRACE_COLLECTOR_ANALYZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "collector/analysis/name_table.h"
#include "collector/app/run_info.h"
#include "collector/sinks/stage_stats.h"
#include "collector/stitch/stitcher.h"
#include "collector/stream/stream.h"
#include "collector/time/external_clock.h"
#include "collector/time/time_base.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::collect {

struct AnalyzerSettings {
  StitchSettings stitch;
  bool include_flagged = false;
  ExternalClockErrors external_clocks;  // for kExternal records (RunInfo::external_clocks)
};

// Counters the analysis keeps (the collector adds the drainer's and the store's).
struct AnalyzerCounters {
  uint64_t drained = 0;             // records taken in (after de-duplication)
  uint64_t malformed = 0;           // bad kind, unknown tag id, unknown process
  uint64_t unattributed = 0;        // records of tags that found the table full
  uint64_t duplicates_skipped = 0;  // records at or below a ring's high-water mark
  uint64_t index_gaps = 0;          // ring indices skipped over (records never seen)
  uint64_t spans_saturated = 0;     // spans longer than 2^32 ticks (lower bounds)
  uint64_t malformed_chunks = 0;    // chunks with impossible payloads (counted by the reader)
};

class Analyzer : public ChunkVisitor {
 public:
  // `sink` may be null (statistics only): it receives every finished order
  // after the statistics (an OrderSink, e.g. StoreSink, as rows).
  Analyzer(const AnalyzerSettings& settings, const TimeBase& time_base,
           StitchedOrderSink* sink);

  // --- ChunkVisitor ---
  void OnRunInfo(std::string_view json) override;
  void OnProcess(const ProcessChunk& c) override;
  void OnTags(const TagsChunk& c) override;
  void OnThread(const ThreadChunk& c) override;
  void OnRecords(const RecordsChunk& c) override;
  void OnSlotDropped(const SlotDroppedChunk& c) override;
  void OnProcessCounters(const ProcessCountersChunk& c) override;
  void OnProcessExited(const ProcessExitedChunk& c) override;
  void OnClock(uint64_t tsc) override;

  // The stream ended: every open order is finished.
  void Finish();

  // --- Queries for the drainer (what the stream already holds) ---
  std::optional<uint32_t> FindProcess(std::string_view segment, uint64_t start_ticks) const;
  uint32_t NextProcessId() const { return next_process_id_; }
  bool Exited(uint32_t process_id) const;
  // Tag ids below this are known for the process.
  uint32_t KnownTagCount(uint32_t process_id) const;
  // One past the highest ring index handled, if the ring was seen.
  std::optional<uint64_t> HighWater(uint32_t process_id, uint32_t slot) const;
  std::optional<uint64_t> KnownGeneration(uint32_t process_id, uint32_t slot) const;
  uint64_t KnownDropped(uint32_t process_id, uint32_t slot) const;
  ProcessCountersChunk KnownProcessCounters(uint32_t process_id) const;
  // True when a clock chunk at `now_tsc` would finish orders.
  bool NeedsClock(uint64_t now_tsc) const { return stitcher_.NeedsClock(now_tsc); }

  // --- Results ---
  const AnalyzerCounters& counters() const { return counters_; }
  AnalyzerCounters& mutable_counters() { return counters_; }
  const StitchCounters& stitch_counters() const { return stitcher_.counters(); }
  const Stitcher& stitcher() const { return stitcher_; }
  Stitcher& mutable_stitcher() { return stitcher_; }
  const StageStats& stats() const { return stats_; }
  const std::string& run_info_json() const { return run_info_json_; }
  uint64_t dropped_total() const;
  std::vector<store::ProcessRow> Processes() const;
  std::vector<store::ThreadRow> Threads() const;
  std::vector<store::TagRow> Tags() const;
  // The cores' offsets measured during the run (run info updates), oldest
  // first; the run's first measurement is in its RunInfo.
  const std::vector<RunInfoUpdate>& core_measurements() const { return core_measurements_; }
  // The collector's own counters as the stream last carried them (the
  // drainer's: RunInfoUpdate::Kind::kCounters), cumulative over restarts.
  const std::map<std::string, uint64_t>& stream_counters() const { return stream_counters_; }
  // Adds to one of them what the collector found outside the stream (corrupt
  // journal chunks skipped by a recovery), so that checkpoints keep it.
  void AddStreamCounter(const std::string& name, uint64_t delta) { stream_counters_[name] += delta; }
  // UTC as the stream's anchors map it (TimeBase::DriftPpm for the drift).
  const TimeBase& time_base() const { return stitcher_.time_base(); }
  // The whole state after the chunks seen so far, for a checkpoint
  // (collector/stream/checkpoint.h): run info and its updates, processes, slots
  // with their high-water marks, threads, tags, counters, stage statistics
  // and the stitcher. LoadState REQUIRES: an Analyzer fresh from the
  // constructor with the saved one's settings; false on bad input (then
  // discard it). After LoadState the analyzer goes on exactly as the saved
  // one would have.
  void SaveState(StateWriter& w) const;
  bool LoadState(StateReader& r);

  // Every counter the store's counters table holds that the analysis knows.
  std::vector<std::pair<std::string, int64_t>> CounterValues() const;

 private:
  struct SlotState {
    uint64_t generation = 0;
    bool generation_known = false;
    uint32_t tid = 0;
    std::string thread_name;
    std::optional<uint64_t> high_water;
    uint64_t dropped_total = 0;
  };
  struct Process {
    store::ProcessRow row;
    std::vector<int64_t> tag_name;  // tag id -> name id in tag_names_, -1 unknown
    std::vector<std::string> tag_text;  // tag id -> name as published
    absl::flat_hash_map<uint32_t, SlotState> slots;
    std::map<std::pair<uint32_t, uint64_t>, store::ThreadRow> threads;  // (slot, generation)
  };

  Process* FindById(uint32_t process_id);
  const Process* FindById(uint32_t process_id) const;
  store::ThreadRow& ThreadOf(Process& p, uint32_t slot, uint64_t generation);

  AnalyzerSettings settings_;
  TimeBase time_;
  NameTable tag_names_;
  StageStats stats_;
  Stitcher stitcher_;
  std::vector<StitchEvent> batch_;  // OnRecords' scratch: one chunk's records for the stitcher
  std::string run_info_json_;
  std::vector<RunInfoUpdate> core_measurements_;
  std::map<std::string, uint64_t> stream_counters_;
  absl::flat_hash_map<uint32_t, std::unique_ptr<Process>> processes_;
  uint32_t next_process_id_ = 1;
  AnalyzerCounters counters_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_ANALYZER_H_
