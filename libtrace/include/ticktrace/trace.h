// ticktrace: the instrumentation API linked into traced processes.
//
//   ticktrace::Tag md_rx{"md_rx"};                // register a stage name once
//   ticktrace::stamp(md_rx, order_id);            // this order reached this stage (rdtsc + core)
//   ticktrace::stamp_rdtscp(md_rx, order_id);     // same, core and node from rdtscp's aux
//   ticktrace::stamp_fenced(md_rx, order_id);     // lfence;rdtsc;lfence, for micro-measurement
//   {
//     ticktrace::Span s(decide, order_id);        // rdtsc + core at begin ...
//   }                                             // ... and at end (or s.end()); both cores kept
//   ticktrace::FencedSpan f(parse, order_id);     // rdtscp;lfence at both ends
//   ticktrace::link(child_order_id, parent_id);   // this order was caused by that one
//   ticktrace::stamp_at(wire_rx, order_id, ns, ticktrace::Clock::kRealtime);
//                                                 // reached it at `ns`, read by another clock
//
// Each call writes one 32-byte record into the calling thread's ring in this
// process's shared-memory segment (layout: ticktrace/abi.h). A thread must be
// attached before it writes: the segment created if needed (see Init), a ring
// claimed and its pages reserved and mapped. That takes locks, system calls
// and, for a large ring, milliseconds. Call AttachThisThread() at the start of
// every traced thread so that no order pays for it. A thread that has not
// called it attaches in its first trace call, *before* that call reads the
// TSC: the call's record then says when the call ended, and no stage holds
// the attach. Every later call is the fast
// path: a TSC read, a 32-byte store and a release store of the write index —
// inline, noexcept, no lock, no allocation, no system call, and no
// __tls_get_addr (the per-thread block uses the initial-exec TLS model).
//
// Nothing is ever lost silently: a full ring drops the record and counts it in
// the ring's `dropped`; a thread that finds no free ring, or whose ring
// /dev/shm cannot hold, counts its records in the segment header; a process
// that cannot create its segment counts them in DroppedWithoutSegment().
// No trace call raises a signal, whatever /dev/shm holds: every page a call
// writes is reserved (fallocate) and mapped in that thread's first call, or
// the call is a counted no-op (TraceStatus() says which and why). A segment
// file shrunk by another process (a group member) raises SIGBUS on the next
// store; the library catches it and the calls become counted no-ops
// (TracerStatus::segment_truncated).
//
// Any thread may call every function here. A child created by fork() gets its
// own segment on its first trace call.

#ifndef TICKTRACE_TRACE_H_
#define TICKTRACE_TRACE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "ticktrace/abi.h"
#include "ticktrace/status.h"
#include "ticktrace/tsc.h"

namespace ticktrace {

// Settings of this process's segment. Defaults come from the environment:
// TICKTRACE_SESSION, TICKTRACE_RING_RECORDS, TICKTRACE_RINGS,
// TICKTRACE_SEGMENT_MODE (octal), TICKTRACE_SEGMENT_GROUP.
struct Options {
  std::string session = "default";   // [A-Za-z0-9_-]{1,64}
  uint32_t ring_records = 1u << 16;  // per thread; rounded up to a power of two
  uint32_t rings = 64;               // threads that can trace at once
  uint32_t segment_mode = 0600;      // permission bits of the shm file
  std::string segment_group;         // empty: the creator's group

