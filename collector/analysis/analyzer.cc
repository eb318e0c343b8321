#include "collector/analysis/analyzer.h"

#include <algorithm>
#include <tuple>

namespace ticktrace::collect {
namespace {

constexpr size_t kMaxProcesses = 1u << 16;

}  // namespace

Analyzer::Analyzer(const AnalyzerSettings& settings, const TimeBase& time_base,
                   StitchedOrderSink* sink)
    : settings_(settings),
      time_(time_base),
      stats_(settings.include_flagged),
      stitcher_(settings.stitch, time_base, &tag_names_, &stats_, sink) {}

Analyzer::Process* Analyzer::FindById(uint32_t process_id) {
  auto it = processes_.find(process_id);
  return it == processes_.end() ? nullptr : it->second.get();
}

const Analyzer::Process* Analyzer::FindById(uint32_t process_id) const {
  auto it = processes_.find(process_id);
  return it == processes_.end() ? nullptr : it->second.get();
}

void Analyzer::OnRunInfo(std::string_view json) {
  // Later kRunInfo chunks are updates (run_info.h, RunInfoUpdate). An update
  // is one even when it comes first (a stream read from after its RunInfo).
  absl::StatusOr<RunInfoUpdate> u = RunInfoUpdate::FromJson(json);
  if (run_info_json_.empty() && !u.ok()) {
    run_info_json_ = std::string(json);
    return;
  }
  if (!u.ok()) {
    // Not an update: a second RunInfo (e.g. two archives concatenated) is
    // ignored; a broken update is a malformed chunk.
    if (!absl::IsNotFound(u.status())) ++counters_.malformed_chunks;
    return;
  }
  if (u->kind == RunInfoUpdate::Kind::kCounters) {
    for (const auto& [name, value] : u->counters) stream_counters_[name] = value;
    return;
  }
  if (u->kind == RunInfoUpdate::Kind::kAnchor) {
    stitcher_.AddAnchor(u->anchor.tsc, u->anchor.utc_ns);  // ignores one not after the last
  } else {
    stitcher_.SetCores(u->cores);
    core_measurements_.push_back(*std::move(u));
  }
}

void Analyzer::OnProcess(const ProcessChunk& c) {
  if (Process* p = FindById(c.process_id)) {
    // Seen again (a restarted collector re-announcing it): identity must match.
    if (p->row.segment != c.segment || p->row.start_ticks != c.start_ticks) {
      ++counters_.malformed_chunks;
    }
    return;
  }
  if (processes_.size() >= kMaxProcesses) {
    ++counters_.malformed_chunks;
    return;
  }
  auto p = std::make_unique<Process>();
  p->row.process_id = c.process_id;
  p->row.pid = c.pid;
  p->row.start_ticks = c.start_ticks;
  p->row.name = c.name;
  p->row.segment = c.segment;
  p->row.first_seen_utc_ns = c.first_seen_utc_ns;
  processes_.emplace(c.process_id, std::move(p));
  next_process_id_ = std::max(next_process_id_, c.process_id + 1);
}

void Analyzer::OnTags(const TagsChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr) {
    ++counters_.malformed_chunks;
    return;
  }
  for (const auto& [id, name] : c.tags) {
    if (id >= abi::kMaxTags) {
      ++counters_.malformed_chunks;
      continue;
    }
    if (p->tag_name.size() <= id) {
      p->tag_name.resize(id + 1, -1);
      p->tag_text.resize(id + 1);
    }
    if (p->tag_name[id] >= 0) continue;  // a tag never changes its name
    p->tag_name[id] = tag_names_.Intern(name);
    p->tag_text[id] = name;
  }
}

store::ThreadRow& Analyzer::ThreadOf(Process& p, uint32_t slot, uint64_t generation) {
  auto [it, inserted] = p.threads.try_emplace({slot, generation});
  if (inserted) {
    it->second.process_id = p.row.process_id;
    it->second.slot = slot;
    it->second.generation = generation;
  }
  return it->second;
}

