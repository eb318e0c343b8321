// ticktrace shared-memory ABI: the one authoritative description of a segment.
//
// Every instrumented process owns exactly one segment, a POSIX shared-memory
// object named
//
//     /dev/shm/ticktrace.<session>.<pid>
//
// created by that process (libtrace) on its first trace call or on Init(), and
// read by the collector, which may be another program built at another time.
// Everything here is read by other processes: explicitly-sized types only, no
// pointers (offsets from the segment base instead), no virtual functions, and
// all-zero memory is a valid empty state for every field except the header's
// identity fields, which the creator fills before it publishes `magic`.
//
//   offset 0                                            SegmentHeader::segment_size
//   +----------------+------------------------+------------+-----+------------+
//   | SegmentHeader  | TagEntry[tag_capacity] |   slot 0   | ... | slot N-1   |
//   | (1 KiB)        | (64 B each)            |            |     |            |
//   +----------------+------------------------+------------+-----+------------+
//                    ^ tag_table_offset       ^ slots_offset, slot_stride apart
//
//   one slot (slot_stride bytes):
//   +---------------------+---------------------+---------------------+---------------------------+
//   | SlotControl line 0  | line 1: producer    | line 2: collector   | Record[ring_capacity]     |
//   | state, tid, name,   | write_index,        | read_index          | 32 B each, two per line   |
//   | generation          | dropped             |                     |                           |
//   +---------------------+---------------------+---------------------+---------------------------+
//
// Who writes what
//   SegmentHeader identity, sizes, anchor ... the creating process, once, before magic.
//   SegmentHeader counters (tags_rejected, slotless_dropped, threads_without_slot,
//     rings_refused, last_refusal_errno) .. the creating process (any thread), fetch_add/store.
//   TagEntry, tag_count ..................... the creating process, under its registry lock.
//   SlotControl line 0 ...................... the claiming thread (slow path), and the
//                                             collector for the retired -> free transition.
//   SlotControl line 1 (write_index, dropped) the owning thread only, on its hot path.
//   SlotControl line 2 (read_index) ......... the collector only.
//   Record[] ................................ the owning thread only, in [read_index, write_index +
//   capacity).
//
// The collector never writes to line 1 or to the records; the producer reads
// line 2 only when its cached copy of read_index says the ring is full. The
// collector must poll line 1 at a bounded rate: every read of it pulls the
// line out of the producer's cache.
//
// Ring protocol (single producer, single consumer; indices grow forever and are
// reduced modulo ring_capacity, a power of two):
//   producer: w = write_index (relaxed, it is the only writer);
//             if w - cached_read >= capacity: cached_read = read_index (acquire,
//               pairs with the collector's release store of read_index);
//               still full -> dropped += 1 (relaxed), return;
//             records[w & mask] = r;
//             write_index = w + 1 (release: publishes the record; pairs with the
//               collector's acquire load of write_index).
//   collector: w = write_index (acquire); copy records [read_index, w);
//             make the copy durable; read_index = w (release: tells the producer
//             those cells may be overwritten).
//   A record is in exactly one of three places: dropped (counted), published
//   and not yet consumed, or consumed. attempted = consumed + dropped + in ring.
//
// Slot state machine (SlotControl::state):
//
//   kSlotFree --CAS by a thread's attach (AttachThisThread or first call)--> kSlotOwned
//   kSlotOwned --owning thread exits (release)------> kSlotRetired
//   kSlotRetired --collector drained it (CAS)-------> kSlotFree
//   kSlotRetired --claimer sees read == write (CAS)-> kSlotOwned  (already drained)
//   kSlotOwned --claimer could not reserve its pages-> kSlotFree   (generation unchanged)
//
// Each claim increments `generation`, so the collector can tell the threads
// that used one slot apart. Indices are never reset: a new owner continues at
// the old write_index, which equals read_index once the slot was drained.
//
// Records (32 bytes, two per cache line). Record::kind says how to read it:
//   kStamp  tsc = the stamp's TSC; aux = rdtscp aux (stamp_rdtscp), the cpu from
//           the kernel's rseq area with node bits 0 (stamp), or kAuxUnknown;
//           order_id = correlation key; payload unused (0).
//   kSpan   tsc = begin TSC; aux = begin aux; payload.span = {end aux,
//           duration ticks (saturated at 0xffffffff with flag kRecordSpanSaturated;
//           with flag kRecordSpanBackwards when the end read below the begin,
//           the duration is begin - end: how far backwards, saturated likewise)}.
//   kLink   tsc = when linked; order_id = child; payload.parent_order_id = parent.
//   kMeasure like kSpan, written by END_MEASURE / interval timers (no order id).
//   kExternal (since version 3) a stamp whose time was read by another clock
//           (stamp_at): payload.external_ns = that time, ns since the Unix
//           epoch in the clock's own timescale; aux = the clock (ExternalClock),
//           not a core; tsc = plain rdtsc when the call was made (when the
//           process learnt the time, not the time itself); order_id as kStamp.
//           The collector places external_ns on the TSC timeline through its
//           UTC anchors (docs/calibration.md, "Other clocks").
// Tag ids index the tag table; kTagInvalid marks a Tag that found the table full.
//
// Pages (the /dev/shm footprint). The file is sized to segment_size but
// sparse: a page of /dev/shm exists only once it is reserved, and touching a
// page that /dev/shm cannot supply raises SIGBUS in whoever touches it. So:
//   - the creator reserves (fallocate) the header, the tag table and every
//     slot's SlotControl before it publishes `magic`; a reader may touch those;
//   - a slot's records are reserved by the thread that claims it, before it
//     bumps `generation`, and stay reserved for the life of the segment.
//     When /dev/shm cannot hold them, the claim is undone (state back to
//     kSlotFree, generation unchanged), rings_refused and threads_without_slot
//     go up, last_refusal_errno says why, and that thread's records count in
//     slotless_dropped;
//   - nobody touches the records of a slot that was never claimed
//     (generation 0): they are holes. Readers copy only [read_index,
//     write_index), which is empty for such a slot.
// Footprint: header + tag table + the pages holding the SlotControls (at most
// one or two 4 KiB pages per slot), plus ring_capacity * 32 bytes (+ at most a
// page) per slot ever claimed: ReservedBytes() below, which is also what the
// collector maps and judges a segment by. docs/abi.md, "/dev/shm footprint",
// shows how to size it.
//
// Versioning: kAbiVersion changes whenever anything below changes. Fields are
// only ever appended inside reserved space; nothing is reordered or reused. A
// reader refuses a segment whose magic or version it does not know.
//
// The static_asserts at the bottom of this file pin every size, offset and
// alignment; abi_test.cc checks them again from a second translation unit.

