// Stitcher::SaveState / LoadState: the stitcher's part of a checkpoint
// (collector/stream/checkpoint.h). Kept apart from the stitching itself.
//
// Only live orders are written, each with its pool index, so that every map
// and queue that names an order by index reads the same after LoadState.
// Nothing the stitcher decides depends on hash-map iteration order (sweeps
// and the final flush sort), so a restored stitcher emits the same orders in
// the same order, with the same sequence numbers, as the one saved.

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "collector/stitch/stitcher.h"

namespace ticktrace::collect {
namespace {

template <typename Map>
void PutIdMap(StateWriter& w, const Map& m) {
  std::vector<std::pair<uint64_t, uint32_t>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end());  // the same bytes for the same state
  w.Put<uint64_t>(v.size());
  for (const auto& [id, idx] : v) {
    w.Put<uint64_t>(id);
    w.Put<uint32_t>(idx);
  }
}

template <typename Map>
bool GetIdMap(StateReader& r, size_t pool_size, Map* m) {
  const uint64_t n = r.GetCount(12);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    const uint64_t id = r.Get<uint64_t>();
    const uint32_t idx = r.Get<uint32_t>();
    if (idx >= pool_size) return false;
    (*m)[id] = idx;
  }
  return r.ok();
}

void PutIds(StateWriter& w, const std::vector<uint64_t>& v) {
  w.Put<uint64_t>(v.size());
  for (uint64_t id : v) w.Put<uint64_t>(id);
}

bool GetIds(StateReader& r, std::vector<uint64_t>* v) {
  const uint64_t n = r.GetCount(8);
  v->clear();
  for (uint64_t i = 0; i < n && r.ok(); ++i) v->push_back(r.Get<uint64_t>());
  return r.ok();
}

// (clock ticks, order id) queues: the linger queue, instance expiry.
void PutTickIds(StateWriter& w, const std::deque<std::pair<uint64_t, uint64_t>>& q) {
  w.Put<uint64_t>(q.size());
  for (const auto& [at, id] : q) {
    w.Put<uint64_t>(at);
    w.Put<uint64_t>(id);
  }
}

void GetTickIds(StateReader& r, std::deque<std::pair<uint64_t, uint64_t>>* q) {
  const uint64_t n = r.GetCount(16);
  q->clear();
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    const uint64_t at = r.Get<uint64_t>();
    q->emplace_back(at, r.Get<uint64_t>());
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
  SaveInstancesAndCounters(w);
}