void Analyzer::OnThread(const ThreadChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) {
    ++counters_.malformed_chunks;
    return;
  }
  SlotState& s = p->slots[c.slot];
  s.generation = c.generation;
  s.generation_known = true;
  s.tid = c.tid;
  s.thread_name = c.name;
  store::ThreadRow& t = ThreadOf(*p, c.slot, c.generation);
  t.tid = c.tid;
  t.name = c.name;
}

void Analyzer::OnRecords(const RecordsChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) {
    counters_.malformed += c.count;
    counters_.drained += c.count;
    return;
  }
  SlotState& s = p->slots[c.slot];
  size_t skip = 0;
  if (s.high_water.has_value()) {
    const uint64_t hw = *s.high_water;
    if (c.first_index < hw) {
      skip = static_cast<size_t>(std::min<uint64_t>(hw - c.first_index, c.count));
    } else if (c.first_index > hw) {
      counters_.index_gaps += c.first_index - hw;
    }
  }
  counters_.duplicates_skipped += skip;
  if (skip == c.count) return;
  s.high_water = std::max(s.high_water.value_or(0), c.first_index + c.count);

  const size_t n = c.count - skip;
  counters_.drained += n;
  store::ThreadRow& thread = ThreadOf(*p, c.slot, c.generation);
  thread.drained += n;
  const uint32_t tid = thread.tid;
  const uint32_t process_id = c.process_id;

  // Records go to the stitcher in batches (it looks their ids up ahead),
  // small enough to stay in L1; a link flushes the batch first, so the
  // stitcher sees the ring's order.
  constexpr size_t kStitchBatch = 256;
  batch_.clear();
  for (size_t i = skip; i < c.count; ++i) {
    const abi::Record r = c.RecordAt(i);
    switch (r.kind) {
      case abi::kStamp:
      case abi::kSpan:
      case abi::kMeasure:
      case abi::kExternal: {
        if (r.tag_id == abi::kTagInvalid) {
          ++counters_.unattributed;
          continue;
        }
        if (r.tag_id >= p->tag_name.size() || p->tag_name[r.tag_id] < 0 ||
            p->tag_name[r.tag_id] >= int64_t{kMaxNameIds}) {
          ++counters_.malformed;
          continue;
        }
        StitchEvent e;
        e.tsc = r.tsc;
        e.order_id = r.order_id;
        e.aux = r.aux;
        if (r.kind == abi::kExternal) {
          if (r.aux == abi::kClockInvalid || r.aux > abi::kExternalClockMax) {
            ++counters_.malformed;
            continue;
          }
          // Its time, placed through the anchors known now (stream order:
          // the anchors read before the pass that drained it).
          const ExternalPlacement at = PlaceExternal(
              stitcher_.time_base(), r.payload.external_ns, r.aux, settings_.external_clocks);
          e.tsc = at.tsc;
          e.aux = abi::kAuxUnknown;  // no core read it
          e.end_aux = r.aux;         // its clock
          e.duration_ticks = PackUncertaintyNs(at.uncertainty_ns);
        }
        e.name_id = static_cast<uint32_t>(p->tag_name[r.tag_id]);
        e.process_id = process_id;
        e.tid = tid;
        e.kind = r.kind;
        e.flags = r.flags;
        if (r.kind == abi::kSpan || r.kind == abi::kMeasure) {
          e.end_aux = r.payload.span.end_aux;
          e.duration_ticks = r.payload.span.duration_ticks;
          if (r.flags & abi::kRecordSpanSaturated) ++counters_.spans_saturated;
        }
        batch_.push_back(e);
        if (batch_.size() == kStitchBatch) {
          stitcher_.AddEvents(batch_);
          batch_.clear();
        }
        break;
      }
      case abi::kLink:
        stitcher_.AddEvents(batch_);
        batch_.clear();
        stitcher_.AddLink(r.order_id, r.payload.parent_order_id);
        break;
      default:
        ++counters_.malformed;
        break;
    }
  }
  stitcher_.AddEvents(batch_);
  batch_.clear();
}

