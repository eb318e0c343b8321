#include "collector/stitch/stitcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/time/external_clock.h"

namespace ticktrace::collect {
namespace {

constexpr int kMaxLinkDepth = 16;

bool KnownAux(uint32_t aux) { return aux != abi::kAuxUnknown; }
// Two reads on different cores. By cpu number only: an aux from rseq carries
// no node (abi.h), and a cpu number is unique across nodes.
bool DifferentCores(uint32_t a, uint32_t b) {
  return KnownAux(a) && KnownAux(b) && abi::AuxCpu(a) != abi::AuxCpu(b);
}

}  // namespace

Stitcher::Stitcher(const StitchSettings& settings, const TimeBase& time_base,
                   const NameTable* tag_names, StageStats* stats, StitchedOrderSink* sink)
    : settings_(settings),
      time_(time_base),
      tag_names_(tag_names),
      stats_(stats),
      stats_sink_(stats) {
  sinks_.push_back(&stats_sink_);
  if (sink != nullptr) sinks_.push_back(sink);
  if (!settings_.pipeline.empty()) {
    pipeline_ = settings_.pipeline;
    pipeline_known_ = true;
    for (size_t i = 0; i < pipeline_.size(); ++i) pipeline_index_.emplace(pipeline_[i], int(i));
  }
  total_stage_ = stats_->StageId("total", StageKind::kTotal);
  table_.Reset(settings_.expected_open_orders);
  SetCores(settings_.cores);
}

void Stitcher::SetCores(const std::vector<CoreSkew>& cores) {
  for (CoreClock& c : core_clock_) c = CoreClock{};
  for (const CoreSkew& c : cores) {
    if (c.cpu < 0 || c.cpu >= (1 << 20)) continue;  // RunInfo rejects these; a cap all the same
    if (core_clock_.size() <= static_cast<size_t>(c.cpu)) core_clock_.resize(c.cpu + 1);
    // An inconsistent core (its rounds disagree) has no usable bound.
    if (c.consistent) core_clock_[c.cpu] = CoreClock{true, c.offset_ns, c.bound_ns};
  }
}

const Stitcher::CoreClock* Stitcher::Core(uint32_t aux) const {
  if (!KnownAux(aux)) return nullptr;
  const uint32_t cpu = abi::AuxCpu(aux);
  if (cpu >= core_clock_.size() || !core_clock_[cpu].measured) return nullptr;
  return &core_clock_[cpu];
}

uint16_t Stitcher::PairFlags(const Event& a, const Event& b, bool same_ring,
                            StitchedSample* sample) const {
  uint16_t flags = 0;
  sample->begin_tsc = a.tsc;
  sample->end_tsc = b.tsc;
  sample->begin_aux = a.aux;
  sample->end_aux = b.aux;
  sample->begin_process = a.process_id;
  sample->end_process = b.process_id;
  sample->uncertainty_ns = 0;
  sample->skew_correction_ns = 0;
  sample->external_clocks = 0;
  bool bounded = false;
  if (DifferentCores(a.aux, b.aux)) {
    flags |= kFlagCrossCore;
    const CoreClock* ca = Core(a.aux);
    const CoreClock* cb = Core(b.aux);
    if (ca != nullptr && cb != nullptr) {
      bounded = true;
      sample->uncertainty_ns = ca->bound_ns + cb->bound_ns;
      // b's TSC minus a's includes (offset_b - offset_a): take it out.
      if (settings_.correct_skew) sample->skew_correction_ns = cb->offset_ns - ca->offset_ns;
    }
  }
  const bool external = a.kind == abi::kExternal || b.kind == abi::kExternal;
  if (external) {
    // An end read by another clock: its uncertainty (external_clock.h) is the
    // bound, summed with the other end's when both are external; unknown when
    // either's is.
    flags |= kFlagExternal;
    bounded = true;
    for (const Event* end : {&a, &b}) {
      if (end->kind != abi::kExternal) continue;
      sample->external_clocks |= ExternalClockBits(end->end_aux, /*at_end=*/end == &b);
      const std::optional<double> u = UnpackUncertaintyNs(end->duration_ticks);
      if (u.has_value()) {
        sample->uncertainty_ns += *u;
      } else {
        bounded = false;
      }
    }
  }
  const double latency_ns = sample->LatencyNs(time_);
  const double uncertainty_ns = sample->uncertainty_ns;
  const bool same_core = KnownAux(a.aux) && KnownAux(b.aux) && !DifferentCores(a.aux, b.aux);
  // One ring (one thread, in program order): b's record before a's means the
  // code stamped the later stage first. &b < &a: both point into one events
  // vector, which holds a ring's records in ring order.
  // Not for an external end: the program may learn a time after stamping a
  // later stage (a packet's receive time, read after md_rx).
  const bool ring_reversed = same_ring && !external && a.process_id == b.process_id &&
                             a.tid == b.tid && &b < &a;
  if (ring_reversed || (latency_ns < 0 && same_core)) {
    flags |= kFlagOutOfOrder;
  } else if (latency_ns < 0) {
    flags |= (bounded && -latency_ns <= uncertainty_ns) ? kFlagSkew : kFlagNegative;
  }
  return flags;
}

// A span's (or interval's) flags and ends: migrated when its ends are on
// two cores; negative when the end read below the begin (skew when its ends
// are on two measured cores and it is within their bounds); saturated when
// it lasted 2^32 ticks or more (its duration is then a lower bound). The
// value is negative when it ran backwards (the producer keeps how far),
// never clamped to 0.
template <typename E>
uint16_t Stitcher::SpanFlagsOf(const E& e, StitchedSample* sample) const {
  uint16_t flags = 0;
  const bool backwards = (e.flags & abi::kRecordSpanBackwards) != 0;
  sample->begin_tsc = e.tsc;
  sample->end_tsc = backwards ? e.tsc - uint64_t{e.duration_ticks} : e.tsc + e.duration_ticks;
  sample->begin_aux = e.aux;
  sample->end_aux = e.end_aux;
  sample->begin_process = sample->end_process = e.process_id;
  sample->uncertainty_ns = 0;
  sample->skew_correction_ns = 0;
  sample->external_clocks = 0;
  bool bounded = false;
  if (DifferentCores(e.aux, e.end_aux)) {
    flags |= kFlagMigrated;
    const CoreClock* ca = Core(e.aux);
    const CoreClock* cb = Core(e.end_aux);
    if (ca != nullptr && cb != nullptr) {
      bounded = true;
      sample->uncertainty_ns = ca->bound_ns + cb->bound_ns;
      if (settings_.correct_skew) sample->skew_correction_ns = cb->offset_ns - ca->offset_ns;
    }
  }
  const double latency_ns = sample->LatencyNs(time_);
  if (latency_ns < 0) {
    flags |= (bounded && -latency_ns <= sample->uncertainty_ns) ? kFlagSkew : kFlagNegative;
  }
  if (e.flags & abi::kRecordSpanSaturated) flags |= kFlagSaturated;
  return flags;
}

int Stitcher::PositionOf(uint32_t name_id) {
  if (name_id < position_by_name_.size()) [[likely]] {
    return position_by_name_[name_id];
  }
  while (position_by_name_.size() <= name_id && position_by_name_.size() < tag_names_->size()) {
    const auto it = pipeline_index_.find(tag_names_->Name(position_by_name_.size()));
    position_by_name_.push_back(it == pipeline_index_.end() ? -1 : it->second);
  }
  return name_id < position_by_name_.size() ? position_by_name_[name_id] : -1;
}

bool Stitcher::StampLike(const Event& e, int pos) const {
  // A declared pipeline may name a span's tag: its begin then stands for the stage.
  return pos >= 0 && (e.kind == abi::kStamp || e.kind == abi::kSpan ||
                      e.kind == abi::kMeasure || e.kind == abi::kExternal);
}

Stitcher::EventSpan Stitcher::Events(const Order& o) const {
  if (o.overflow == 0) return EventSpan{o.inline_events, o.inline_events + o.count};
  const std::vector<Event>& v = overflow_[o.overflow - 1];
  return EventSpan{v.data(), v.data() + v.size()};
}

void Stitcher::PushEvent(Order& o, const Event& ev) {
  if (o.overflow == 0 && o.count < kInlineEvents) {
    o.inline_events[o.count++] = ev;
    return;
  }
  if (o.overflow == 0) {
    // A long order: all its events move to one vector, kept contiguous.
    if (overflow_free_.empty()) {
      overflow_.emplace_back();
      o.overflow = static_cast<uint32_t>(overflow_.size());
    } else {
      o.overflow = overflow_free_.back() + 1;
      overflow_free_.pop_back();
    }
    overflow_[o.overflow - 1].assign(o.inline_events, o.inline_events + o.count);
  }
  overflow_[o.overflow - 1].push_back(ev);
  ++o.count;
}

void Stitcher::Touch(Order& o, uint32_t idx) {
  if (o.last_activity == clock_) return;  // its entry for this clock is queued
  o.last_activity = clock_;
  if (settings_.timeout_ticks > 0) timeouts_.push_back(TickCell{clock_, idx});
}

void Stitcher::PushMemoryLook(size_t slot) {
  if (settings_.timeout_ticks == 0) return;  // no timeout: remembered for the run (as before)
  IdTable::Slot& s = table_.at(slot);
  const uint32_t tag = next_tag_;
  next_tag_ = (next_tag_ + 1) & IdTable::kTagMask;
  s.Set(s.state(), tag);
  memory_looks_.push_back(MemoryLook{clock_, s.id, tag});
}

uint32_t Stitcher::NewOrder(uint64_t order_id, uint32_t instance) {
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    idx = pool_.Add();
  }
  Order& o = Cell(idx);
  o.id = order_id;
  o.live = true;
  o.instance = std::min(instance, kMaxInstance);
  if (instance > 0) ++counters_.reused_ids;
  o.last_activity = clock_;
  if (settings_.timeout_ticks > 0) timeouts_.push_back(TickCell{clock_, idx});
  ++live_orders_;
  return idx;
}