  // Defaults overridden by the TICKTRACE_* environment variables. A malformed
  // variable is an error (kInvalidArgument), so that a typo never silently
  // traces elsewhere.
  static Result<Options> FromEnvironment();
  // kInvalidArgument, saying which field and what it must be, when a field is
  // out of range.
  Status Validate() const;
};

// Creates this process's segment with `options`.
// REQUIRES: called before the first trace call of this process (after it, the
// segment exists and this returns kFailedPrecondition). Optional: without it the
// first trace call creates the segment from Options::FromEnvironment().
// Errors (ticktrace/status.h): kInvalidArgument for bad options; kUnavailable or
// kResourceExhausted when /dev/shm cannot hold or name the segment.
Status Init(const Options& options);

// The shared-memory object name of a process's segment: "ticktrace.<session>.<pid>".
std::string SegmentName(std::string_view session, uint32_t pid);

// When that name is taken by a file another user planted in /dev/shm, the
// process uses "ticktrace.<session>.<pid>.<n>" for the first free n in
// 1..kMaxSegmentNameSuffix; the collector lists both forms.
inline constexpr uint32_t kMaxSegmentNameSuffix = 16;

// This process's segment name, or "" before the segment exists.
std::string CurrentSegmentName();

// Records this process could not write because it has no segment (creation failed).
uint64_t DroppedWithoutSegment() noexcept;

// What this process's tracing got from /dev/shm, read at one moment.
struct TracerStatus {
  std::string segment_name;    // "" when the process has no segment
  std::string segment_error;   // why the segment could not be created, or was lost; "" otherwise
  uint64_t ring_bytes = 0;     // /dev/shm bytes one ring's records take (ring_records * 32)
  // The footprint. segment_bytes: the sparse geometry this process maps (all
  // rings, reserved or not), which costs address space, not memory.
  // reserved_bytes: what /dev/shm holds for it, abi::ReservedBytes (header,
  // tag table, slot headers and every ring ever claimed); a collector refuses
  // the segment when this is above its --max-segment-bytes.
  uint64_t segment_bytes = 0;
  uint64_t reserved_bytes = 0;
  uint32_t rings_claimed = 0;   // slots ever claimed (their rings' pages stay reserved)
  uint64_t rings_reserved = 0;  // thread attaches that got a ring with its pages reserved
  uint64_t rings_refused = 0;   // threads refused a ring because /dev/shm could not hold it
  int last_refusal_errno = 0;   // errno of the latest refusal (ENOSPC: /dev/shm full); 0: none
  // The segment header's counters (0 without a segment): threads with no ring
  // (no free slot, or refused) and the records those threads attempted.
  uint64_t threads_without_slot = 0;
  uint64_t slotless_dropped = 0;
  uint64_t dropped_without_segment = 0;  // as DroppedWithoutSegment()
  // The segment file was shrunk (ftruncate) by another process that may
  // write it (a member of TICKTRACE_SEGMENT_GROUP): the library caught the
  // SIGBUS, replaced the mapping by a dead copy, and made every later trace
  // call a counted no-op; segment_error says so (docs/security.md).
  bool segment_truncated = false;
  uint64_t dropped_after_truncation = 0;  // trace calls made no-ops since
};

// Attaches the calling thread now: creates this process's segment if it does
// not exist yet (from Options::FromEnvironment() unless Init ran), claims a
// ring and reserves and maps its pages. Call it once at the start of every
// traced thread, outside anything measured; later calls return at once.
// Returns OK when the thread owns a ring; otherwise why its trace calls will
// be counted no-ops: the segment's creation error (as Init's), or
// kResourceExhausted when no ring is free or /dev/shm cannot hold one.
// A cold path: takes a lock and makes system calls. Any thread may call it.
Status AttachThisThread();

// A cold-path query for logs and health checks: takes a lock; do not call it
// on a hot path. Any thread may call it, at any time.
TracerStatus TraceStatus();

// A stage name, registered once per process into the segment's tag table.
// Construct once (a global or a static) and reuse: construction takes a lock.
// A name longer than abi::kTagNameMax is truncated; a full table gives the tag
// abi::kTagInvalid (counted in the segment header as tags_rejected) and its
// records are counted by the collector instead of being attributed.
class Tag {
 public:
  explicit Tag(std::string_view name);
  uint16_t id() const noexcept { return id_; }