void Analyzer::OnSlotDropped(const SlotDroppedChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr || c.slot >= abi::kMaxSlots) {
    ++counters_.malformed_chunks;
    return;
  }
  SlotState& s = p->slots[c.slot];
  if (c.dropped_total <= s.dropped_total) return;  // counters only grow
  ThreadOf(*p, c.slot, c.generation).dropped += c.dropped_total - s.dropped_total;
  s.dropped_total = c.dropped_total;
}

void Analyzer::OnProcessCounters(const ProcessCountersChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr) {
    ++counters_.malformed_chunks;
    return;
  }
  p->row.tags_rejected = std::max(p->row.tags_rejected, c.tags_rejected);
  p->row.threads_without_slot = std::max(p->row.threads_without_slot, c.threads_without_slot);
  p->row.slotless_dropped = std::max(p->row.slotless_dropped, c.slotless_dropped);
}

void Analyzer::OnProcessExited(const ProcessExitedChunk& c) {
  Process* p = FindById(c.process_id);
  if (p == nullptr) {
    ++counters_.malformed_chunks;
    return;
  }
  if (!p->row.exited_utc_ns.has_value()) {
    p->row.exited_utc_ns = c.utc_ns;
  }
}

void Analyzer::OnClock(uint64_t tsc) { stitcher_.AdvanceClock(tsc); }

void Analyzer::Finish() { stitcher_.Finish(); }

std::optional<uint32_t> Analyzer::FindProcess(std::string_view segment,
                                              uint64_t start_ticks) const {
  for (const auto& [id, p] : processes_) {
    if (p->row.segment == segment && p->row.start_ticks == start_ticks) return id;
  }
  return std::nullopt;
}

bool Analyzer::Exited(uint32_t process_id) const {
  const Process* p = FindById(process_id);
  return p != nullptr && p->row.exited_utc_ns.has_value();
}

uint32_t Analyzer::KnownTagCount(uint32_t process_id) const {
  const Process* p = FindById(process_id);
  if (p == nullptr) return 0;
  uint32_t n = 0;
  while (n < p->tag_name.size() && p->tag_name[n] >= 0) ++n;
  return n;
}

std::optional<uint64_t> Analyzer::HighWater(uint32_t process_id, uint32_t slot) const {
  const Process* p = FindById(process_id);
  if (p == nullptr) return std::nullopt;
  auto it = p->slots.find(slot);
  return it == p->slots.end() ? std::nullopt : it->second.high_water;
}

std::optional<uint64_t> Analyzer::KnownGeneration(uint32_t process_id, uint32_t slot) const {
  const Process* p = FindById(process_id);
  if (p == nullptr) return std::nullopt;
  auto it = p->slots.find(slot);
  if (it == p->slots.end() || !it->second.generation_known) return std::nullopt;
  return it->second.generation;
}

uint64_t Analyzer::KnownDropped(uint32_t process_id, uint32_t slot) const {
  const Process* p = FindById(process_id);
  if (p == nullptr) return 0;
  auto it = p->slots.find(slot);
  return it == p->slots.end() ? 0 : it->second.dropped_total;
}

ProcessCountersChunk Analyzer::KnownProcessCounters(uint32_t process_id) const {
  ProcessCountersChunk c;
  c.process_id = process_id;
  if (const Process* p = FindById(process_id)) {
    c.tags_rejected = p->row.tags_rejected;
    c.threads_without_slot = p->row.threads_without_slot;
    c.slotless_dropped = p->row.slotless_dropped;
  }
  return c;
}

uint64_t Analyzer::dropped_total() const {
  uint64_t n = 0;
  for (const auto& [id, p] : processes_) {
    for (const auto& [slot, s] : p->slots) n += s.dropped_total;
  }
  return n;
}