// Truth for reused ids (stitcher.h, "Lingering and instances"): a record
// that repeats the first stage of an order whose last stage has arrived, or
// repeats a stage another process stamped in it, is a new use of the id.
bool Stitcher::StartsNewInstance(const Order& o, const StitchEvent& e) {
  if (!pipeline_known_) return false;
  const int pos = PositionOf(e.name_id);
  if (pos < 0 || (e.kind != abi::kStamp && e.kind != abi::kSpan && e.kind != abi::kMeasure &&
                  e.kind != abi::kExternal)) {
    return false;
  }
  for (const Event& ev : Events(o)) {
    if (ev.name_id == (e.name_id & (kMaxNameIds - 1)) &&
        (pos == 0 || ev.process_id != e.process_id)) {
      return true;
    }
  }
  return false;
}

uint32_t Stitcher::OrderIndex(uint64_t order_id, const StitchEvent* e) {
  // One probe: the slot says whether the id is open, lingering, or only
  // remembered (its next instance), or new.
  size_t slot = table_.Find(order_id);
  const bool at_limit = settings_.max_open_orders > 0 && live_orders_ >= settings_.max_open_orders;
  if (!table_.Found(slot)) {
    if (at_limit) return kNoOrder;  // bounded memory: not kept (counted by the caller)
    const uint32_t idx = NewOrder(order_id, 0);
    slot = table_.Insert(slot, order_id, idx, IdTable::kOpen, 0);
    PushMemoryLook(slot);
    return idx;
  }
  IdTable::Slot& s = table_.at(slot);
  switch (s.state()) {
    case IdTable::kOpen:
      if (e != nullptr && Cell(s.value).pending && StartsNewInstance(Cell(s.value), *e)) break;
      return s.value;
    case IdTable::kLingering:
      // A late record joins its finished order, unless it is a new use.
      if (e != nullptr && StartsNewInstance(Cell(s.value), *e)) break;
      return s.value;
    case IdTable::kMemory: {
      if (at_limit) return kNoOrder;
      const uint32_t idx = NewOrder(order_id, s.value);
      s.value = idx;
      s.SetState(IdTable::kOpen);
      PushMemoryLook(slot);
      return idx;
    }
    case IdTable::kEmpty:
      break;
  }
  // A new instance while the previous one still finishes: that one goes on
  // by its cell (its pending entry, the linger FIFO) and leaves the table;
  // the id's records from now on are the new one's.
  if (at_limit) return kNoOrder;
  const uint32_t idx = NewOrder(order_id, Cell(s.value).instance + 1);
  s.value = idx;
  s.SetState(IdTable::kOpen);
  PushMemoryLook(slot);
  return idx;
}