 private:
  uint16_t id_;
};

namespace internal {

// The calling thread's view of its ring. All-zero means "not attached": the
// first write takes the slow path. Trivially constructible and destructible,
// so that access compiles to a %fs-relative load with no TLS wrapper call.
struct ThreadRing {
  abi::Record* records;                // this thread's ring, in the segment
  std::atomic<uint64_t>* write_index;  // its shared write index (we are the only writer)
  uint64_t next_write;                 // our copy of *write_index
  uint64_t write_limit;                // cached read_index + capacity: IndexBefore it, there is room
  uint64_t mask;                       // capacity - 1
  // Where this thread's core is read: the kernel's rseq cpu_id (glibc >= 2.35
  // registers it), or &no_rseq_cpu_id without rseq. Set when the thread
  // attaches, whatever the outcome; nullptr means "not attached yet", so the
  // one branch a stamp already takes on it also sends a first call to attach.
  const volatile uint32_t* rseq_cpu_id;
  // abi::kAuxUnknown once set: what a thread without rseq reads as its core.
  uint32_t no_rseq_cpu_id;
};

extern constinit thread_local ThreadRing tls_ring __attribute__((tls_model("initial-exec")));

// Attaches the calling thread if it never tried (a first trace call without
// AttachThisThread()), then sets its rseq_cpu_id. Never inline.
void AttachOnFirstCall() noexcept;

// For the calls that do not read the core through rseq_cpu_id: attaches a
// thread's first call before its TSC is read. One load and a predicted branch.
inline void AttachIfFirstCall() noexcept {
  if (__builtin_expect(tls_ring.rseq_cpu_id == nullptr, 0)) AttachOnFirstCall();
}

// Attaches the thread, or refreshes the cached read index when the ring looks
// full, then writes `record` or counts it as dropped. Never inline: it keeps
// the fast path small.
void WriteSlow(const abi::Record& record) noexcept;

inline abi::Record MakeRecord(uint64_t tsc, uint64_t order_id, uint64_t payload, uint32_t aux,
                              uint16_t tag_id, uint8_t kind, uint8_t flags) noexcept {
  abi::Record r;
  r.tsc = tsc;
  r.order_id = order_id;
  r.payload.raw = payload;
  r.aux = aux;
  r.tag_id = tag_id;
  r.kind = kind;
  r.flags = flags;
  return r;
}

// True when ring index `a` comes before `b`. Indices grow forever and wrap at
// 2^64 (a limit of read_index + capacity wraps first), so they are compared
// by their difference, which is always within +-capacity here; the same one
// compare-and-branch as `a < b`.
inline constexpr bool IndexBefore(uint64_t a, uint64_t b) noexcept {
  return static_cast<int64_t>(a - b) < 0;
}

// Writes one record into the calling thread's ring. The fields are stored
// straight into the ring cell (no temporary), then published.
inline void Write(uint64_t tsc, uint64_t order_id, uint64_t payload, uint32_t aux, uint16_t tag_id,
                  uint8_t kind, uint8_t flags) noexcept {
  ThreadRing& ring = tls_ring;
  const uint64_t w = ring.next_write;
  if (__builtin_expect(internal::IndexBefore(w, ring.write_limit), 1)) {
    abi::Record* cell = &ring.records[w & ring.mask];
    cell->tsc = tsc;
    cell->order_id = order_id;
    cell->payload.raw = payload;
    cell->aux = aux;
    cell->tag_id = tag_id;
    cell->kind = kind;
    cell->flags = flags;
    ring.next_write = w + 1;
    // Release: publishes the cell; pairs with the collector's acquire load of
    // write_index in SegmentReader::Peek().
    ring.write_index->store(w + 1, std::memory_order_release);
    return;
  }
  WriteSlow(MakeRecord(tsc, order_id, payload, aux, tag_id, kind, flags));
}

// The TSC and the core it was read on, with plain rdtsc: the kernel's rseq
// cpu_id is read before and after it. Equal: the read happened on that core
// (a move to another core goes through the kernel, which updates cpu_id, and
// whatever executed before it has retired). Different (the thread moved in
// between), or no rseq: kAuxUnknown. The aux holds the cpu only (node bits 0);
// compare cores with abi::AuxCpu. Two plain loads beside rdtsc: ~0.6 ns.
// A thread not attached yet attaches first, so its TSC is read after it.
inline uint64_t ReadTscAndCore(uint32_t* aux) noexcept {
  const volatile uint32_t* cpu = tls_ring.rseq_cpu_id;
  if (__builtin_expect(cpu == nullptr, 0)) {
    AttachOnFirstCall();
    cpu = tls_ring.rseq_cpu_id;
  }
  const uint32_t before = *cpu;
  // Compiler barriers only: the loads and rdtsc stay in program order.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const uint64_t tsc = ReadTsc();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const uint32_t after = *cpu;
  *aux = (before == after && before <= abi::kAuxCpuMask) ? before : abi::kAuxUnknown;
  return tsc;
}

// As ReadTscAndCore where rseq is available; otherwise rdtscp (its aux).
// For spans, whose two ends must each know their core.
inline uint64_t ReadTscAndCoreOrTscp(uint32_t* aux) noexcept {
  AttachIfFirstCall();
  if (__builtin_expect(tls_ring.rseq_cpu_id == &tls_ring.no_rseq_cpu_id, 0)) return ReadTscp(aux);
  return ReadTscAndCore(aux);
}

// rdtscp;lfence, after attaching a thread's first call (FencedSpan's ends).
inline uint64_t ReadTscFencedEndAttached(uint32_t* aux) noexcept {
  AttachIfFirstCall();
  return ReadTscFencedEnd(aux);
}

inline uint64_t SpanPayload(uint32_t end_aux, uint64_t begin_tsc, uint64_t end_tsc,
                            uint8_t* flags) noexcept {
  uint64_t ticks = end_tsc - begin_tsc;
  if (__builtin_expect(end_tsc < begin_tsc, 0)) {
    // Only possible across cores whose counters differ: keep how far back
    // (the collector stores it as a negative duration, never clamped to 0).
    ticks = begin_tsc - end_tsc;
    *flags |= abi::kRecordSpanBackwards;
  }
  if (__builtin_expect(ticks > 0xffffffffull, 0)) {
    ticks = 0xffffffffull;
    *flags |= abi::kRecordSpanSaturated;
  }
  abi::RecordPayload p;
  p.span.end_aux = end_aux;
  p.span.duration_ticks = static_cast<uint32_t>(ticks);
  return p.raw;
}

}  // namespace internal

// The order `order_id` reached the stage `tag` now. Plain rdtsc, and the core
// from the kernel's rseq area (kAuxUnknown without rseq, or when the thread
// moved during the read).
inline void stamp(const Tag& tag, uint64_t order_id) noexcept {
  uint32_t aux;
  const uint64_t tsc = internal::ReadTscAndCore(&aux);
  internal::Write(tsc, order_id, 0, aux, tag.id(), abi::kStamp, 0);
}

// As stamp(), read with rdtscp so the record says which core it was taken on.
inline void stamp_rdtscp(const Tag& tag, uint64_t order_id) noexcept {
  internal::AttachIfFirstCall();
  uint32_t aux;
  const uint64_t tsc = ReadTscp(&aux);
  internal::Write(tsc, order_id, 0, aux, tag.id(), abi::kStamp, 0);
}

// As stamp(), read as lfence; rdtsc; lfence so that no instruction moves across
// it: for micro-measurements between two stamps a few tens of ns apart.
inline void stamp_fenced(const Tag& tag, uint64_t order_id) noexcept {
  internal::AttachIfFirstCall();
  internal::Write(ReadTscFencedBegin(), order_id, 0, abi::kAuxUnknown, tag.id(), abi::kStamp,
                  abi::kRecordFenced);
}

// `child_order_id` was caused by `parent_order_id` (one tick fans out into
// orders): the collector continues the child's stage chain from its parent's.
inline void link(uint64_t child_order_id, uint64_t parent_order_id) noexcept {
  internal::AttachIfFirstCall();
  internal::Write(ReadTsc(), child_order_id, parent_order_id, abi::kAuxUnknown, abi::kTagInvalid,
                  abi::kLink, 0);
}

// The clock that read the time given to stamp_at (abi::ExternalClock).
enum class Clock : uint32_t {
  // CLOCK_REALTIME: the kernel's software packet timestamps (ticktrace/net.h),
  // or a time the program read with clock_gettime(CLOCK_REALTIME).
  kRealtime = abi::kClockRealtime,
  // A NIC's PTP hardware clock, already converted to CLOCK_REALTIME's
  // timescale by the program (or the same as it, phc2sys). Its error is the
  // PHC's sync error: the collector's --clock-error-ns, or ptp4l's report.
  kPhc = abi::kClockPhc,
  // A time from a message, e.g. a venue's transact time: its error is unknown
  // to this host unless stated (--exchange-clock-error-ns).
  kExchange = abi::kClockExchange,
};

// The order `order_id` reached the stage `tag` at `ns` nanoseconds since the
// Unix epoch, as read by `clock` (not by the TSC). The collector places it on
// the order's timeline through its UTC anchors, with an uncertainty (the
// anchors' error plus the clock's own), and flags the stages it ends or
// begins `external` (docs/api.md, "Timestamps from other clocks").
// Hot path: one record, no system call (a plain rdtsc says when the call was
// made). REQUIRES: `clock` is one of Clock's values.
inline void stamp_at(const Tag& tag, uint64_t order_id, int64_t ns, Clock clock) noexcept {
  internal::AttachIfFirstCall();
  abi::RecordPayload payload;
  payload.external_ns = ns;
  internal::Write(ReadTsc(), order_id, payload.raw, static_cast<uint32_t>(clock), tag.id(),
                  abi::kExternal, 0);
}

namespace internal {

// What Span and FencedSpan share: `ReadEnd` takes the TSC and the core at
// each end, `kFlags` marks the record. One kSpan record carries the begin
// TSC, the duration and both cores, so the collector can flag a migration.
template <uint64_t (*ReadEnd)(uint32_t*) noexcept, uint8_t kFlags>
class SpanOf {
 public:
  SpanOf(const Tag& tag, uint64_t order_id) noexcept : order_id_(order_id), tag_id_(tag.id()) {
    begin_tsc_ = ReadEnd(&begin_aux_);
  }
  SpanOf(const SpanOf&) = delete;
  SpanOf& operator=(const SpanOf&) = delete;
  ~SpanOf() { end(); }

