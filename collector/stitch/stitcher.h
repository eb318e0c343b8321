// Stitching: gathers the records of each order ID from every thread of every
// process, decides when the order is finished, and turns it into stage
// samples (docs/design.md#stitching-stages-and-flags). A finished order leaves as a StitchedOrder
// (stitched_order.h): stage ids, TSC ends and flags decided here, no strings
// and no ns; the sinks convert (the statistics first, then the store's rows).
//
// Stages. With a pipeline (declared, or learned) p0, p1, ..., pn:
//   'a->b'   between consecutive stages present in an order's chain, in
//            pipeline order: tsc(b) - tsc(a), kept negative when it is;
//   '<tag>'  a Span's (or interval's) own duration, under its tag name;
//   'total'  from the chain's first stage to its last, for complete orders
//            that did not fan out.
// link(child, parent): the child's chain is its parent's stamps followed by its
// own, so a child's first stage and its total start at the tick that caused it.
// A pair is sampled by the order that owns its later end, so a parent's
// stages are counted once however many children it has.
//
// Finishing. An order is finished when
//   - its pipeline's last stage arrived, two clock ticks (drain passes) later,
//     so that records of earlier stages drained in the same or the next pass
//     are not missed; or
//   - no record of it arrived for timeout_ticks of the stream's clock: it
//     finishes at the first clock tick at or after its last record's clock
//     plus timeout_ticks (one tick before, it is still open); or
//   - the stream ends (Finish()).
// Orders finishing at one tick finish in a fixed order: those whose last
// stage came first, in the order they reached it; then the timed-out ones by
// (last record's clock, id, instance); at the end of the stream the open
// ones by (id, instance), children before their parents.
// A parent waits for its children, and a fanned-out parent is finished once
// its last linked child is emitted (two clock ticks later, then it lingers,
// so that a child linked late still joins it). Time is only the stream's clock
// (AdvanceClock, from kClock chunks), never the wall clock, so the same stream
// always gives the same result (replay, journal recovery).
//
// Lingering and instances (docs/design.md#stitching-stages-and-flags). A finished order lingers for
// linger_ticks (the collector: min(order timeout, 100 ms)) before it is
// emitted: a record of its id that arrives meanwhile (a late link, a late
// earlier stage, a re-sent last stage) joins it. A record of an id whose
// order was already emitted opens a new *instance* of the id: instances are
// numbered 0, 1, 2, ... per id in stream order, and (run, order id,
// instance) is the store's key, so a producer that restarts and reuses its
// ids has both uses stored. An instance of a reused id (instance > 0) that
// lacks the pipeline's first stage cannot be a fresh use of the id (every
// use starts at the first stage): it is made of records that came after
// their order was emitted. It is emitted as a partial instance flagged
// `late` (orders.late, samples' and stamps' flag kFlagLate) and its records
// are counted in late_records; it is never merged into the old instance nor
// dropped.
// An id used again while its previous use lingers (or has its last stage and
// waits for its clock ticks) is a new instance when the record repeats the
// pipeline's first stage of that order, or repeats a stage that a different
// process stamped in it: a producer that restarts, or a second one reusing
// the same ids, is not merged into the old orders. The old order then
// finishes on its own (it leaves the id to the new one: records of the id
// from then on are the new instance's). Any other record of a lingering
// order joins it, a repeated stage of the process that stamped it included
// (counted in repeated_stages). While the pipeline is being learned there
// are no stages to tell, and such records join the lingering order.
// An id is remembered (its next instance number, one 16-byte table slot)
// from its first record until instance_memory_ticks() after its last use.
//
// Learning. Without a declared pipeline, orders finish by timeout only and
// are held until `learn_orders` of them have finished (or the stream ends);
// then the usual order of stamp tags (by mean offset from the chain start) is
// the pipeline, and everything held is emitted with it.
//
// Flags (stage_stats.h has the bits): cross_core when both ends carry a known
// core and the cores differ; its uncertainty is the sum of the two cores'
// measured bounds (settings.cores, updated by SetCores). A difference below
// zero is
//   out_of_order when both stamps are on one core, or when one thread stamped
//       the later stage before the earlier one (ring order contradicts the
//       pipeline);
//   skew when it is cross-core and within its uncertainty;
//   negative otherwise (beyond the bound, or cores unknown or not measured).
// A span: the producer saw its end read below its begin
// (kRecordSpanBackwards) and kept how far; it is stored negative and flagged
// negative (skew when its ends are on two cores and within their bound);
// migrated when its begin and end cores differ; saturated when it lasted
// 2^32 ticks or more (a lower bound). With correct_skew a cross-core
// difference has the two cores' measured offsets subtracted first.
//
// Where it keeps things (docs/collector.md, "The stitcher's tables"): one
// open-addressing table keyed by order id whose slot says whether the id is
// an open order, a lingering one, or only remembered (its next instance);
// orders in a pool of fixed cells with four records inline; the linger as a
// FIFO of cells; the timeouts as a FIFO in deadline order (every order has
// the same timeout, so the deadlines are pushed in order: the whole timing
// wheel is one queue). So a record costs one probe, and nothing scans every
// open order until the stream ends (Finish) or a pipeline is learned.
//
// Not thread-safe: one analysis thread owns a Stitcher.