void Stitcher::LeaveTable(uint32_t idx) {
  const Order& o = Cell(idx);
  const size_t slot = table_.Find(o.id);
  if (!table_.Found(slot)) return;
  IdTable::Slot& s = table_.at(slot);
  if (s.state() == IdTable::kMemory || s.value != idx) return;  // a newer instance has it
  s.value = std::min<uint32_t>(o.instance + 1, kMaxInstance);
  s.SetState(IdTable::kMemory);
}

void Stitcher::ForgetOldInstances() {
  const uint64_t keep = instance_memory_ticks();
  while (!memory_looks_.empty() && clock_ - memory_looks_.front().at > keep) {
    const MemoryLook look = memory_looks_.front();
    memory_looks_.pop_front();
    const size_t slot = table_.Find(look.id);
    // Opened again since: a later look decides.
    if (!table_.Found(slot) || table_.at(slot).tag() != look.tag) continue;
    if (table_.at(slot).state() == IdTable::kMemory) {
      table_.Erase(slot);
    } else {
      // Still open or lingering: remembered, and looked at again once it
      // has been gone as long. clock_ is the newest time: the FIFO stays in
      // time order.
      PushMemoryLook(slot);
    }
  }
}

Stitcher::Order* Stitcher::FindOpen(uint64_t order_id) {
  const size_t slot = table_.Find(order_id);
  if (!table_.Found(slot) || table_.at(slot).state() != IdTable::kOpen) return nullptr;
  return &Cell(table_.at(slot).value);
}

uint32_t Stitcher::FindAnyIndex(uint64_t order_id) const {
  const size_t slot = table_.Find(order_id);
  if (table_.Found(slot) && table_.at(slot).state() != IdTable::kMemory) {
    return table_.at(slot).value;
  }
  if (held_.empty()) return kNoOrder;
  auto it = held_.find(order_id);
  return it == held_.end() ? kNoOrder : it->second;
}

