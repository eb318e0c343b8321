// DrainerSeedScan: what a restarted drainer must know of the journal's tail
// before it drains again, without analysing it. A restart loads the
// checkpoint (the analysis as it stood at a journal offset; DrainerSeed::From
// then says what the stream held up to there) and reads the journal after
// it through this visitor, which keeps only the drainer's view of the stream:
// processes, tags announced, slot generations, drop counters, per-ring
// high-water marks and the drainer's counters. Its rules are the Analyzer's
// for the same chunks (collector/analysis/analyzer.cc), so the seed it leaves
// is the one DrainerSeed::From would give after analysing the tail; the
// drain starts at once while the analysis catches up on the tail.

#ifndef TICKTRACE_COLLECTOR_DRAIN_SEED_SCAN_H_
#define TICKTRACE_COLLECTOR_DRAIN_SEED_SCAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collector/drain/drainer.h"
#include "collector/stream/stream.h"

namespace ticktrace::collect {

class DrainerSeedScan : public ChunkVisitor {
 public:
  // `seed`: the stream up to the checkpoint; `stream_counters`: the
  // analysis's counters from the stream then (Analyzer::stream_counters).
  DrainerSeedScan(DrainerSeed seed, std::map<std::string, uint64_t> stream_counters);

  // The seed with the tail read so far.
  DrainerSeed Seed() const;
  // Records in the records chunks read so far (duplicates of records before
  // the checkpoint included: an upper bound of what the tail adds).
  uint64_t records_seen() const { return records_seen_; }

  void OnRunInfo(std::string_view json) override;
  void OnProcess(const ProcessChunk& c) override;
  void OnTags(const TagsChunk& c) override;
  void OnThread(const ThreadChunk& c) override;
  void OnRecords(const RecordsChunk& c) override;
  void OnSlotDropped(const SlotDroppedChunk& c) override;
  void OnProcessCounters(const ProcessCountersChunk& c) override;
  void OnProcessExited(const ProcessExitedChunk& c) override;
  void OnClock(uint64_t) override {}

 private:
  struct Process {
    DrainerSeed::Process seed;
    std::vector<bool> tag_known;  // by tag id; seed.tag_count is its leading run
  };
  Process* Find(uint32_t process_id);

  uint32_t next_process_id_ = 1;
  std::map<uint32_t, Process> processes_;  // by process id
  std::map<std::string, uint64_t> stream_counters_;
  uint64_t records_seen_ = 0;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_DRAIN_SEED_SCAN_H_