#ifndef TICKTRACE_ABI_H_
#define TICKTRACE_ABI_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ticktrace::abi {

inline constexpr uint64_t kMagic = 0x3143525454434954ull;  // "TICTTRC1" little-endian
// 2: rings_refused, last_refusal_errno. 3: the kExternal record kind (a reader
// of version 2 refuses the segment, so it never meets a record it would misread).
inline constexpr uint32_t kAbiVersion = 3;
// The oldest version this header's readers still read: version 2 segments
// differ only in never holding kExternal records.
inline constexpr uint32_t kOldestReadableAbiVersion = 2;
inline constexpr size_t kCacheLineSize = 64;

inline constexpr uint32_t kTagNameMax = 47;  // bytes, without the terminating NUL
inline constexpr uint32_t kThreadNameMax = 15;
inline constexpr uint32_t kProcessNameMax = 63;
inline constexpr uint16_t kTagInvalid = 0xffff;
inline constexpr uint32_t kAuxUnknown = 0xffffffffu;  // the TSC was read with plain rdtsc

// Limits the reader accepts; the producer never creates anything larger.
inline constexpr uint32_t kMinRingCapacity = 2;
inline constexpr uint32_t kMaxRingCapacity = 1u << 24;
inline constexpr uint32_t kMaxSlots = 4096;
inline constexpr uint32_t kMaxTags = 4096;

enum RecordKind : uint8_t {
  kKindInvalid = 0,
  kStamp = 1,
  kSpan = 2,
  kLink = 3,
  kMeasure = 4,
  kExternal = 5,  // since version 3
};

// The clock of a kExternal record (its aux). Values are never reused.
enum ExternalClock : uint32_t {
  kClockInvalid = 0,
  kClockRealtime = 1,  // CLOCK_REALTIME: kernel software timestamps, or a clock_gettime
  kClockPhc = 2,       // a NIC's PTP hardware clock, converted to realtime by the user
  kClockExchange = 3,  // a time from a message: a venue's transact time
};
inline constexpr uint32_t kExternalClockMax = kClockExchange;

enum RecordFlags : uint8_t {
  kRecordFenced = 1u << 0,         // read with lfence/rdtscp fences (micro-measurement)
  kRecordSpanSaturated = 1u << 1,  // span longer than 2^32-1 ticks; duration is a lower bound
  kRecordSpanBackwards = 1u << 2,  // end TSC below begin TSC (two cores); duration = begin - end
};

enum SlotState : uint32_t {
  kSlotFree = 0,
  kSlotOwned = 1,
  kSlotRetired = 2,
};

struct SpanPayload {
  uint32_t end_aux;
  uint32_t duration_ticks;
};

union RecordPayload {
  uint64_t raw;
  uint64_t parent_order_id;  // kLink
  int64_t external_ns;       // kExternal
  SpanPayload span;          // kSpan, kMeasure
};