Stitcher::Order* Stitcher::FindAny(uint64_t order_id) {
  const uint32_t idx = FindAnyIndex(order_id);
  return idx == kNoOrder ? nullptr : &Cell(idx);
}

uint32_t Stitcher::TransitionStage(uint32_t from_name, uint32_t to_name) {
  const uint64_t key = uint64_t{from_name} << 32 | to_name;
  auto it = transition_stage_.find(key);
  if (it != transition_stage_.end()) return it->second;
  const uint32_t id = stats_->StageId(
      absl::StrCat(tag_names_->Name(from_name), "->", tag_names_->Name(to_name)),
      StageKind::kTransition);
  transition_stage_.emplace(key, id);
  return id;
}

uint32_t Stitcher::SpanStage(uint32_t name_id) {
  if (span_stage_.size() <= name_id) span_stage_.resize(name_id + 1, -1);
  if (span_stage_[name_id] < 0) {
    span_stage_[name_id] = stats_->StageId(tag_names_->Name(name_id), StageKind::kSpan);
  }
  return static_cast<uint32_t>(span_stage_[name_id]);
}

void Stitcher::AddEvent(const StitchEvent& e) { AddRecord(e); }

void Stitcher::AddEvents(std::span<const StitchEvent> events) {
  // Far enough ahead that the slot arrives before its record is handled,
  // near enough that it is still in cache then.
  // Then, halfway, the cell its slot names.
  constexpr size_t kAhead = 8;
  constexpr size_t kCellAhead = 4;
  const size_t n = events.size();
  for (size_t i = 0; i < n && i < kAhead; ++i) table_.Prefetch(events[i].order_id);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) table_.Prefetch(events[i + kAhead].order_id);
    if (i + kCellAhead < n) {
      const IdTable::Slot* s = table_.AtHome(events[i + kCellAhead].order_id);
      if (s != nullptr && s->state() != IdTable::kMemory) __builtin_prefetch(&Cell(s->value));
    }
    AddRecord(events[i]);
  }
}

void Stitcher::MarkPending(uint32_t idx) {
  Order& o = Cell(idx);
  o.pending = true;
  pending_current_.push_back(PendingRef{o.id, idx, o.instance});
}

inline void Stitcher::AddRecord(const StitchEvent& e) {
  if ((e.kind == abi::kSpan || e.kind == abi::kMeasure) && e.order_id == 0) {
    // An interval with no order: a sample of its tag, nothing to stitch.
    StitchedSample sample;
    sample.flags = SpanFlagsOf(e, &sample);
    sample.stage_id = SpanStage(e.name_id);
    const StitchView view = View();
    for (StitchedOrderSink* sink : sinks_) sink->OnStandaloneSample(sample, view);
    ++counters_.standalone_samples;
    return;
  }
  const uint32_t idx = OrderIndex(e.order_id, &e);
  if (idx == kNoOrder) {
    ++counters_.records_over_open_limit;
    return;
  }
  Order& o = Cell(idx);
  Event ev;
  ev.tsc = e.tsc;
  ev.aux = e.aux;
  ev.end_aux = e.end_aux;
  ev.duration_ticks = e.duration_ticks;
  ev.name_id = e.name_id & (kMaxNameIds - 1);  // REQUIRES (Analyzer): name_id < kMaxNameIds
  ev.kind = e.kind & 7u;
  ev.flags = e.flags & 7u;
  ev.process_id = e.process_id;
  ev.tid = e.tid;
  PushEvent(o, ev);
  if (o.lingering) return;  // a late record joins its finished order; the linger runs on
  Touch(o, idx);
  if (pipeline_known_ && !o.pending && !pipeline_.empty()) {
    const int pos = PositionOf(e.name_id);
    if (pos == static_cast<int>(pipeline_.size()) - 1 && StampLike(ev, pos)) MarkPending(idx);
  }
}

void Stitcher::AddLink(uint64_t child, uint64_t parent) {
  if (child == parent) {
    ++counters_.links_rejected;
    return;
  }
  // Refuse a link that would close a cycle.
  uint64_t p = parent;
  for (int depth = 0; depth < kMaxLinkDepth; ++depth) {
    Order* a = FindOpen(p);
    if (a == nullptr || !a->has_parent) break;
    if (a->parent_id == child) {
      ++counters_.links_rejected;
      return;
    }
    p = a->parent_id;
  }
  const uint32_t ci = OrderIndex(child, nullptr);
  if (ci == kNoOrder) {
    ++counters_.records_over_open_limit;
    return;
  }
  Order& c = Cell(ci);
  if (c.has_parent) {
    if (c.parent_id != parent) ++counters_.links_rejected;
    if (!c.lingering) Touch(c, ci);
    return;
  }
  const uint32_t pi = OrderIndex(parent, nullptr);
  if (pi == kNoOrder) {
    ++counters_.records_over_open_limit;
    return;
  }
  Order& po = Cell(pi);
  c.has_parent = true;
  c.parent_id = parent;
  if (!c.lingering) Touch(c, ci);
  ++po.open_children;
  po.has_children = true;
  if (!po.lingering) Touch(po, pi);
}

