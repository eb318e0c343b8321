// Analyzer::SaveState / LoadState: the analyzer's part of a checkpoint
// (collector/stream/checkpoint.h). Maps are written in key order, so that the same
// state always gives the same bytes (a test compares them).

#include <algorithm>

#include "collector/analysis/analyzer.h"

namespace ticktrace::collect {
namespace {

void PutRow(StateWriter& w, const store::ProcessRow& p) {
  w.Put<uint32_t>(p.process_id);
  w.Put<uint32_t>(p.pid);
  w.Put<uint64_t>(p.start_ticks);
  w.PutString(p.name);
  w.PutString(p.segment);
  w.Put<int64_t>(p.first_seen_utc_ns);
  w.Put<uint8_t>(p.exited_utc_ns.has_value());
  w.Put<int64_t>(p.exited_utc_ns.value_or(0));
  w.Put<uint64_t>(p.tags_rejected);
  w.Put<uint64_t>(p.threads_without_slot);
  w.Put<uint64_t>(p.slotless_dropped);
}

void GetRow(StateReader& r, store::ProcessRow* p) {
  p->process_id = r.Get<uint32_t>();
  p->pid = r.Get<uint32_t>();
  p->start_ticks = r.Get<uint64_t>();
  p->name = r.GetString();
  p->segment = r.GetString();
  p->first_seen_utc_ns = r.Get<int64_t>();
  const bool exited = r.Get<uint8_t>() != 0;
  const int64_t exited_utc_ns = r.Get<int64_t>();
  if (exited) p->exited_utc_ns = exited_utc_ns;
  p->tags_rejected = r.Get<uint64_t>();
  p->threads_without_slot = r.Get<uint64_t>();
  p->slotless_dropped = r.Get<uint64_t>();
}

}  // namespace

void Analyzer::SaveState(StateWriter& w) const {
  w.PutString(run_info_json_);
  w.Put<uint64_t>(core_measurements_.size());
  for (const RunInfoUpdate& u : core_measurements_) w.PutString(u.ToJson());
  w.Put<uint64_t>(stream_counters_.size());
  for (const auto& [name, value] : stream_counters_) {
    w.PutString(name);
    w.Put<uint64_t>(value);
  }
  w.Put<uint32_t>(next_process_id_);
  for (uint64_t v : {counters_.drained, counters_.malformed, counters_.unattributed,
                     counters_.duplicates_skipped, counters_.index_gaps,
                     counters_.spans_saturated, counters_.malformed_chunks}) {
    w.Put<uint64_t>(v);
  }
  w.Put<uint64_t>(tag_names_.size());
  for (uint32_t id = 0; id < tag_names_.size(); ++id) w.PutString(tag_names_.Name(id));

  std::vector<uint32_t> ids;
  for (const auto& [id, p] : processes_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  w.Put<uint64_t>(ids.size());
  for (uint32_t id : ids) {
    const Process& p = *processes_.at(id);
    PutRow(w, p.row);
    w.Put<uint64_t>(p.tag_name.size());
    for (int64_t n : p.tag_name) w.Put<int64_t>(n);
    w.Put<uint64_t>(p.tag_text.size());
    for (const std::string& t : p.tag_text) w.PutString(t);
    std::vector<uint32_t> slots;
    for (const auto& [slot, s] : p.slots) slots.push_back(slot);
    std::sort(slots.begin(), slots.end());
    w.Put<uint64_t>(slots.size());
    for (uint32_t slot : slots) {
      const SlotState& s = p.slots.at(slot);
      w.Put<uint32_t>(slot);
      w.Put<uint64_t>(s.generation);
      w.Put<uint8_t>(s.generation_known);
      w.Put<uint32_t>(s.tid);
      w.PutString(s.thread_name);
      w.Put<uint8_t>(s.high_water.has_value());
      w.Put<uint64_t>(s.high_water.value_or(0));
      w.Put<uint64_t>(s.dropped_total);
    }
    w.Put<uint64_t>(p.threads.size());
    for (const auto& [key, t] : p.threads) {
      w.Put<uint32_t>(t.slot);
      w.Put<uint64_t>(t.generation);
      w.Put<uint32_t>(t.tid);
      w.PutString(t.name);
      w.Put<uint64_t>(t.drained);
      w.Put<uint64_t>(t.dropped);
    }
  }
  stats_.SaveState(w);
  stitcher_.SaveState(w);
}

bool Analyzer::LoadState(StateReader& r) {
  run_info_json_ = r.GetString();
  const uint64_t updates = r.GetCount(8);
  core_measurements_.clear();
  for (uint64_t i = 0; i < updates && r.ok(); ++i) {
    absl::StatusOr<RunInfoUpdate> u = RunInfoUpdate::FromJson(r.GetString());
    if (!u.ok()) return false;
    core_measurements_.push_back(*std::move(u));
  }
  const uint64_t stream_counters = r.GetCount(16);
  stream_counters_.clear();
  for (uint64_t i = 0; i < stream_counters && r.ok(); ++i) {
    std::string name = r.GetString();
    stream_counters_[std::move(name)] = r.Get<uint64_t>();
  }
  next_process_id_ = r.Get<uint32_t>();
  for (uint64_t* v : {&counters_.drained, &counters_.malformed, &counters_.unattributed,
                      &counters_.duplicates_skipped, &counters_.index_gaps,
                      &counters_.spans_saturated, &counters_.malformed_chunks}) {
    *v = r.Get<uint64_t>();
  }
  const uint64_t names = r.GetCount(8);
  for (uint64_t id = 0; id < names && r.ok(); ++id) {
    if (tag_names_.Intern(r.GetString()) != id) return false;
  }
  const uint64_t processes = r.GetCount(64);
  processes_.clear();
  for (uint64_t i = 0; i < processes && r.ok(); ++i) {
    auto p = std::make_unique<Process>();
    GetRow(r, &p->row);
    const uint64_t tag_names = r.GetCount(8);
    for (uint64_t k = 0; k < tag_names && r.ok(); ++k) {
      const int64_t n = r.Get<int64_t>();
      if (n < -1 || n >= static_cast<int64_t>(tag_names_.size())) return false;
      p->tag_name.push_back(n);
    }
    const uint64_t tag_texts = r.GetCount(8);
    for (uint64_t k = 0; k < tag_texts && r.ok(); ++k) p->tag_text.push_back(r.GetString());
    const uint64_t slots = r.GetCount(4 + 8 + 1 + 4 + 8 + 1 + 8 + 8);
    for (uint64_t k = 0; k < slots && r.ok(); ++k) {
      const uint32_t slot = r.Get<uint32_t>();
      SlotState s;
      s.generation = r.Get<uint64_t>();
      s.generation_known = r.Get<uint8_t>() != 0;
      s.tid = r.Get<uint32_t>();
      s.thread_name = r.GetString();
      const bool has_high_water = r.Get<uint8_t>() != 0;
      const uint64_t high_water = r.Get<uint64_t>();
      if (has_high_water) s.high_water = high_water;
      s.dropped_total = r.Get<uint64_t>();
      p->slots[slot] = std::move(s);
    }
    const uint64_t threads = r.GetCount(4 + 8 + 4 + 8 + 8 + 8);
    for (uint64_t k = 0; k < threads && r.ok(); ++k) {
      store::ThreadRow t;
      t.process_id = p->row.process_id;
      t.slot = r.Get<uint32_t>();
      t.generation = r.Get<uint64_t>();
      t.tid = r.Get<uint32_t>();
      t.name = r.GetString();
      t.drained = r.Get<uint64_t>();
      t.dropped = r.Get<uint64_t>();
      p->threads[{t.slot, t.generation}] = std::move(t);
    }
    const uint32_t id = p->row.process_id;
    if (!processes_.emplace(id, std::move(p)).second) return false;
  }
  if (!r.ok() || !stats_.LoadState(r) || !stitcher_.LoadState(r)) return false;
  // The stitcher's view of the cores is the latest measurement's.
  if (!core_measurements_.empty()) stitcher_.SetCores(core_measurements_.back().cores);
  return r.ok() && r.at_end();
}

}  // namespace ticktrace::collect