#ifndef TICKTRACE_COLLECTOR_STITCHER_H_
#define TICKTRACE_COLLECTOR_STITCHER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "collector/analysis/name_table.h"
#include "collector/sinks/order_rows.h"
#include "collector/app/run_info.h"
#include "collector/sinks/stage_stats.h"
#include "collector/sinks/stage_stats_sink.h"
#include "collector/stream/state_codec.h"
#include "collector/stitch/stitch_table.h"
#include "collector/stitch/stitched_order.h"
#include "collector/time/time_base.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

// Tag names a Stitcher can tell apart (Event packs the id into 26 bits).
inline constexpr uint32_t kMaxNameIds = 1u << 26;

struct StitchSettings {
  std::vector<std::string> pipeline;  // declared stage tags in order; empty: learn
  uint64_t timeout_ticks = 0;         // 0: orders finish by last stage or at the end only
  size_t learn_orders = 100;          // orders to learn the pipeline from
  size_t expected_open_orders = 1u << 16;  // hash-table space reserved up front
  uint64_t linger_ticks = 0;          // a finished order waits this long before it is emitted
  // Open and lingering orders at most (memory: ~230 B each); a record that
  // would open one more is counted in records_over_open_limit. 0: no limit.
  uint64_t max_open_orders = 0;
  std::vector<CoreSkew> cores;        // measured offsets (RunInfo.cores); empty: not measured
  bool correct_skew = false;          // subtract the cores' offsets from cross-core differences
};

// One attributed record (stamp, span or interval) of an order.
struct StitchEvent {
  uint64_t tsc = 0;              // stamp TSC, or a span's begin
  uint64_t order_id = 0;
  uint32_t aux = abi::kAuxUnknown;
  uint32_t end_aux = abi::kAuxUnknown;  // spans; kExternal: its clock
  uint32_t duration_ticks = 0;          // spans; kExternal: PackUncertaintyNs
  uint32_t name_id = 0;          // tag name, interned in the analyzer's tag NameTable
  uint32_t process_id = 0;
  uint32_t tid = 0;
  uint8_t kind = abi::kStamp;    // kStamp, kSpan, kMeasure or kExternal
  uint8_t flags = 0;             // abi::RecordFlags
};

struct StitchCounters {
  uint64_t orders_complete = 0;
  uint64_t orders_incomplete = 0;
  uint64_t orders_fanned_out = 0;   // parents: their chains continue in their children
  uint64_t outside_pipeline = 0;    // stamps whose tag is not a pipeline stage
  uint64_t repeated_stages = 0;     // a stage stamped again in one order (first kept)
  uint64_t links_rejected = 0;      // self links, second parents, cycles
  uint64_t standalone_samples = 0;  // spans/intervals without an order id
  uint64_t orders_late = 0;         // partial instances of records that came after their order
  uint64_t late_records = 0;        // the records (stamps and spans) of those instances
  uint64_t reused_ids = 0;          // instances after an id's first (instance > 0)
  uint64_t records_over_open_limit = 0;  // records of orders beyond max_open_orders (not kept)
  std::map<std::string, uint64_t> missing_by_stage;
};

class Stitcher {
 public:
  // `tag_names` and `stats` must outlive the Stitcher; `sink` may be null
  // (statistics only). Every finished order goes, as a StitchedOrder, to the
  // statistics (a StageStatsSink on `stats`, which also names the stage ids),
  // then to `sink`, then to the sinks added with AddSink.
  Stitcher(const StitchSettings& settings, const TimeBase& time_base,
           const NameTable* tag_names, StageStats* stats, StitchedOrderSink* sink);