struct Record {
  uint64_t tsc;            // +0
  uint64_t order_id;       // +8
  RecordPayload payload;   // +16
  uint32_t aux;            // +24 IA32_TSC_AUX (node << 12 | cpu) or kAuxUnknown
  uint16_t tag_id;         // +28
  uint8_t kind;            // +30 RecordKind
  uint8_t flags;           // +31 RecordFlags
};

// The rdtscp aux as Linux programs it: low 12 bits cpu, the rest the NUMA node.
// An aux taken from rseq has the cpu only (node 0): compare cores with AuxCpu.
inline constexpr uint32_t kAuxCpuMask = 0xfffu;
inline constexpr uint32_t AuxCpu(uint32_t aux) { return aux & kAuxCpuMask; }
inline constexpr uint32_t AuxNode(uint32_t aux) { return aux >> 12; }

struct TagEntry {
  char name[kTagNameMax + 1];  // NUL-terminated; written before tag_count is raised
  uint8_t reserved[16];
};

struct alignas(kCacheLineSize) SegmentHeader {
  // Identity and geometry: written once by the creator before `magic`.
  std::atomic<uint64_t> magic;    // +0   kMagic, stored last (release)
  uint32_t abi_version;           // +8
  uint32_t header_size;           // +12  sizeof(SegmentHeader)
  uint32_t record_size;           // +16  sizeof(Record)
  uint32_t ring_capacity;         // +20  records per slot, power of two
  uint32_t slot_count;            // +24
  uint32_t tag_capacity;          // +28
  uint64_t tag_table_offset;      // +32
  uint64_t slots_offset;          // +40
  uint64_t slot_stride;           // +48  bytes from one slot to the next
  uint64_t segment_size;          // +56
  // Who created it.
  uint32_t pid;                   // +64
  uint32_t reserved0;             // +68
  uint64_t process_start_ticks;   // +72  /proc/<pid>/stat field 22 (clock ticks since boot)
  char process_name[kProcessNameMax + 1];  // +80
  // (TSC, CLOCK_REALTIME) read back to back at creation: maps ticks to UTC.
  uint64_t anchor_tsc;            // +144
  int64_t anchor_realtime_ns;     // +152
  // Counters written by the producer process (fetch_add, relaxed; read by the collector).
  std::atomic<uint32_t> tag_count;             // +160 entries published (release after the name)
  uint32_t reserved1;                          // +164
  std::atomic<uint64_t> tags_rejected;         // +168 Tag constructions that found the table full
  std::atomic<uint64_t> threads_without_slot;  // +176 threads that found no free slot
  std::atomic<uint64_t> slotless_dropped;      // +184 records those threads attempted
  // Since version 2: rings whose pages /dev/shm could not hold (see "Pages" above).
  std::atomic<uint64_t> rings_refused;         // +192 threads refused a ring (also in threads_without_slot)
  std::atomic<uint32_t> last_refusal_errno;    // +200 errno of the latest refusal (ENOSPC: /dev/shm full)
  uint32_t reserved2;                          // +204
  uint8_t reserved[1024 - 208];                // room to append fields
};

struct alignas(kCacheLineSize) SlotControl {
  // Line 0: ownership. Written on claim/retire (owner) and retired->free (collector).
  std::atomic<uint32_t> state;       // +0   SlotState
  uint32_t tid;                      // +4   kernel thread id of the owner
  std::atomic<uint64_t> generation;  // +8   incremented by each claim (release, after tid/name)
  char thread_name[kThreadNameMax + 1];  // +16
  uint8_t reserved_line0[kCacheLineSize - 32];
  // Line 1: the producer's hot line.
  alignas(kCacheLineSize) std::atomic<uint64_t> write_index;  // +64
  std::atomic<uint64_t> dropped;                              // +72 records lost to a full ring
  uint8_t reserved_line1[kCacheLineSize - 16];
  // Line 2: the collector's line.
  alignas(kCacheLineSize) std::atomic<uint64_t> read_index;   // +128
  uint8_t reserved_line2[kCacheLineSize - 8];
  // Record[ring_capacity] follows at +192.
};

// Byte offsets and sizes of a segment with the given geometry.
inline constexpr uint64_t TagTableOffset() { return sizeof(SegmentHeader); }
inline constexpr uint64_t SlotsOffset(uint32_t tag_capacity) {
  const uint64_t end = TagTableOffset() + uint64_t{tag_capacity} * sizeof(TagEntry);
  return (end + kCacheLineSize - 1) / kCacheLineSize * kCacheLineSize;
}
inline constexpr uint64_t SlotStride(uint32_t ring_capacity) {
  return sizeof(SlotControl) + uint64_t{ring_capacity} * sizeof(Record);
}
inline constexpr uint64_t SegmentSize(uint32_t tag_capacity, uint32_t slot_count,
                                      uint32_t ring_capacity) {
  return SlotsOffset(tag_capacity) + uint64_t{slot_count} * SlotStride(ring_capacity);
}

