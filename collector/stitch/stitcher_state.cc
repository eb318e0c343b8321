// Stitcher::SaveState / LoadState: the stitcher's part of a checkpoint
// (collector/stream/checkpoint.h). Kept apart from the stitching itself.
//
// Only live cells are written, each with its pool index, so that every FIFO
// and list that names an order by cell reads the same after LoadState; the
// id table is written sorted by id and rebuilt (its layout is not state).
// Nothing the stitcher decides depends on where an id sits in the table (the
// timeouts and the final flush sort), so a restored stitcher emits the same
// orders in the same order, with the same sequence numbers, as the one saved.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "collector/stitch/stitcher.h"

namespace ticktrace::collect {
namespace {

void PutTickCells(StateWriter& w, size_t n, auto&& at) {
  w.Put<uint64_t>(n);
  for (size_t i = 0; i < n; ++i) {
    const auto t = at(i);
    w.Put<uint64_t>(t.at);
    w.Put<uint32_t>(t.idx);
  }
}

template <typename Event>
void PutEvent(StateWriter& w, const Event& e) {
  w.Put<uint64_t>(e.tsc);
  w.Put<uint32_t>(e.aux);
  w.Put<uint32_t>(e.end_aux);
  w.Put<uint32_t>(e.duration_ticks);
  w.Put<uint32_t>(e.name_id);
  w.Put<uint8_t>(static_cast<uint8_t>(e.kind));
  w.Put<uint8_t>(static_cast<uint8_t>(e.flags));
  w.Put<uint32_t>(e.process_id);
  w.Put<uint32_t>(e.tid);
}

// False when the event names a tag that is not known (name_limit).
template <typename Event>
bool GetEvent(StateReader& r, size_t name_limit, Event* e) {
  e->tsc = r.Get<uint64_t>();
  e->aux = r.Get<uint32_t>();
  e->end_aux = r.Get<uint32_t>();
  e->duration_ticks = r.Get<uint32_t>();
  const uint32_t name_id = r.Get<uint32_t>();
  if (name_id >= name_limit) return false;
  e->name_id = name_id;
  e->kind = r.Get<uint8_t>() & 7;
  e->flags = r.Get<uint8_t>() & 7;
  e->process_id = r.Get<uint32_t>();
  e->tid = r.Get<uint32_t>();
  return true;
}

}  // namespace

void Stitcher::SaveState(StateWriter& w) const {
  SaveHeader(w);
  SavePool(w);
  SaveTables(w);
  SaveCounters(w);
}

bool Stitcher::LoadState(StateReader& r) {
  if (!LoadHeader(r) || !LoadPool(r) || !LoadTables(r)) return false;
  LoadCounters(r);
  // Caches of stage ids by name: refilled on use from the restored StageStats.
  transition_stage_.clear();
  span_stage_.clear();
  return r.ok();
}

// The pipeline, the stream's clock and the UTC anchors (the first is the
// run's own, from the settings).
void Stitcher::SaveHeader(StateWriter& w) const {
  w.Put<uint8_t>(pipeline_known_);
  w.Put<uint8_t>(learned_);
  w.Put<uint64_t>(pipeline_.size());
  for (const std::string& p : pipeline_) w.PutString(p);

  w.Put<uint64_t>(clock_);
  w.Put<uint8_t>(clock_seen_);
  w.Put<uint32_t>(next_tag_);
  w.Put<uint64_t>(emitted_);

  w.Put<uint64_t>(time_.later_anchors.size());
  for (const UtcAnchor& a : time_.later_anchors) {
    w.Put<uint64_t>(a.tsc);
    w.Put<int64_t>(a.utc_ns);
  }
}

bool Stitcher::LoadHeader(StateReader& r) {
  pipeline_known_ = r.Get<uint8_t>() != 0;
  learned_ = r.Get<uint8_t>() != 0;
  const uint64_t stages = r.GetCount(8);
  pipeline_.clear();
  for (uint64_t i = 0; i < stages && r.ok(); ++i) pipeline_.push_back(r.GetString());
  pipeline_index_.clear();
  for (size_t i = 0; i < pipeline_.size(); ++i) pipeline_index_.emplace(pipeline_[i], int(i));
  position_by_name_.clear();  // a cache, refilled from the pipeline

  clock_ = r.Get<uint64_t>();
  clock_seen_ = r.Get<uint8_t>() != 0;
  next_tag_ = r.Get<uint32_t>() & IdTable::kTagMask;
  emitted_ = r.Get<uint64_t>();

  const uint64_t anchors = r.GetCount(16);
  time_.later_anchors.clear();
  for (uint64_t i = 0; i < anchors && r.ok(); ++i) {
    const uint64_t tsc = r.Get<uint64_t>();
    const int64_t utc_ns = r.Get<int64_t>();
    if (!time_.AddAnchor(tsc, utc_ns)) return false;
  }
  return true;
}

// The free list in its order (the next cells reused are the same), then the
// live cells by pool index.
void Stitcher::SavePool(StateWriter& w) const {
  w.Put<uint64_t>(pool_.size());
  w.Put<uint64_t>(free_.size());
  for (uint32_t idx : free_) w.Put<uint32_t>(idx);
  uint64_t live = 0;
  for (uint32_t idx = 0; idx < pool_.size(); ++idx) live += Cell(idx).live;
  w.Put<uint64_t>(live);
  for (uint32_t idx = 0; idx < pool_.size(); ++idx) {
    const Order& o = Cell(idx);
    if (!o.live) continue;
    w.Put<uint32_t>(idx);
    w.Put<uint64_t>(o.id);
    w.Put<uint64_t>(o.parent_id);
    w.Put<uint64_t>(o.last_activity);
    w.Put<uint32_t>(o.open_children);
    w.Put<uint32_t>(o.instance);
    w.Put<uint8_t>(static_cast<uint8_t>(o.has_parent | o.has_children << 1 | o.pending << 2 |
                                        o.lingering << 3 | o.held << 4));
    const EventSpan events = Events(o);
    w.Put<uint64_t>(events.size());
    for (const Event& e : events) PutEvent(w, e);
  }
}

bool Stitcher::LoadPool(StateReader& r) {
  const uint64_t pool_size = r.Get<uint64_t>();
  std::vector<uint32_t> free_cells(r.GetCount(4));
  for (uint32_t& idx : free_cells) idx = r.Get<uint32_t>();
  const uint64_t live = r.GetCount(4 + 8 + 8 + 8 + 4 + 4 + 1 + 8);
  // Every cell is free or live, and both lists were in the input: a corrupt
  // size cannot make the pool huge.
  if (!r.ok() || pool_size != free_cells.size() + live || pool_size >= (uint64_t{1} << 32)) {
    return false;
  }
  pool_.Reset(static_cast<uint32_t>(pool_size));
  overflow_.clear();
  overflow_free_.clear();
  live_orders_ = 0;
  lingering_count_ = 0;
  const size_t name_limit = std::min<size_t>(kMaxNameIds, tag_names_->size());
  for (uint64_t i = 0; i < live && r.ok(); ++i) {
    const uint32_t idx = r.Get<uint32_t>();
    if (idx >= pool_size || Cell(idx).live) return false;
    Order& o = Cell(idx);
    o.live = 1;
    o.id = r.Get<uint64_t>();
    o.parent_id = r.Get<uint64_t>();
    o.last_activity = r.Get<uint64_t>();
    o.open_children = r.Get<uint32_t>();
    o.instance = std::min(r.Get<uint32_t>(), kMaxInstance);
    const uint8_t bits = r.Get<uint8_t>();
    o.has_parent = bits & 1;
    o.has_children = (bits >> 1) & 1;
    o.pending = (bits >> 2) & 1;
    o.lingering = (bits >> 3) & 1;
    o.held = (bits >> 4) & 1;
    if (o.lingering && o.held) return false;
    if (!o.held) ++live_orders_;
    if (o.lingering) ++lingering_count_;
    const uint64_t events = r.GetCount(8 + 4 * 4 + 2 + 8);
    for (uint64_t k = 0; k < events && r.ok(); ++k) {
      Event e{};
      if (!GetEvent(r, name_limit, &e)) return false;
      PushEvent(o, e);
    }
  }
  for (uint32_t idx : free_cells) {
    if (idx >= pool_size || Cell(idx).live) return false;
  }
  free_ = std::move(free_cells);
  return r.ok();
}

// The id table (sorted by id), the FIFOs in their order, the orders held for
// learning, the pending ones.
void Stitcher::SaveTables(StateWriter& w) const {
  std::vector<IdTable::Slot> slots;
  slots.reserve(table_.size());
  table_.ForEach([&slots](const IdTable::Slot& s) { slots.push_back(s); });
  std::sort(slots.begin(), slots.end(),
            [](const IdTable::Slot& a, const IdTable::Slot& b) { return a.id < b.id; });
  w.Put<uint64_t>(slots.size());
  for (const IdTable::Slot& s : slots) {
    w.Put<uint64_t>(s.id);
    w.Put<uint32_t>(s.value);
    w.Put<uint32_t>(s.meta);
  }
  PutTickCells(w, linger_.size(), [this](size_t i) { return linger_[i]; });
  PutTickCells(w, timeouts_.size(), [this](size_t i) { return timeouts_[i]; });
  w.Put<uint64_t>(memory_looks_.size());
  for (size_t i = 0; i < memory_looks_.size(); ++i) {
    w.Put<uint64_t>(memory_looks_[i].at);
    w.Put<uint64_t>(memory_looks_[i].id);
    w.Put<uint32_t>(memory_looks_[i].tag);
  }
  w.Put<uint64_t>(held_order_.size());
  for (const auto& [id, idx] : held_order_) {
    w.Put<uint64_t>(id);
    w.Put<uint32_t>(idx);
  }
  for (const auto* list : {&pending_current_, &pending_previous_, &timed_out_parents_}) {
    w.Put<uint64_t>(list->size());
    for (const PendingRef& p : *list) {
      w.Put<uint64_t>(p.id);
      w.Put<uint32_t>(p.idx);
      w.Put<uint32_t>(p.instance);
    }
  }
}

bool Stitcher::LoadTables(StateReader& r) {
  const uint32_t pool_size = pool_.size();
  const uint64_t slots = r.GetCount(16);
  table_.Reset(std::max<size_t>(slots, settings_.expected_open_orders));
  for (uint64_t i = 0; i < slots && r.ok(); ++i) {
    const uint64_t id = r.Get<uint64_t>();
    const uint32_t value = r.Get<uint32_t>();
    const uint32_t meta = r.Get<uint32_t>();
    const auto state = static_cast<IdTable::State>(meta & 3);
    if (state == IdTable::kEmpty) return false;
    if (state != IdTable::kMemory) {
      // An open or lingering slot names a live cell of its id, in that state.
      if (value >= pool_size) return false;
      const Order& o = Cell(value);
      if (!o.live || o.held || o.id != id || bool(o.lingering) != (state == IdTable::kLingering)) {
        return false;
      }
    }
    const size_t slot = table_.Find(id);
    if (table_.Found(slot)) return false;  // an id twice
    table_.Insert(slot, id, value, state, meta >> 2);
  }
  auto get_cells = [&r, pool_size](Fifo<TickCell>* q) {
    q->clear();
    const uint64_t n = r.GetCount(12);
    for (uint64_t i = 0; i < n && r.ok(); ++i) {
      const uint64_t at = r.Get<uint64_t>();
      const uint32_t idx = r.Get<uint32_t>();
      if (idx >= pool_size) return false;
      q->push_back(TickCell{at, idx});
    }
    return r.ok();
  };
  if (!get_cells(&linger_) || !get_cells(&timeouts_)) return false;
  memory_looks_.clear();
  const uint64_t looks = r.GetCount(20);
  for (uint64_t i = 0; i < looks && r.ok(); ++i) {
    const uint64_t at = r.Get<uint64_t>();
    const uint64_t id = r.Get<uint64_t>();
    memory_looks_.push_back(MemoryLook{at, id, r.Get<uint32_t>() & IdTable::kTagMask});
  }
  held_.clear();
  held_order_.clear();
  const uint64_t held = r.GetCount(12);
  for (uint64_t i = 0; i < held && r.ok(); ++i) {
    const uint64_t id = r.Get<uint64_t>();
    const uint32_t idx = r.Get<uint32_t>();
    if (idx >= pool_size || !Cell(idx).held || Cell(idx).id != id) return false;
    held_order_.emplace_back(id, idx);
    held_.insert_or_assign(id, idx);  // the latest of an id, as when they were held
  }
  for (auto* list : {&pending_current_, &pending_previous_, &timed_out_parents_}) {
    list->clear();
    const uint64_t n = r.GetCount(16);
    for (uint64_t i = 0; i < n && r.ok(); ++i) {
      PendingRef p;
      p.id = r.Get<uint64_t>();
      p.idx = r.Get<uint32_t>();
      p.instance = r.Get<uint32_t>();
      if (p.idx >= pool_size) return false;
      list->push_back(p);
    }
  }
  return r.ok();
}

// The counters.
void Stitcher::SaveCounters(StateWriter& w) const {
  const StitchCounters& c = counters_;
  for (uint64_t v : {c.orders_complete, c.orders_incomplete, c.orders_fanned_out,
                     c.outside_pipeline, c.repeated_stages, c.links_rejected,
                     c.standalone_samples, c.orders_late, c.late_records, c.reused_ids,
                     c.records_over_open_limit}) {
    w.Put<uint64_t>(v);
  }
  w.Put<uint64_t>(c.missing_by_stage.size());
  for (const auto& [stage, n] : c.missing_by_stage) {
    w.PutString(stage);
    w.Put<uint64_t>(n);
  }
}

// The caller checks r.ok().
void Stitcher::LoadCounters(StateReader& r) {
  StitchCounters& c = counters_;
  for (uint64_t* v : {&c.orders_complete, &c.orders_incomplete, &c.orders_fanned_out,
                      &c.outside_pipeline, &c.repeated_stages, &c.links_rejected,
                      &c.standalone_samples, &c.orders_late, &c.late_records, &c.reused_ids,
                      &c.records_over_open_limit}) {
    *v = r.Get<uint64_t>();
  }
  const uint64_t missing = r.GetCount(16);
  c.missing_by_stage.clear();
  for (uint64_t i = 0; i < missing && r.ok(); ++i) {
    std::string stage = r.GetString();
    c.missing_by_stage[std::move(stage)] = r.Get<uint64_t>();
  }
}

}  // namespace ticktrace::collect