  // One more sink (it must outlive the Stitcher); called after the others.
  void AddSink(StitchedOrderSink* sink) { sinks_.push_back(sink); }

  // Adds a stamp, span or interval. kSpan/kMeasure with order_id 0 become
  // standalone samples of their tag.
  void AddEvent(const StitchEvent& e);
  // The same for each of `events` in turn, looking their ids up a few
  // records ahead (a prefetch) so that their table slots are in cache.
  void AddEvents(std::span<const StitchEvent> events);
  // `child` continues `parent`'s chain.
  void AddLink(uint64_t child, uint64_t parent);
  // A drain pass started at `tsc`: finishes due orders.
  void AdvanceClock(uint64_t tsc);
  // The stream ended: finishes every order (incomplete ones as such).
  void Finish();
  // A new measurement of the cores' offsets (a run info update): differences
  // emitted from now on use it.
  void SetCores(const std::vector<CoreSkew>& cores);
  // A new (TSC, UTC) anchor (a run info update): UTC of orders emitted from
  // now on maps piecewise through it.
  void AddAnchor(uint64_t tsc, int64_t utc_ns) { time_.AddAnchor(tsc, utc_ns); }
  const TimeBase& time_base() const { return time_; }

  // True when a clock tick at `now_tsc` would finish something (pending
  // completions, or an open order whose timeout passed).
  bool NeedsClock(uint64_t now_tsc) const;

  bool pipeline_known() const { return pipeline_known_; }
  bool pipeline_learned() const { return learned_; }
  const std::vector<std::string>& pipeline() const { return pipeline_; }
  // Orders not emitted yet: open, and finished but lingering.
  size_t open_orders() const { return live_orders_; }
  // Ids whose next instance number is remembered (open, lingering, or seen
  // within instance_memory_ticks() of the stream).
  size_t remembered_ids() const { return table_.size(); }
  // Orders whose last stage arrived, waiting for their clock ticks.
  bool has_pending() const { return !pending_current_.empty() || !pending_previous_.empty(); }
  const StitchCounters& counters() const { return counters_; }
  // Orders emitted so far (the last StitchedOrder::seq).
  uint64_t emitted() const { return emitted_; }

  // The whole state, for a checkpoint (collector/stream/checkpoint.h): open,
  // lingering and held orders with their events, instance memory, the
  // learned pipeline, the clock, the counters and the UTC anchors. Stage ids
  // are the StageStats' (saved by the analyzer); lookup caches are rebuilt.
  // LoadState REQUIRES: a Stitcher fresh from the constructor with the
  // settings the saved one had; false on bad input (then discard it).
  void SaveState(StateWriter& w) const;
  bool LoadState(StateReader& r);

  // Called once when the pipeline was learned, with the number of orders it was learned from.
  std::function<void(const std::vector<std::string>& pipeline, size_t orders)> on_learned;