void Stitcher::AdvanceClock(uint64_t tsc) {
  if (!clock_seen_) {
    // Orders that arrived before the first clock start their timeout now.
    timeouts_.clear();
    for (uint32_t idx = 0; idx < pool_.size(); ++idx) {
      Order& o = Cell(idx);
      if (!o.live || o.lingering || o.held) continue;
      o.last_activity = tsc;
      if (settings_.timeout_ticks > 0) timeouts_.push_back(TickCell{tsc, idx});
    }
    clock_seen_ = true;
  }
  clock_ = std::max(clock_, tsc);
  for (const PendingRef& ref : pending_previous_) {
    Order& o = Cell(ref.idx);
    if (!o.live || o.id != ref.id || o.instance != ref.instance) continue;
    if (!o.pending || o.lingering || o.held) continue;
    if (o.open_children == 0) {
      FinishOrderAt(ref.idx);
    } else {
      o.pending = false;  // a parent that reached the end: its children decide; timeout later
    }
  }
  pending_previous_.swap(pending_current_);
  pending_current_.clear();
  FinishTimedOut();
  ExpireLingering(/*all=*/false);
  ForgetOldInstances();
  if (!pipeline_known_ && held_order_.size() >= settings_.learn_orders) Learn();
}

bool Stitcher::NeedsClock(uint64_t now_tsc) const {
  if (!pending_current_.empty() || !pending_previous_.empty()) return true;
  if (!linger_.empty() && now_tsc > linger_.front().at &&
      now_tsc - linger_.front().at >= settings_.linger_ticks) {
    return true;
  }
  if (settings_.timeout_ticks == 0) return false;
  if (!timed_out_parents_.empty()) return true;
  // The front may be an entry that moved on since (then the tick finds
  // nothing and drops it): a clock chunk too many, never one too few.
  return !timeouts_.empty() && now_tsc >= timeouts_.front().at &&
         now_tsc - timeouts_.front().at >= settings_.timeout_ticks;
}

// Every open order whose last record is timeout_ticks old or older, unless
// it waits for linked children, finishes at this clock, in the order of
// (last activity, id, instance): a pure function of the stream.
void Stitcher::FinishTimedOut() {
  if (settings_.timeout_ticks == 0) return;
  due_.clear();
  auto consider = [this](uint32_t idx, uint64_t at) {
    const Order& o = Cell(idx);
    if (!o.live || o.lingering || o.held || o.last_activity != at) return;  // moved on
    if (clock_ - o.last_activity < settings_.timeout_ticks) return;
    if (o.open_children > 0) return;  // its last child's emission brings it back
    due_.emplace_back(o.last_activity, o.id, o.instance, idx);
  };
  while (!timeouts_.empty() && clock_ - timeouts_.front().at >= settings_.timeout_ticks) {
    const TickCell t = timeouts_.front();
    timeouts_.pop_front();
    consider(t.idx, t.at);
  }
  for (const PendingRef& ref : timed_out_parents_) {
    const Order& o = Cell(ref.idx);
    if (o.live && o.id == ref.id && o.instance == ref.instance) consider(ref.idx, o.last_activity);
  }
  timed_out_parents_.clear();
  if (due_.empty()) return;
  std::sort(due_.begin(), due_.end());
  due_.erase(std::unique(due_.begin(), due_.end()), due_.end());
  for (const auto& [last, id, instance, idx] : due_) {
    const Order& o = Cell(idx);
    if (o.live && !o.lingering && !o.held && o.id == id) FinishOrderAt(idx);
  }
}

void Stitcher::FinishOrderAt(uint32_t idx) {
  Order& o = Cell(idx);
  if (settings_.linger_ticks > 0 && !finishing_) {
    // It stays in the table (its id leads late records to it), lingering.
    o.lingering = 1;
    o.pending = 0;
    o.last_activity = clock_;
    ++lingering_count_;
    linger_.push_back(TickCell{clock_, idx});
    const size_t slot = table_.Find(o.id);
    if (table_.Found(slot) && table_.at(slot).value == idx &&
        table_.at(slot).state() == IdTable::kOpen) {
      table_.at(slot).SetState(IdTable::kLingering);
    }
    return;
  }
  LeaveTable(idx);
  EmitFinished(idx);
}

void Stitcher::ExpireLingering(bool all) {
  while (!linger_.empty()) {
    const TickCell t = linger_.front();
    if (!all && clock_ - t.at < settings_.linger_ticks) break;
    linger_.pop_front();
    Order& o = Cell(t.idx);
    if (!o.live || !o.lingering) continue;
    o.lingering = 0;
    --lingering_count_;
    if (o.open_children > 0) {
      // A child linked to it while it lingered: it waits for its children
      // again (and finishes by its timeout, or at the end), open.
      const size_t slot = table_.Find(o.id);
      if (table_.Found(slot) && table_.at(slot).value == t.idx &&
          table_.at(slot).state() == IdTable::kLingering) {
        table_.at(slot).SetState(IdTable::kOpen);
      }
      o.last_activity = clock_;
      if (settings_.timeout_ticks > 0) timeouts_.push_back(TickCell{clock_, t.idx});
      continue;
    }
    LeaveTable(t.idx);
    EmitFinished(t.idx);
  }
}

