#include "collector/drain/seed_scan.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "collector/app/run_info.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

DrainerSeedScan::DrainerSeedScan(DrainerSeed seed, std::map<std::string, uint64_t> stream_counters)
    : next_process_id_(seed.next_process_id), stream_counters_(std::move(stream_counters)) {
  for (DrainerSeed::Process& p : seed.processes) {
    Process& mine = processes_[p.process_id];
    mine.tag_known.assign(p.tag_count, true);
    mine.seed = std::move(p);
  }
}

DrainerSeed DrainerSeedScan::Seed() const {
  DrainerSeed seed;
  seed.next_process_id = next_process_id_;
  seed.counters = DrainerCounters::FromNamed(stream_counters_);
  for (const auto& [id, p] : processes_) {
    seed.processes.push_back(p.seed);
    uint32_t n = 0;
    while (n < p.tag_known.size() && p.tag_known[n]) ++n;
    seed.processes.back().tag_count = n;
  }
  return seed;
}

DrainerSeedScan::Process* DrainerSeedScan::Find(uint32_t process_id) {
  auto it = processes_.find(process_id);
  return it == processes_.end() ? nullptr : &it->second;
}

void DrainerSeedScan::OnRunInfo(std::string_view json) {
  // The run's own info (the journal's first chunk) is not an update; of the
  // updates only the drainer's counters matter here.
  absl::StatusOr<RunInfoUpdate> u = RunInfoUpdate::FromJson(json);
  if (!u.ok() || u->kind != RunInfoUpdate::Kind::kCounters) return;
  for (const auto& [name, value] : u->counters) stream_counters_[name] = value;
}

void DrainerSeedScan::OnProcess(const ProcessChunk& c) {
  if (Find(c.process_id) != nullptr) return;  // re-announced: the first identity stays
  Process& p = processes_[c.process_id];
  p.seed.segment = c.segment;
  p.seed.start_ticks = c.start_ticks;
  p.seed.process_id = c.process_id;
  p.seed.counters.process_id = c.process_id;
  next_process_id_ = std::max(next_process_id_, c.process_id + 1);
}

void DrainerSeedScan::OnTags(const TagsChunk& c) {
  Process* p = Find(c.process_id);
  if (p == nullptr) return;
  for (const auto& [id, name] : c.tags) {
    if (id >= abi::kMaxTags) continue;
    if (p->tag_known.size() <= id) p->tag_known.resize(id + 1, false);
    p->tag_known[id] = true;
  }
}

void DrainerSeedScan::OnThread(const ThreadChunk& c) {
  Process* p = Find(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) return;
  p->seed.slots[c.slot].generation = c.generation;
}

void DrainerSeedScan::OnRecords(const RecordsChunk& c) {
  records_seen_ += c.count;
  Process* p = Find(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) return;
  // As the Analyzer: a chunk whose records are all at or below the mark
  // (duplicates it skips) leaves the mark; any other moves it to its end.
  if (c.count == 0) return;
  std::optional<uint64_t>& high_water = p->seed.slots[c.slot].high_water;
  const uint64_t end = c.first_index + c.count;
  if (high_water.has_value() && end <= *high_water) return;
  high_water = std::max(high_water.value_or(0), end);
}

void DrainerSeedScan::OnSlotDropped(const SlotDroppedChunk& c) {
  Process* p = Find(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) return;
  uint64_t& dropped = p->seed.slots[c.slot].dropped;
  dropped = std::max(dropped, c.dropped_total);
}

void DrainerSeedScan::OnProcessCounters(const ProcessCountersChunk& c) {
  Process* p = Find(c.process_id);
  if (p == nullptr) return;
  ProcessCountersChunk& known = p->seed.counters;
  known.tags_rejected = std::max(known.tags_rejected, c.tags_rejected);
  known.threads_without_slot = std::max(known.threads_without_slot, c.threads_without_slot);
  known.slotless_dropped = std::max(known.slotless_dropped, c.slotless_dropped);
}

void DrainerSeedScan::OnProcessExited(const ProcessExitedChunk& c) {
  if (Process* p = Find(c.process_id)) p->seed.exited = true;
}

}  // namespace ticktrace::collect