 private:
  // 32 bytes: an order in flight costs its Events, so kind and flags share a
  // word with the name id (names are capped at kMaxNameIds).
  struct Event {
    uint64_t tsc;
    uint32_t aux, end_aux;
    uint32_t duration_ticks;
    uint32_t name_id : 26;
    uint32_t kind : 3;   // abi::RecordKind
    uint32_t flags : 3;  // abi::RecordFlags (three bits defined)
    uint32_t process_id;
    uint32_t tid;
  };
  static_assert(sizeof(Event) == 32);
  static constexpr uint32_t kInlineEvents = 4;
  static constexpr uint32_t kMaxInstance = (1u << 26) - 1;  // an id's uses saturate here
  // One cell of the order pool (stitch_table.h's OrderPool): 168 bytes.
  // Four events inline; a longer order moves all of them into one of
  // overflow_'s vectors (reused, so no allocation per order once warm) and
  // keeps them contiguous there: PairFlags compares their addresses.
  struct Order {
    uint64_t id = 0;
    uint64_t parent_id = 0;
    uint64_t last_activity = 0;  // stream clock at the last record; lingering: at its finish
    uint32_t open_children = 0;
    uint32_t instance : 26 = 0;
    uint32_t has_parent : 1 = 0;
    uint32_t has_children : 1 = 0;
    uint32_t pending : 1 = 0;    // last stage seen; finishing soon
    uint32_t live : 1 = 0;       // cell in use
    uint32_t lingering : 1 = 0;  // finished, waiting linger_ticks before it is emitted
    uint32_t held : 1 = 0;       // finished while learning the pipeline
    uint32_t count = 0;          // events
    uint32_t overflow = 0;       // 0: events inline; else 1 + index into overflow_
    Event inline_events[kInlineEvents];
  };
  static_assert(sizeof(Order) == 40 + 32 * kInlineEvents);
  struct EventSpan {
    const Event* first;
    const Event* last;
    const Event* begin() const { return first; }
    const Event* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
  };
  struct ChainEntry {
    const Event* event = nullptr;
    bool own = false;
  };
  // A core's measured offset against the reference core.
  struct CoreClock {
    bool measured = false;
    double offset_ns = 0;
    double bound_ns = 0;
  };
  // (clock, pool index): the linger FIFO and the timeout queue.
  struct TickCell {
    uint64_t at;
    uint32_t idx;
  };
  // (clock, id, tag): when an id's instance memory is looked at.
  struct MemoryLook {
    uint64_t at;
    uint64_t id;
    uint32_t tag;
  };
  // An order whose last stage arrived, by cell; id and instance tell a cell
  // reused since from the order that was put on the list.
  struct PendingRef {
    uint64_t id;
    uint32_t idx;
    uint32_t instance;
  };

  // The open order's pool index for a record of `order_id` (`e`: the record,
  // null for a link), created if absent; kNoOrder when creating it would
  // exceed max_open_orders.
  static constexpr uint32_t kNoOrder = UINT32_MAX;
  uint32_t OrderIndex(uint64_t order_id, const StitchEvent* e);
  uint32_t NewOrder(uint64_t order_id, uint32_t instance);
  bool StartsNewInstance(const Order& o, const StitchEvent& e);
  Order* FindOpen(uint64_t order_id);  // open, not lingering
  Order* FindAny(uint64_t order_id);  // open, lingering, or held for learning
  uint32_t FindAnyIndex(uint64_t order_id) const;  // the same, its pool index; kNoOrder: none
  Order& Cell(uint32_t idx) { return pool_.at(idx); }
  const Order& Cell(uint32_t idx) const { return pool_.at(idx); }
  EventSpan Events(const Order& o) const;
  void PushEvent(Order& o, const Event& ev);
  // The order's last record was at clock_ now: its timeout is due at
  // clock_ + timeout_ticks (one more entry of timeouts_).
  void Touch(Order& o, uint32_t idx);
  void PushMemoryLook(size_t slot);
  // The order leaves the table: its slot keeps the id's next instance.
  void LeaveTable(uint32_t idx);
  // The flags of a sample, and what it carries of the cores' clocks. Its
  // value in ns is needed only to decide them; the sinks convert again.
  uint16_t PairFlags(const Event& a, const Event& b, bool same_ring,
                    StitchedSample* sample) const;
  template <typename E>
  uint16_t SpanFlagsOf(const E& e, StitchedSample* sample) const;
  const CoreClock* Core(uint32_t aux) const;
  void AddRecord(const StitchEvent& e);
  void ExpireLingering(bool all);
  void EmitFinished(uint32_t idx);  // after lingering: emit or hold
  int PositionOf(uint32_t name_id);
  bool StampLike(const Event& e, int pos) const;
  void FinishTimedOut();
  void FinishOrderAt(uint32_t idx);  // REQUIRES: an open (not lingering, not held) order
  void MarkPending(uint32_t idx);
  // SaveState and LoadState in parts, in the order written (stitcher_state.cc).
  void SaveHeader(StateWriter& w) const;
  bool LoadHeader(StateReader& r);
  void SavePool(StateWriter& w) const;
  bool LoadPool(StateReader& r);
  void SaveTables(StateWriter& w) const;
  bool LoadTables(StateReader& r);
  void SaveCounters(StateWriter& w) const;
  void LoadCounters(StateReader& r);
  void Emit(Order& o);  // REQUIRES: pipeline_known_
  // Emit's steps, in order, each on out_ and chain_.
  void BuildChain(const Order& o);
  std::pair<const ChainEntry*, const ChainEntry*> AddStageSamples(uint16_t late_flag);
  void AddSpansAndStamps(const Order& o, uint16_t late_flag);
  void Classify(const Order& o, bool late);
  StitchView View() const { return StitchView{&time_, tag_names_, stats_, &pipeline_}; }
  void Release(uint32_t idx, bool held);
  void Learn();
  uint32_t TransitionStage(uint32_t from_name, uint32_t to_name);
  uint32_t SpanStage(uint32_t name_id);