void Stitcher::EmitFinished(uint32_t idx) {
  --live_orders_;
  Order& o = Cell(idx);
  if (pipeline_known_) {
    Emit(o);
    Release(idx, /*held=*/false);
  } else {
    // Hold it for learning; its parent may finish now.
    if (o.has_parent) {
      const uint32_t pi = FindAnyIndex(o.parent_id);
      if (pi != kNoOrder && Cell(pi).open_children > 0 && --Cell(pi).open_children == 0 &&
          finishing_) {
        childless_.push_back(pi);
      }
    }
    // An id used again while learning is a second order: both are held (and
    // later emitted) by pool index; the map finds the latest as a parent.
    o.held = 1;
    held_.insert_or_assign(o.id, idx);
    held_order_.emplace_back(o.id, idx);
  }
}

void Stitcher::Release(uint32_t idx, bool held) {
  Order& o = Cell(idx);
  if (!held && o.has_parent) {
    const uint32_t pi = FindAnyIndex(o.parent_id);
    if (Order* p = pi == kNoOrder ? nullptr : &Cell(pi);
        p && p->open_children > 0 && --p->open_children == 0) {
      if (finishing_) childless_.push_back(pi);
      // A fanned-out parent whose linked children have all finished is
      // finished too (at the next clock tick, then it lingers for late
      // links), not only at its timeout: the tick stages of a fan-out show
      // while the run goes on.
      if (pipeline_known_ && !p->lingering && !p->pending && FindOpen(o.parent_id) == p) {
        MarkPending(table_.at(table_.Find(o.parent_id)).value);  // FindOpen: its slot has it
      } else if (!p->lingering && !p->held && settings_.timeout_ticks > 0 &&
                 clock_ - p->last_activity >= settings_.timeout_ticks) {
        // Its timeout passed while it waited: it finishes at the next clock.
        const size_t slot = table_.Find(p->id);
        if (table_.Found(slot) && table_.at(slot).state() == IdTable::kOpen) {
          timed_out_parents_.push_back(PendingRef{p->id, table_.at(slot).value, p->instance});
        }
      }
    }
  }
  if (o.overflow != 0) {
    overflow_[o.overflow - 1].clear();
    overflow_free_.push_back(o.overflow - 1);
  }
  o = Order{};
  free_.push_back(idx);
}

// chain_[pos]: the stamp of each pipeline stage, the order's own (the
// earliest of a repeated stage) or else one inherited from its linked
// ancestors (the earliest up the chain).
inline void Stitcher::BuildChain(const Order& o) {
  chain_.assign(pipeline_.size(), ChainEntry{});
  for (const Event& e : Events(o)) {
    const int pos = PositionOf(e.name_id);
    if (!StampLike(e, pos)) {
      if (e.kind == abi::kStamp || e.kind == abi::kExternal) ++counters_.outside_pipeline;
      continue;
    }
    ChainEntry& c = chain_[pos];
    if (c.event != nullptr) {
      ++counters_.repeated_stages;
      if (e.tsc >= c.event->tsc) continue;
    }
    c = ChainEntry{&e, true};
  }
  bool has_parent = o.has_parent;
  uint64_t parent = o.parent_id;
  for (int depth = 0; has_parent && depth < kMaxLinkDepth; ++depth) {
    const Order* a = FindAny(parent);
    if (a == nullptr) break;
    for (const Event& e : Events(*a)) {
      const int pos = PositionOf(e.name_id);
      if (!StampLike(e, pos)) continue;
      ChainEntry& c = chain_[pos];
      if (c.event != nullptr && c.event->tsc <= e.tsc) continue;
      c = ChainEntry{&e, false};
    }
    has_parent = a->has_parent;
    parent = a->parent_id;
  }
}

// One `a->b` sample per consecutive pair of present stages whose later end
// is the order's own; the missing stages into out_.missing. Returns the
// chain's first and last present entries (null when none).
inline std::pair<const Stitcher::ChainEntry*, const Stitcher::ChainEntry*>
Stitcher::AddStageSamples(uint16_t late_flag) {
  StitchedOrder& out = out_;
  const ChainEntry* first = nullptr;
  const ChainEntry* prev = nullptr;
  for (int pos = 0; pos < static_cast<int>(chain_.size()); ++pos) {
    const ChainEntry& cur = chain_[pos];
    if (cur.event == nullptr) {
      out.missing.push_back(static_cast<uint32_t>(pos));
      continue;
    }
    if (first == nullptr) first = &cur;
    if (prev != nullptr && cur.own) {
      const Event& a = *prev->event;
      const Event& b = *cur.event;
      StitchedSample& sample = out.samples.emplace_back();
      sample.flags = PairFlags(a, b, prev->own && cur.own, &sample) | late_flag;
      sample.stage_id = TransitionStage(a.name_id, b.name_id);
    }
    prev = &cur;
  }
  return {first, prev};
}