// Bytes of /dev/shm a segment has reserved (abi.h, "Pages"): the header, the
// tag table and every slot's SlotControl, plus the records of each ring ever
// claimed (generation != 0; a claimed ring keeps its pages for the segment's
// life), before rounding to pages (at most two more pages per slot). The
// producer reports it (TraceStatus) and the collector judges a segment's size
// by it, so both sides count the same bytes; segment_size, the sparse
// geometry, is only what the file is sized to.
inline constexpr uint64_t ReservedBytes(uint32_t tag_capacity, uint32_t slot_count,
                                        uint32_t ring_capacity, uint32_t rings_claimed) {
  return SlotsOffset(tag_capacity) + uint64_t{slot_count} * sizeof(SlotControl) +
         uint64_t{rings_claimed} * ring_capacity * sizeof(Record);
}

// --- Pinned layout. Changing any of these requires a new kAbiVersion. ---
static_assert(sizeof(Record) == 32);
static_assert(alignof(Record) == 8);
static_assert(offsetof(Record, tsc) == 0);
static_assert(offsetof(Record, order_id) == 8);
static_assert(offsetof(Record, payload) == 16);
static_assert(offsetof(Record, aux) == 24);
static_assert(offsetof(Record, tag_id) == 28);
static_assert(offsetof(Record, kind) == 30);
static_assert(offsetof(Record, flags) == 31);
static_assert(sizeof(RecordPayload) == 8);
static_assert(std::is_trivially_copyable_v<Record>);
static_assert(std::is_standard_layout_v<Record>);

static_assert(sizeof(TagEntry) == 64);
static_assert(std::is_trivially_copyable_v<TagEntry>);

static_assert(sizeof(SegmentHeader) == 1024);
static_assert(alignof(SegmentHeader) == kCacheLineSize);
static_assert(std::is_standard_layout_v<SegmentHeader>);
static_assert(offsetof(SegmentHeader, magic) == 0);
static_assert(offsetof(SegmentHeader, abi_version) == 8);
static_assert(offsetof(SegmentHeader, header_size) == 12);
static_assert(offsetof(SegmentHeader, record_size) == 16);
static_assert(offsetof(SegmentHeader, ring_capacity) == 20);
static_assert(offsetof(SegmentHeader, slot_count) == 24);
static_assert(offsetof(SegmentHeader, tag_capacity) == 28);
static_assert(offsetof(SegmentHeader, tag_table_offset) == 32);
static_assert(offsetof(SegmentHeader, slots_offset) == 40);
static_assert(offsetof(SegmentHeader, slot_stride) == 48);
static_assert(offsetof(SegmentHeader, segment_size) == 56);
static_assert(offsetof(SegmentHeader, pid) == 64);
static_assert(offsetof(SegmentHeader, process_start_ticks) == 72);
static_assert(offsetof(SegmentHeader, process_name) == 80);
static_assert(offsetof(SegmentHeader, anchor_tsc) == 144);
static_assert(offsetof(SegmentHeader, anchor_realtime_ns) == 152);
static_assert(offsetof(SegmentHeader, tag_count) == 160);
static_assert(offsetof(SegmentHeader, tags_rejected) == 168);
static_assert(offsetof(SegmentHeader, threads_without_slot) == 176);
static_assert(offsetof(SegmentHeader, slotless_dropped) == 184);
static_assert(offsetof(SegmentHeader, rings_refused) == 192);
static_assert(offsetof(SegmentHeader, last_refusal_errno) == 200);

static_assert(sizeof(SlotControl) == 3 * kCacheLineSize);
static_assert(alignof(SlotControl) == kCacheLineSize);
static_assert(std::is_standard_layout_v<SlotControl>);
static_assert(offsetof(SlotControl, state) == 0);
static_assert(offsetof(SlotControl, tid) == 4);
static_assert(offsetof(SlotControl, generation) == 8);
static_assert(offsetof(SlotControl, thread_name) == 16);
static_assert(offsetof(SlotControl, write_index) == 64);
static_assert(offsetof(SlotControl, dropped) == 72);
static_assert(offsetof(SlotControl, read_index) == 128);
static_assert(SlotStride(2) % kCacheLineSize == 0, "records keep slots cache-line aligned");

// Every atomic that lives in the segment must be lock-free in every process
// that maps it, and must have the size and layout of its plain integer.
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == 8);
static_assert(sizeof(std::atomic<uint32_t>) == 4);

}  // namespace ticktrace::abi

#endif  // TICKTRACE_ABI_H_