  StitchSettings settings_;
  TimeBase time_;
  const NameTable* tag_names_;
  StageStats* stats_;
  StageStatsSink stats_sink_;
  std::vector<StitchedOrderSink*> sinks_;  // stats_sink_ first
  StitchedOrder out_;  // scratch: what Emit hands to the sinks

  std::vector<std::string> pipeline_;
  bool pipeline_known_ = false;
  bool learned_ = false;
  absl::flat_hash_map<std::string, int> pipeline_index_;
  std::vector<int> position_by_name_;  // tag name id -> pipeline position or -1

  // The orders, in cells that never move (stitch_table.h).
  OrderPool<Order> pool_;
  std::vector<uint32_t> free_;  // cells to reuse, the last freed first
  std::vector<std::vector<Event>> overflow_;  // events of orders longer than kInlineEvents
  std::vector<uint32_t> overflow_free_;
  // Every id the stitcher knows, one slot each: an open order, a lingering
  // one (the slot holds its cell) or the instance memory an emitted id
  // leaves (the slot holds its next instance number). One probe per record.
  IdTable table_;
  size_t live_orders_ = 0;      // open and lingering cells (max_open_orders counts these)
  size_t lingering_count_ = 0;  // the lingering ones among them
  // Finished, lingering: (finish clock, cell) in finishing order, so in
  // clock order; the front is the next to emit.
  Fifo<TickCell> linger_;
  // (last activity, cell) for every clock at which an open order got a
  // record: the timeouts in deadline order (one timeout for every order, so
  // a FIFO is the whole timing wheel). An entry whose cell moved on since
  // (a later record, finished, reused) is skipped when it comes up.
  Fifo<TickCell> timeouts_;
  // Parents whose timeout passed while they waited for children; the last
  // child is emitted now: they finish at the next clock.
  std::vector<PendingRef> timed_out_parents_;
  // Finish(): the pool indices of parents whose last open child was emitted
  // since its last round, the only orders that can have become ready (a
  // round over every open order per link made a chain of links quadratic).
  std::vector<uint32_t> childless_;
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t, uint32_t>> due_;  // scratch
  bool finishing_ = false;  // Finish(): no lingering
  // When the table looks at an id's instance memory again: each opening of
  // an id queues a look instance_memory_ticks() later, tagged; the slot
  // keeps the tag of its latest, so an older look finds a newer tag and
  // passes. A look that finds the id gone (instance memory only) forgets it;
  // one that finds it open or lingering queues another. Memory follows the
  // order rate, not the run's length. A reuse after that starts at instance
  // 0 again; the store tells it from a re-emitted order by its first TSC and
  // gives it the next free instance (store/sqlite/sqlite_writer.cc).
  Fifo<MemoryLook> memory_looks_;
  uint32_t next_tag_ = 0;  // IdTable::kTagBits wide; it wraps
  uint64_t instance_memory_ticks() const {
    return 2 * settings_.timeout_ticks + 2 * settings_.linger_ticks;
  }
  void ForgetOldInstances();
  std::vector<CoreClock> core_clock_;  // by cpu number
  absl::flat_hash_map<uint64_t, uint32_t> held_;  // finished while learning: id -> latest cell
  // (order id, pool index) in finishing order; an id may appear more than once.
  std::vector<std::pair<uint64_t, uint32_t>> held_order_;
  std::vector<PendingRef> pending_current_, pending_previous_;

  uint64_t emitted_ = 0;  // FinishedOrder::seq of the last emitted order
  uint64_t clock_ = 0;
  bool clock_seen_ = false;

  absl::flat_hash_map<uint64_t, uint32_t> transition_stage_;
  std::vector<int64_t> span_stage_;  // tag name id -> stage id or -1
  uint32_t total_stage_ = 0;
  std::vector<ChainEntry> chain_;  // scratch
  StitchCounters counters_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STITCHER_H_