// Spans and intervals: their own duration under their tag. Every record
// as a stamp when a sink wants them.
inline void Stitcher::AddSpansAndStamps(const Order& o, uint16_t late_flag) {
  StitchedOrder& out = out_;
  bool want_stamps = false;
  for (const StitchedOrderSink* sink : sinks_) want_stamps = want_stamps || sink->WantsStamps();
  const EventSpan events = Events(o);
  out.records = static_cast<uint32_t>(events.size());
  if (want_stamps) out.stamps.reserve(events.size());
  for (const Event& e : events) {
    const bool is_span = e.kind == abi::kSpan || e.kind == abi::kMeasure;
    int32_t span_sample = -1;
    uint16_t flags = late_flag;
    if (e.kind == abi::kExternal) flags |= kFlagExternal;
    if (is_span) {
      StitchedSample& sample = out.samples.emplace_back();
      sample.flags = SpanFlagsOf(e, &sample) | late_flag;
      sample.stage_id = SpanStage(e.name_id);
      flags = sample.flags;
      span_sample = static_cast<int32_t>(out.samples.size() - 1);
    }
    if (!want_stamps) continue;
    StitchedStamp& st = out.stamps.emplace_back();
    st.tsc = e.tsc;
    st.name_id = e.name_id;
    st.kind = static_cast<uint8_t>(e.kind);
    st.flags = flags;
    st.aux = e.aux;
    st.end_aux = e.end_aux;
    st.process_id = e.process_id;
    st.tid = e.tid;
    st.duration_ticks = e.duration_ticks;
    st.span_sample = span_sample;
  }
}

// Complete, fanned out, incomplete or late, each counted.
inline void Stitcher::Classify(const Order& o, bool late) {
  StitchedOrder& out = out_;
  if (late) {
    out.complete = false;
    ++counters_.orders_late;
    counters_.late_records += o.count;
  } else if (o.has_children) {
    out.complete = true;  // its chain continues in its children
    out.fanned_out = true;
    out.missing.clear();
    ++counters_.orders_fanned_out;
  } else if (out.missing.empty()) {
    out.complete = true;
    ++counters_.orders_complete;
  } else {
    out.complete = false;
    ++counters_.orders_incomplete;
    for (uint32_t pos : out.missing) ++counters_.missing_by_stage[pipeline_[pos]];
  }
}

void Stitcher::Emit(Order& o) {
  ++emitted_;
  BuildChain(o);
  // A reused id's instance without the first stage: records that came after
  // their order was emitted (stitcher.h, "Lingering and instances").
  const bool late = o.instance > 0 && !chain_.empty() && chain_[0].event == nullptr;
  const uint16_t late_flag = late ? kFlagLate : 0;

  StitchedOrder& out = out_;
  out.Clear();
  out.seq = emitted_;
  out.order_id = o.id;
  out.instance = o.instance;
  out.late = late;
  out.has_parent = o.has_parent;
  out.parent_order_id = o.parent_id;

  const auto [first, last] = AddStageSamples(late_flag);
  uint64_t chain_start = 0;
  if (first != nullptr) {
    chain_start = first->event->tsc;
  } else if (o.count > 0) {
    const EventSpan events = Events(o);
    chain_start = events.begin()->tsc;
    for (const Event& e : events) chain_start = std::min(chain_start, e.tsc);
  }
  out.chain_start_tsc = chain_start;
  AddSpansAndStamps(o, late_flag);
  Classify(o, late);

  out.has_total = first != nullptr && last != nullptr && first != last;
  if (out.has_total) {
    out.total_begin_tsc = first->event->tsc;
    out.total_end_tsc = last->event->tsc;
    if (out.complete && !o.has_children) {
      StitchedSample& sample = out.samples.emplace_back();
      sample.flags = PairFlags(*first->event, *last->event, first->own && last->own, &sample);
      sample.stage_id = total_stage_;
      out.total_sample = static_cast<int32_t>(out.samples.size() - 1);
    }
  }

  const StitchView view = View();
  for (StitchedOrderSink* sink : sinks_) sink->OnStitchedOrder(out, view);
}