std::vector<store::ProcessRow> Analyzer::Processes() const {
  std::vector<store::ProcessRow> out;
  for (const auto& [id, p] : processes_) out.push_back(p->row);
  std::sort(out.begin(), out.end(),
            [](const store::ProcessRow& a, const store::ProcessRow& b) {
              return a.process_id < b.process_id;
            });
  return out;
}

std::vector<store::ThreadRow> Analyzer::Threads() const {
  std::vector<store::ThreadRow> out;
  for (const auto& [id, p] : processes_) {
    for (const auto& [key, t] : p->threads) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const store::ThreadRow& a, const store::ThreadRow& b) {
    return std::tie(a.process_id, a.slot, a.generation) <
           std::tie(b.process_id, b.slot, b.generation);
  });
  return out;
}

std::vector<store::TagRow> Analyzer::Tags() const {
  std::vector<store::TagRow> out;
  for (const auto& [id, p] : processes_) {
    for (size_t t = 0; t < p->tag_name.size(); ++t) {
      if (p->tag_name[t] < 0) continue;
      out.push_back(store::TagRow{id, static_cast<uint32_t>(t), p->tag_text[t]});
    }
  }
  std::sort(out.begin(), out.end(), [](const store::TagRow& a, const store::TagRow& b) {
    return std::tie(a.process_id, a.tag_id) < std::tie(b.process_id, b.tag_id);
  });
  return out;
}

std::vector<std::pair<std::string, int64_t>> Analyzer::CounterValues() const {
  const StitchCounters& s = stitcher_.counters();
  uint64_t tags_rejected = 0, threads_without_slot = 0, slotless_dropped = 0, exited = 0;
  for (const auto& [id, p] : processes_) {
    tags_rejected += p->row.tags_rejected;
    threads_without_slot += p->row.threads_without_slot;
    slotless_dropped += p->row.slotless_dropped;
    exited += p->row.exited_utc_ns.has_value() ? 1 : 0;
  }
  auto v = [](uint64_t x) { return static_cast<int64_t>(x); };
  std::vector<std::pair<std::string, int64_t>> out = {
      {"drained", v(counters_.drained)},
      {"dropped", v(dropped_total())},
      {"malformed", v(counters_.malformed)},
      {"malformed_chunks", v(counters_.malformed_chunks)},
      {"unattributed", v(counters_.unattributed)},
      {"duplicates_skipped", v(counters_.duplicates_skipped)},
      {"index_gaps", v(counters_.index_gaps)},
      {"spans_saturated", v(counters_.spans_saturated)},
      {"orders_complete", v(s.orders_complete)},
      {"orders_incomplete", v(s.orders_incomplete)},
      {"orders_fanned_out", v(s.orders_fanned_out)},
      {"outside_pipeline", v(s.outside_pipeline)},
      {"repeated_stages", v(s.repeated_stages)},
      {"links_rejected", v(s.links_rejected)},
      {"records_over_open_limit", v(s.records_over_open_limit)},
      {"standalone_samples", v(s.standalone_samples)},
      {"orders_late", v(s.orders_late)},
      {"late_records", v(s.late_records)},
      {"reused_ids", v(s.reused_ids)},
      {"anchors", v(1 + stitcher_.time_base().later_anchors.size())},
      {"core_measurements", v(core_measurements_.size())},
      {"samples", v(stats_.samples())},
      {"tags_rejected", v(tags_rejected)},
      {"threads_without_slot", v(threads_without_slot)},
      {"slotless_dropped", v(slotless_dropped)},
      {"processes_seen", v(processes_.size())},
      {"processes_exited", v(exited)},
  };
  for (const auto& [stage, n] : s.missing_by_stage) {
    out.emplace_back("missing_stage:" + stage, v(n));
  }
  // Per stage, only where it happened: the viewer names it in the stage's confidence.
  for (const StageSummary& stage : stats_.Summaries()) {
    if (stage.core_unknown > 0)
      out.emplace_back("core_unknown:" + stage.stage, v(stage.core_unknown));
  }
  return out;
}

}  // namespace ticktrace::collect