  // Ends the span now. Later calls do nothing.
  void end() noexcept {
    if (ended_) return;
    uint32_t end_aux;
    const uint64_t end_tsc = ReadEnd(&end_aux);
    ended_ = true;
    uint8_t flags = kFlags;
    const uint64_t payload = SpanPayload(end_aux, begin_tsc_, end_tsc, &flags);
    Write(begin_tsc_, order_id_, payload, begin_aux_, tag_id_, abi::kSpan, flags);
  }

 private:
  uint64_t begin_tsc_;
  uint64_t order_id_;
  uint32_t begin_aux_;
  uint16_t tag_id_;
  bool ended_ = false;
};

}  // namespace internal

// A stage measured inside one thread: rdtsc + the rseq core (rdtscp where rseq
// is not available) at construction and at end() (or destruction, whichever
// comes first). Not copyable; the same thread must construct and end it.
class Span : public internal::SpanOf<&internal::ReadTscAndCoreOrTscp, 0> {
 public:
  using SpanOf::SpanOf;
};

// As Span, but each end is `rdtscp; lfence`, so the measured code can neither
// start before the begin read nor finish after the end read. For code of tens
// of ns; the fences cost ~10-20 ns each.
class FencedSpan
    : public internal::SpanOf<&internal::ReadTscFencedEndAttached, abi::kRecordFenced> {
 public:
  using SpanOf::SpanOf;
};

// Records an interval measured elsewhere (START_MEASURE/END_MEASURE, the
// interval timer): `tag` took from `begin_tsc` to `end_tsc`. `order_id` may be 0.
// The caller read both TSCs: a thread's first call attaches after them, so
// call AttachThisThread() before `begin_tsc` is read.
inline void record_interval(const Tag& tag, uint64_t begin_tsc, uint64_t end_tsc,
                            uint64_t order_id = 0) noexcept {
  uint8_t flags = 0;
  const uint64_t payload = internal::SpanPayload(abi::kAuxUnknown, begin_tsc, end_tsc, &flags);
  internal::Write(begin_tsc, order_id, payload, abi::kAuxUnknown, tag.id(), abi::kMeasure, flags);
}

}  // namespace ticktrace

#endif  // TICKTRACE_TRACE_H_