void Stitcher::Learn() {
  // Mean offset of each stamp tag from its order's chain start.
  absl::flat_hash_map<uint32_t, std::pair<double, uint64_t>> offsets;
  absl::flat_hash_map<uint32_t, uint64_t> first_tsc;  // scratch, per order
  for (const auto& [id, idx] : held_order_) {
    const Order* o = &Cell(idx);
    first_tsc.clear();
    const Order* a = o;
    for (int depth = 0; a != nullptr && depth <= kMaxLinkDepth; ++depth) {
      for (const Event& e : Events(*a)) {
        if (e.kind != abi::kStamp && e.kind != abi::kExternal) continue;
        auto [it, inserted] = first_tsc.emplace(e.name_id, e.tsc);
        if (!inserted) it->second = std::min(it->second, e.tsc);
      }
      a = a->has_parent ? FindAny(a->parent_id) : nullptr;
    }
    if (first_tsc.empty()) continue;
    uint64_t start = first_tsc.begin()->second;
    for (const auto& [name, tsc] : first_tsc) start = std::min(start, tsc);
    for (const auto& [name, tsc] : first_tsc) {
      auto& [sum, n] = offsets[name];
      sum += time_.DiffNs(tsc, start);
      ++n;
    }
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, sn] : offsets) {
    ranked.emplace_back(sn.first / static_cast<double>(sn.second), tag_names_->Name(name));
  }
  std::sort(ranked.begin(), ranked.end());
  pipeline_.clear();
  pipeline_index_.clear();
  for (auto& [offset, name] : ranked) {
    pipeline_index_.emplace(name, static_cast<int>(pipeline_.size()));
    pipeline_.push_back(std::move(name));
  }
  position_by_name_.clear();
  pipeline_known_ = true;
  learned_ = true;
  if (on_learned && !held_order_.empty()) on_learned(pipeline_, held_order_.size());

  // Emit what was held, in the order it finished (children before parents).
  for (const auto& [id, idx] : held_order_) Emit(Cell(idx));
  held_.clear();
  for (const auto& [id, idx] : held_order_) Release(idx, /*held=*/true);
  held_order_.clear();

  // Open orders that already reached the last stage finish soon, in the
  // order of their ids (then instances).
  if (!pipeline_.empty()) {
    std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> ready;
    for (uint32_t idx = 0; idx < pool_.size(); ++idx) {
      const Order& o = Cell(idx);
      if (!o.live || o.lingering || o.held || o.pending) continue;
      for (const Event& e : Events(o)) {
        const int pos = PositionOf(e.name_id);
        if (pos == static_cast<int>(pipeline_.size()) - 1 && StampLike(e, pos)) {
          ready.emplace_back(o.id, o.instance, idx);
          break;
        }
      }
    }
    std::sort(ready.begin(), ready.end());
    for (const auto& [id, instance, idx] : ready) MarkPending(idx);
  }
}

void Stitcher::Finish() {
  // The stream ended: nothing more can join a lingering order, and orders
  // finished from here on are emitted at once.
  finishing_ = true;
  ExpireLingering(/*all=*/true);
  // Taken out of the lists first: finishing a child can make its fanned-out
  // parent pending (Release appends to pending_current_), which would move a
  // list being walked. Those parents are finished by the loop below.
  for (auto* list : {&pending_previous_, &pending_current_}) {
    std::vector<PendingRef> refs;
    refs.swap(*list);
    for (const PendingRef& ref : refs) {
      const Order& o = Cell(ref.idx);
      if (o.live && o.id == ref.id && o.instance == ref.instance && o.pending && !o.lingering &&
          !o.held && o.open_children == 0) {
        FinishOrderAt(ref.idx);
      }
    }
  }
  pending_previous_.clear();
  pending_current_.clear();
  timed_out_parents_.clear();
  // Nothing lingers now (ExpireLingering above; finishing_: no more
  // lingering). The open orders, those without open children first, in the
  // order of (id, instance); a parent follows its children. Rounds: after
  // the first, only the parents whose last child a round emitted can be
  // ready (childless_); every open order is looked at again only when none
  // of them is (a cycle, or the first round).
  std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> ready;
  bool first_round = true;
  while (live_orders_ > 0) {
    ready.clear();
    if (!first_round) {
      for (uint32_t idx : childless_) {
        const Order& o = Cell(idx);
        if (o.live && !o.held && !o.lingering && o.open_children == 0) {
          ready.emplace_back(o.id, o.instance, idx);
        }
      }
    }
    childless_.clear();
    first_round = false;
    for (bool any : {false, true}) {
      if (!ready.empty()) break;
      for (uint32_t idx = 0; idx < pool_.size(); ++idx) {
        const Order& o = Cell(idx);
        if (!o.live || o.held || o.lingering) continue;
        if (any || o.open_children == 0) ready.emplace_back(o.id, o.instance, idx);
      }
      if (!ready.empty()) break;  // `any`: cannot happen without a cycle
    }
    if (ready.empty()) break;
    std::sort(ready.begin(), ready.end());
    ready.erase(std::unique(ready.begin(), ready.end()), ready.end());
    for (const auto& [id, instance, idx] : ready) {
      const Order& o = Cell(idx);
      if (o.live && !o.held && !o.lingering && o.id == id) FinishOrderAt(idx);
    }
  }
  if (!pipeline_known_) Learn();
}

}  // namespace ticktrace::collect