bool Stitcher::LoadState(StateReader& r) {
  if (!LoadHeader(r) || !LoadPool(r) || !LoadTables(r)) return false;
  LoadInstancesAndCounters(r);
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
  w.Put<uint64_t>(last_sweep_clock_);
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
  last_sweep_clock_ = r.Get<uint64_t>();
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

// Live orders by pool index.
void Stitcher::SavePool(StateWriter& w) const {
  w.Put<uint64_t>(pool_.size());
  uint64_t live = 0;
  for (const Order& o : pool_) live += o.live;
  w.Put<uint64_t>(live);
  for (uint32_t idx = 0; idx < pool_.size(); ++idx) {
    const Order& o = pool_[idx];
    if (!o.live) continue;
    w.Put<uint32_t>(idx);
    w.Put<uint64_t>(o.parent_id);
    w.Put<uint64_t>(o.last_activity);
    w.Put<uint32_t>(o.open_children);
    w.Put<uint32_t>(o.instance);
    w.Put<uint8_t>(static_cast<uint8_t>(o.has_parent | o.has_children << 1 | o.pending << 2 |
                                        o.lingering << 3));
    w.Put<uint64_t>(o.events.size());
    for (const Event& e : o.events) PutEvent(w, e);
  }
}

bool Stitcher::LoadPool(StateReader& r) {
  const uint64_t pool_size = r.Get<uint64_t>();
  const uint64_t live = r.GetCount(4 + 8 + 8 + 4 + 4 + 1 + 8);
  if (!r.ok() || pool_size > (uint64_t{1} << 32) || live > pool_size) return false;
  pool_.clear();
  pool_.resize(pool_size);
  const size_t name_limit = std::min<size_t>(kMaxNameIds, tag_names_->size());
  for (uint64_t i = 0; i < live && r.ok(); ++i) {
    const uint32_t idx = r.Get<uint32_t>();
    if (idx >= pool_size || pool_[idx].live) return false;
    Order& o = pool_[idx];
    o.live = 1;
    o.parent_id = r.Get<uint64_t>();
    o.last_activity = r.Get<uint64_t>();
    o.open_children = r.Get<uint32_t>();
    o.instance = r.Get<uint32_t>() & ((1u << 27) - 1);
    const uint8_t bits = r.Get<uint8_t>();
    o.has_parent = bits & 1;
    o.has_children = (bits >> 1) & 1;
    o.pending = (bits >> 2) & 1;
    o.lingering = (bits >> 3) & 1;
    const uint64_t events = r.GetCount(8 + 4 * 4 + 2 + 8);
    for (uint64_t k = 0; k < events && r.ok(); ++k) {
      Event e{};
      if (!GetEvent(r, name_limit, &e)) return false;
      o.events.push_back(e);
    }
  }
  free_.clear();
  for (uint64_t idx = pool_size; idx-- > 0;) {
    if (!pool_[idx].live) free_.push_back(static_cast<uint32_t>(idx));
  }
  return true;
}

// The tables that name orders by pool index: open, then lingering orders
// (the layout of the two tables this one replaced), the linger queue, the
// orders held for learning, the pending ones.
void Stitcher::SaveTables(StateWriter& w) const {
  std::vector<std::pair<uint64_t, uint32_t>> open, lingering;
  for (const auto& [id, idx] : orders_) {
    (pool_[idx].lingering ? lingering : open).emplace_back(id, idx);
  }
  PutIdMap(w, open);
  PutIdMap(w, lingering);
  PutTickIds(w, linger_queue_);
  PutIdMap(w, held_);
  w.Put<uint64_t>(held_order_.size());
  for (const auto& [id, idx] : held_order_) {
    w.Put<uint64_t>(id);
    w.Put<uint32_t>(idx);
  }
  PutIds(w, pending_current_);
  PutIds(w, pending_previous_);
}

bool Stitcher::LoadTables(StateReader& r) {
  const size_t pool_size = pool_.size();
  orders_.clear();
  lingering_count_ = 0;
  held_.clear();
  absl::flat_hash_map<uint64_t, uint32_t> open, lingering;
  if (!GetIdMap(r, pool_size, &open) || !GetIdMap(r, pool_size, &lingering)) return false;
  for (const auto& [id, idx] : open) {
    if (!pool_[idx].live || pool_[idx].lingering) return false;
    orders_.emplace(id, idx);
  }
  for (const auto& [id, idx] : lingering) {
    if (!pool_[idx].live || !pool_[idx].lingering || !orders_.emplace(id, idx).second) {
      return false;  // an order both open and lingering, or its flag says otherwise
    }
  }
  lingering_count_ = lingering.size();
  GetTickIds(r, &linger_queue_);
  if (!GetIdMap(r, pool_size, &held_)) return false;
  const uint64_t ho = r.GetCount(12);
  held_order_.clear();
  for (uint64_t i = 0; i < ho && r.ok(); ++i) {
    const uint64_t id = r.Get<uint64_t>();
    const uint32_t idx = r.Get<uint32_t>();
    if (idx >= pool_size) return false;
    held_order_.emplace_back(id, idx);
  }
  return GetIds(r, &pending_current_) && GetIds(r, &pending_previous_);
}

// What the stitcher remembers of each id (its next instance), and its counters.
void Stitcher::SaveInstancesAndCounters(StateWriter& w) const {
  std::vector<std::pair<uint64_t, InstanceMemory>> memory(next_instance_.begin(),
                                                           next_instance_.end());
  std::sort(memory.begin(), memory.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  w.Put<uint64_t>(memory.size());
  for (const auto& [id, m] : memory) {
    w.Put<uint64_t>(id);
    w.Put<uint32_t>(m.next);
    w.Put<uint64_t>(m.opened_at);
  }
  PutTickIds(w, instance_expiry_);

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
void Stitcher::LoadInstancesAndCounters(StateReader& r) {
  const uint64_t memory = r.GetCount(20);
  next_instance_.clear();
  next_instance_.reserve(memory);
  for (uint64_t i = 0; i < memory && r.ok(); ++i) {
    const uint64_t id = r.Get<uint64_t>();
    InstanceMemory m;
    m.next = r.Get<uint32_t>();
    m.opened_at = r.Get<uint64_t>();
    next_instance_[id] = m;
  }
  GetTickIds(r, &instance_expiry_);

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
