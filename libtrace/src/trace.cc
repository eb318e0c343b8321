// The producer side of libtrace: options, the process's segment, tag
// registration, slot claim and retire, the slow write path, and fork handling.
// Layout and protocol: ticktrace/abi.h; which pages are reserved when: its
// "Pages" paragraph.

#include "ticktrace/trace.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/rseq.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/process_info.h"
#include "src/segment_guard.h"
#include "src/text.h"
#include "ticktrace/calibration.h"

// Linux >= 5.14; older headers lack the name, older kernels answer EINVAL.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace ticktrace {
namespace internal {

constinit thread_local ThreadRing tls_ring __attribute__((tls_model("initial-exec"))) = {};

}  // namespace internal

namespace {

namespace bip = boost::interprocess;

// Tags one process can register. The ABI allows up to abi::kMaxTags.
constexpr uint32_t kTagCapacity = 1024;

// A process's segment, mapped. Created once per process (and once more in a
// fork child); never unmapped while the process may still trace, because
// other threads may be writing into it without a lock.
struct ProcessSegment {
  std::string name;
  bip::shared_memory_object shm;  // kept open: each claim reserves its ring's pages through it
  bip::mapped_region region;
  abi::SegmentHeader* header = nullptr;
  uint8_t* base = nullptr;
};

// What the calling thread's slow path knows about it. Trivial, like tls_ring.
enum class ThreadMode : uint8_t {
  kUnattached = 0,  // no trace call yet (or reset by fork)
  kAttached,        // owns a slot
  kSlotless,        // found no free slot: records count in slotless_dropped
  kNoSegment,       // the segment could not be created: records count locally
  kExited,          // the slot was retired at thread exit
};

struct ThreadCold {
  ThreadMode mode;
  abi::SlotControl* slot;
  abi::SegmentHeader* header;
  uint64_t capacity;
};

constinit thread_local ThreadCold tls_cold __attribute__((tls_model("initial-exec"))) = {};

// Guards everything below; also held across fork() so the child never sees
// a half-registered tag or a half-created segment.
std::mutex g_mu;
std::vector<std::string>* g_tag_names = nullptr;  // by id; leaked on purpose (used at exit)
uint64_t g_tags_rejected_before_segment = 0;
Options* g_options = nullptr;                      // set by Init or the first attach
std::atomic<ProcessSegment*> g_segment{nullptr};
std::atomic<uint64_t> g_dropped_without_segment{0};
std::string* g_segment_error = nullptr;  // why the last creation failed; leaked on purpose
// For TraceStatus(); relaxed: statistics, nothing hangs on them.
std::atomic<uint64_t> g_rings_reserved{0};
std::atomic<uint64_t> g_rings_refused{0};
std::atomic<int> g_last_refusal_errno{0};
pthread_key_t g_exit_key;
bool g_process_hooks_installed = false;

std::vector<std::string>& TagNames() {
  if (g_tag_names == nullptr) g_tag_names = new std::vector<std::string>();
  return *g_tag_names;
}

void WriteTagEntry(ProcessSegment& seg, uint32_t id, const std::string& name) {
  auto* table = reinterpret_cast<abi::TagEntry*>(seg.base + seg.header->tag_table_offset);
  std::memset(&table[id], 0, sizeof(abi::TagEntry));
  std::memcpy(table[id].name, name.data(), std::min<size_t>(name.size(), abi::kTagNameMax));
}

// Runs at the exit of a thread that owned a slot.
void RetireSlotAtThreadExit(void* slot_ptr) {
  auto* slot = static_cast<abi::SlotControl*>(slot_ptr);
  // Release: the thread's last write_index store happens-before the collector
  // sees kSlotRetired; pairs with the acquire load of state in
  // SegmentReader::FreeIfDrained(), so a retired slot is drained completely.
  slot->state.store(abi::kSlotRetired, std::memory_order_release);
  tls_cold.mode = ThreadMode::kExited;
  internal::tls_ring = {};
}

void ForkPrepare() { g_mu.lock(); }
void ForkParent() { g_mu.unlock(); }
// The child is a new process: it must not write into its parent's segment.
// Only the forking thread exists here; its thread-locals are reset so that its
// next trace call creates the child's own segment.
void ForkChild() {
  ProcessSegment* parent_segment = g_segment.exchange(nullptr, std::memory_order_relaxed);
  delete parent_segment;  // unmaps the parent's segment from the child only
  internal::ForgetSegmentGuard();
  internal::tls_ring = {};
  tls_cold = {};
  pthread_setspecific(g_exit_key, nullptr);
  g_rings_reserved.store(0, std::memory_order_relaxed);
  g_rings_refused.store(0, std::memory_order_relaxed);
  g_last_refusal_errno.store(0, std::memory_order_relaxed);
  if (g_segment_error != nullptr) g_segment_error->clear();
  g_mu.unlock();
}

// REQUIRES: g_mu held.
void InstallProcessHooks() {
  if (g_process_hooks_installed) return;
  g_process_hooks_installed = true;
  pthread_key_create(&g_exit_key, &RetireSlotAtThreadExit);
  pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
}

uint32_t RoundUpPowerOfTwo(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < abi::kMaxRingCapacity) p <<= 1;
  return p;
}

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Makes the file's pages under bytes [begin, end) of the segment exist, so that
// no later access to them can raise SIGBUS, and enters them into this
// process's page tables, writable, so that no later access page-faults.
//   Reserve: fallocate(2) mode 0, which fails cleanly (ENOSPC) when /dev/shm
//   cannot hold them. Not posix_fallocate(): where the file system cannot
//   fallocate, glibc emulates it by writing a zero byte into every block,
//   which would clobber our neighbours' records.
//   Populate: madvise(MADV_POPULATE_WRITE), which also allocates any page not
//   yet allocated and fails cleanly (EFAULT/ENOMEM) instead of raising SIGBUS.
// So: fallocate unsupported (EOPNOTSUPP) -> the populate alone reserves;
// populate unsupported (EINVAL, Linux < 5.14) -> *populated = false and the
// caller may touch the pages, which fallocate made safe; neither -> refused
// with EOPNOTSUPP rather than risked. Returns 0 or the errno of the refusal.
// Cold path: segment creation and a thread's first trace call.
int ReservePages(ProcessSegment& seg, uint64_t begin, uint64_t end, bool* populated) {
  const int fd = seg.shm.get_mapping_handle().handle;
  int rc;
  do {
    rc = fallocate(fd, 0, static_cast<off_t>(begin), static_cast<off_t>(end - begin));
  } while (rc != 0 && errno == EINTR);
  const bool reserved = rc == 0;
  if (!reserved && errno != EOPNOTSUPP) return errno;
  const uint64_t page = PageSize();
  const uint64_t first = begin / page * page;
  const uint64_t last = (end + page - 1) / page * page;  // the mapping covers whole pages
  do {
    rc = madvise(seg.base + first, last - first, MADV_POPULATE_WRITE);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    *populated = true;
    return 0;
  }
  if (errno == EINVAL && reserved) {
    *populated = false;
    return 0;
  }
  return errno == EINVAL ? EOPNOTSUPP : errno;
}

// Write-faults each page of the claimed `slot`'s hot line and records once, for
// kernels without MADV_POPULATE_WRITE. REQUIRES: the pages are reserved
// (ReservePages), so no touch can raise SIGBUS; the calling thread owns `slot`.
// Each touch reads one byte and writes the same value back, and only bytes no
// other thread or process writes now are touched: a reserved byte of line 1
// (the line of write_index, which only the owner writes) and, per page, the
// first byte of this ring's records on it. The collector writes none of them
// and reads records only in [read_index, write_index), which is empty at a
// claim (a slot is claimed free or retired-and-drained); were it to read one
// anyway it would see the value it was. Line 0 (the collector frees slots
// there), line 2 (read_index) and the neighbouring slots' bytes that share our
// first and last pages are not touched: writing back a byte another thread may
// store to meanwhile could undo that store.
void TouchRing(abi::SlotControl* slot, uint64_t capacity) {
  const uint64_t page = PageSize();
  volatile uint8_t* hot = &slot->reserved_line1[0];
  *hot = *hot;
  auto* records = reinterpret_cast<uint8_t*>(slot) + sizeof(abi::SlotControl);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(records);
  const uintptr_t end = begin + capacity * sizeof(abi::Record);
  for (uintptr_t p = begin; p < end; p = (p / page + 1) * page) {
    volatile uint8_t* b = reinterpret_cast<volatile uint8_t*>(p);
    *b = *b;
  }
}

// Reserves and maps the pages of a slot the calling thread just claimed (abi.h,
// "Pages"). Returns 0, or the errno saying why /dev/shm cannot hold it.
int ReserveRing(ProcessSegment& seg, abi::SlotControl* slot) {
  const uint64_t begin = static_cast<uint64_t>(reinterpret_cast<uint8_t*>(slot) - seg.base);
  bool populated = false;
  if (const int err = ReservePages(seg, begin, begin + seg.header->slot_stride, &populated);
      err != 0) {
    return err;
  }
  if (!populated) TouchRing(slot, seg.header->ring_capacity);
  return 0;
}

// Creates the shm object of this process's segment, owner-only (or
// options.segment_mode), and returns its name. The name is
// "ticktrace.<session>.<pid>": a file of that name that this uid owns belongs
// to a dead process with our pid (pids are unique among live processes) and
// is replaced. One this uid does not own was planted by another user
// (/dev/shm is world-writable; its sticky bit keeps us from removing it): it
// is left alone and the first free "ticktrace.<session>.<pid>.<n>", n = 1..
// kMaxSegmentNameSuffix, is used instead; the collector lists both forms
// (ListSegments). shm_open's O_EXCL|O_NOFOLLOW: a planted symlink is never
// followed. Throws what boost::interprocess throws for other errors.
// REQUIRES: g_mu held.
Result<std::string> ClaimSegmentName(const Options& options, uint32_t pid,
                                     bip::shared_memory_object* shm) {
  const std::string base = SegmentName(options.session, pid);
  const bip::permissions perms(options.segment_mode);
  for (uint32_t suffix = 0; suffix <= kMaxSegmentNameSuffix; ++suffix) {
    const std::string name = suffix == 0 ? base : internal::Cat(base, ".", suffix);
    struct stat st;
    if (lstat(internal::Cat("/dev/shm/", name).c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;  // not ours: planted
      bip::shared_memory_object::remove(name.c_str());                 // ours: stale
    }
    try {
      *shm = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perms);
      return name;
    } catch (const bip::interprocess_exception& e) {
      if (e.get_error_code() != bip::already_exists_error) throw;  // else: taken meanwhile
    }
  }
  return Status(ErrorCode::kUnavailable,
                internal::Cat("segment ", base, " and its ", kMaxSegmentNameSuffix,
                              " alternative names are all taken by files of "
                              "other users"));
}

// Creates and maps this process's segment.
// REQUIRES: g_mu held; no segment yet.
Result<ProcessSegment*> CreateSegment(const Options& options) {
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const uint32_t capacity = RoundUpPowerOfTwo(options.ring_records);
  const uint64_t size = abi::SegmentSize(kTagCapacity, options.rings, capacity);
  auto seg = std::make_unique<ProcessSegment>();
  try {
    Result<std::string> name = ClaimSegmentName(options, pid, &seg->shm);
    if (!name.ok()) return name.status();
    seg->name = *std::move(name);
    bip::shared_memory_object& shm = seg->shm;
    if (!options.segment_group.empty()) {
      struct group* gr = getgrnam(options.segment_group.c_str());
      if (gr == nullptr || fchown(shm.get_mapping_handle().handle, -1, gr->gr_gid) != 0) {
        bip::shared_memory_object::remove(seg->name.c_str());
        return Status(ErrorCode::kFailedPrecondition,
                      internal::Cat("segment ", seg->name, ": cannot give it to group '",
                                    options.segment_group, "'"));
      }
    }
    // fchmod: the mode the user asked for, whatever the umask.
    fchmod(shm.get_mapping_handle().handle, options.segment_mode);
    // Sparse: sizing reserves nothing (abi.h, "Pages").
    shm.truncate(static_cast<bip::offset_t>(size));
    seg->region = bip::mapped_region(shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    if (!seg->name.empty()) bip::shared_memory_object::remove(seg->name.c_str());
    return Status(ErrorCode::kUnavailable,
                  internal::Cat("segment ", SegmentName(options.session, pid), " (", size,
                                " bytes): ", e.what()));
  }
  seg->base = static_cast<uint8_t*>(seg->region.get_address());
  // Before the first store into it: a group member may shrink the file at
  // any time from now on (src/segment_guard.h).
  internal::GuardSegmentMapping(seg->base, size);
  // Before anything is written: the header, the tag table and every slot's
  // control lines, which the collector reads for every slot. A ring's records
  // wait for the thread that claims it (ReserveRing).
  const uint64_t slots_offset = abi::SlotsOffset(kTagCapacity);
  const uint64_t stride = abi::SlotStride(capacity);
  bool populated = false;
  int err = ReservePages(*seg, 0, slots_offset, &populated);
  for (uint32_t i = 0; err == 0 && i < options.rings; ++i) {
    const uint64_t control = slots_offset + i * stride;
    err = ReservePages(*seg, control, control + sizeof(abi::SlotControl), &populated);
  }
  if (err != 0) {
    const std::string name = seg->name;
    internal::ForgetSegmentGuard();  // the range is unmapped below: nothing to guard
    seg.reset();  // unmaps and closes
    bip::shared_memory_object::remove(name.c_str());
    return Status(
        ErrorCode::kResourceExhausted,
        internal::Cat("segment ", name, ": /dev/shm cannot hold its header, tag table and ",
                      options.rings, " slot headers: ", std::strerror(err)));
  }
  auto* h = new (seg->base) abi::SegmentHeader();  // the file is all zero: a valid empty state
  seg->header = h;
  h->abi_version = abi::kAbiVersion;
  h->header_size = sizeof(abi::SegmentHeader);
  h->record_size = sizeof(abi::Record);
  h->ring_capacity = capacity;
  h->slot_count = options.rings;
  h->tag_capacity = kTagCapacity;
  h->tag_table_offset = abi::TagTableOffset();
  h->slots_offset = abi::SlotsOffset(kTagCapacity);
  h->slot_stride = abi::SlotStride(capacity);
  h->segment_size = size;
  h->pid = pid;
  h->process_start_ticks = internal::ProcessStartTicks(pid).value_or(0);
  const std::string process_name = internal::ProcessName(pid);
  std::memcpy(h->process_name, process_name.data(),
              std::min<size_t>(process_name.size(), abi::kProcessNameMax));
  ReadTscRealtimeAnchor(&h->anchor_tsc, &h->anchor_realtime_ns);
  const std::vector<std::string>& names = TagNames();
  for (uint32_t id = 0; id < names.size(); ++id) WriteTagEntry(*seg, id, names[id]);
  h->tag_count.store(static_cast<uint32_t>(names.size()), std::memory_order_relaxed);
  h->tags_rejected.store(g_tags_rejected_before_segment, std::memory_order_relaxed);
  // Release: every field above is visible to a reader that sees the magic;
  // pairs with the acquire load of magic in SegmentReader::Open().
  h->magic.store(abi::kMagic, std::memory_order_release);
  ProcessSegment* raw = seg.release();
  g_segment.store(raw, std::memory_order_release);
  return raw;
}

// REQUIRES: g_mu held.
void NoteSegmentError(const Status& status) {
  if (g_segment_error == nullptr) g_segment_error = new std::string();
  *g_segment_error = status.ToString();
}

// REQUIRES: g_mu held.
Result<ProcessSegment*> SegmentLocked() {
  if (ProcessSegment* seg = g_segment.load(std::memory_order_acquire)) return seg;
  InstallProcessHooks();
  if (g_options == nullptr) {
    Result<Options> env = Options::FromEnvironment();
    if (!env.ok()) {
      NoteSegmentError(env.status());
      return env.status();
    }
    g_options = new Options(*std::move(env));
  }
  Result<ProcessSegment*> seg = CreateSegment(*g_options);
  if (!seg.ok()) NoteSegmentError(seg.status());
  return seg;
}

// Claims a slot for the calling thread: CAS free -> owned, or retired -> owned
// when the retired slot is already drained.
abi::SlotControl* ClaimSlot(ProcessSegment& seg) {
  const abi::SegmentHeader& h = *seg.header;
  for (uint32_t i = 0; i < h.slot_count; ++i) {
    auto* slot = reinterpret_cast<abi::SlotControl*>(seg.base + h.slots_offset + i * h.slot_stride);
    uint32_t state = slot->state.load(std::memory_order_acquire);
    if (state == abi::kSlotRetired &&
        slot->write_index.load(std::memory_order_relaxed) !=
            slot->read_index.load(std::memory_order_acquire)) {
      continue;  // the collector has not drained the previous owner yet
    }
    if (state != abi::kSlotFree && state != abi::kSlotRetired) continue;
    // Acquire: sees the previous owner's last write_index (released with its
    // retire) and the collector's last read_index (released with retired -> free).
    if (slot->state.compare_exchange_strong(state, abi::kSlotOwned, std::memory_order_acq_rel)) {
      return slot;
    }
  }
  return nullptr;
}

// Attaches the calling thread (REQUIRES: it never tried). Returns OK when it
// owns a ring, otherwise why its calls will be counted no-ops.
Status Attach() {
  std::lock_guard<std::mutex> lock(g_mu);
  Result<ProcessSegment*> seg = SegmentLocked();
  if (!seg.ok()) {
    tls_cold.mode = ThreadMode::kNoSegment;
    return seg.status();
  }
  abi::SegmentHeader* header = (*seg)->header;
  tls_cold.header = header;
  if (internal::SegmentTruncated()) {
    // What the mapping holds now is a dead copy: no ring to claim in it.
    tls_cold.mode = ThreadMode::kSlotless;
    return Status(ErrorCode::kUnavailable,
                  internal::Cat("segment ", (*seg)->name,
                                " was shrunk by another process: tracing is off"));
  }
  abi::SlotControl* slot = ClaimSlot(**seg);
  if (slot == nullptr) {
    header->threads_without_slot.fetch_add(1, std::memory_order_relaxed);
    tls_cold.mode = ThreadMode::kSlotless;
    return Status(ErrorCode::kResourceExhausted,
                  internal::Cat("segment ", (*seg)->name, ": all ", header->slot_count,
                                " rings are taken (TICKTRACE_RINGS sets how many)"));
  }
  if (const int err = ReserveRing(**seg, slot); err != 0) {
    // /dev/shm cannot hold the ring: the claim is undone and the thread's
    // calls become counted no-ops, as for a thread that found no free slot.
    // Release: hands the slot back with its indices and generation untouched;
    // pairs with the acquire CAS in ClaimSlot() of the next claimer.
    slot->state.store(abi::kSlotFree, std::memory_order_release);
    // Relaxed: counters; the collector needs no ordering with them.
    header->rings_refused.fetch_add(1, std::memory_order_relaxed);
    header->last_refusal_errno.store(static_cast<uint32_t>(err), std::memory_order_relaxed);
    header->threads_without_slot.fetch_add(1, std::memory_order_relaxed);
    g_rings_refused.fetch_add(1, std::memory_order_relaxed);
    g_last_refusal_errno.store(err, std::memory_order_relaxed);
    tls_cold.mode = ThreadMode::kSlotless;
    return Status(ErrorCode::kResourceExhausted,
                  internal::Cat("segment ", (*seg)->name, ": /dev/shm cannot hold a ring of ",
                                header->slot_stride, " bytes: ", std::strerror(err)));
  }
  g_rings_reserved.fetch_add(1, std::memory_order_relaxed);
  slot->tid = static_cast<uint32_t>(gettid());
  std::memset(slot->thread_name, 0, sizeof(slot->thread_name));
  pthread_getname_np(pthread_self(), slot->thread_name, sizeof(slot->thread_name));
  // Release: tid and name are visible to a reader that sees the new generation.
  slot->generation.fetch_add(1, std::memory_order_release);
  pthread_setspecific(g_exit_key, slot);

  const uint64_t capacity = (*seg)->header->ring_capacity;
  // Relaxed: this thread is now write_index's only writer; the previous
  // owner's value came with the acquire CAS in ClaimSlot().
  const uint64_t w = slot->write_index.load(std::memory_order_relaxed);
  const uint64_t r = slot->read_index.load(std::memory_order_acquire);
  tls_cold = ThreadCold{ThreadMode::kAttached, slot, (*seg)->header, capacity};
  internal::tls_ring.records = reinterpret_cast<abi::Record*>(
      reinterpret_cast<uint8_t*>(slot) + sizeof(abi::SlotControl));
  internal::tls_ring.write_index = &slot->write_index;
  internal::tls_ring.next_write = w;
  internal::tls_ring.write_limit = r + capacity;
  internal::tls_ring.mask = capacity - 1;
  return Status();
}

bool ValidSession(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Status ParseU32Env(const char* var, uint32_t* out, int base = 10) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return Status();
  char* end = nullptr;
  errno = 0;
  const unsigned long parsed = std::strtoul(v, &end, base);
  if (errno != 0 || *end != '\0' || parsed > 0xffffffffu || v[0] == '-') {
    return Status(ErrorCode::kInvalidArgument, internal::Cat(var, "='", v, "' is not a number"));
  }
  *out = static_cast<uint32_t>(parsed);
  return Status();
}

}  // namespace

Result<Options> Options::FromEnvironment() {
  Options o;
  if (const char* s = std::getenv("TICKTRACE_SESSION"); s != nullptr && *s != '\0') o.session = s;
  if (Status st = ParseU32Env("TICKTRACE_RING_RECORDS", &o.ring_records); !st.ok()) return st;
  if (Status st = ParseU32Env("TICKTRACE_RINGS", &o.rings); !st.ok()) return st;
  if (Status st = ParseU32Env("TICKTRACE_SEGMENT_MODE", &o.segment_mode, 8); !st.ok()) {
    return st;
  }
  if (const char* g = std::getenv("TICKTRACE_SEGMENT_GROUP"); g != nullptr) o.segment_group = g;
  if (Status st = o.Validate(); !st.ok()) return st;
  return o;
}

Status Options::Validate() const {
  if (!ValidSession(session)) {
    return Status(ErrorCode::kInvalidArgument,
                  internal::Cat("session '", session, "': use 1-64 of [A-Za-z0-9_-]"));
  }
  if (ring_records < abi::kMinRingCapacity || ring_records > abi::kMaxRingCapacity) {
    return Status(ErrorCode::kInvalidArgument,
                  internal::Cat("ring_records ", ring_records, ": must be in [",
                                abi::kMinRingCapacity, ", ", abi::kMaxRingCapacity, "]"));
  }
  if (rings < 1 || rings > abi::kMaxSlots) {
    return Status(ErrorCode::kInvalidArgument,
                  internal::Cat("rings ", rings, ": must be in [1, ", abi::kMaxSlots, "]"));
  }
  if (segment_mode > 0777 || (segment_mode & 0600) != 0600) {
    return Status(
        ErrorCode::kInvalidArgument,
        internal::Format("segment_mode 0%o: must be within 0777 and give the owner read and write",
                         segment_mode));
  }
  return Status();
}

Status Init(const Options& options) {
  if (Status st = options.Validate(); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(g_mu);
  if (ProcessSegment* seg = g_segment.load(std::memory_order_acquire)) {
    return Status(ErrorCode::kFailedPrecondition,
                  internal::Cat("ticktrace::Init: segment ", seg->name, " already exists"));
  }
  InstallProcessHooks();
  delete g_options;
  g_options = new Options(options);
  Status status = CreateSegment(options).status();
  if (!status.ok()) NoteSegmentError(status);
  return status;
}

std::string SegmentName(std::string_view session, uint32_t pid) {
  return internal::Cat("ticktrace.", std::string(session), ".", pid);
}

std::string CurrentSegmentName() {
  std::lock_guard<std::mutex> lock(g_mu);
  ProcessSegment* seg = g_segment.load(std::memory_order_acquire);
  return seg == nullptr ? std::string() : seg->name;
}

uint64_t DroppedWithoutSegment() noexcept {
  return g_dropped_without_segment.load(std::memory_order_relaxed);
}

TracerStatus TraceStatus() {
  TracerStatus s;
  std::lock_guard<std::mutex> lock(g_mu);
  if (ProcessSegment* seg = g_segment.load(std::memory_order_acquire)) {
    const abi::SegmentHeader& h = *seg->header;
    s.segment_name = seg->name;
    if (internal::SegmentTruncated()) {
      // The mapping is a dead copy: its header says nothing about the file.
      s.segment_truncated = true;
      s.segment_error = internal::Cat("segment ", seg->name,
                                      " was shrunk by another process (ftruncate): tracing is off");
    }
    s.ring_bytes = uint64_t{h.ring_capacity} * sizeof(abi::Record);
    s.segment_bytes = h.segment_size;
    for (uint32_t i = 0; i < h.slot_count; ++i) {
      const auto* slot =
          reinterpret_cast<const abi::SlotControl*>(seg->base + h.slots_offset + i * h.slot_stride);
      // Relaxed: a count at one moment; a claim bumps generation after its pages are reserved.
      if (slot->generation.load(std::memory_order_relaxed) != 0) ++s.rings_claimed;
    }
    s.reserved_bytes =
        abi::ReservedBytes(h.tag_capacity, h.slot_count, h.ring_capacity, s.rings_claimed);
    // Relaxed: counters, read at one moment.
    s.threads_without_slot = h.threads_without_slot.load(std::memory_order_relaxed);
    s.slotless_dropped = h.slotless_dropped.load(std::memory_order_relaxed);
  } else if (g_segment_error != nullptr) {
    s.segment_error = *g_segment_error;
  }
  s.rings_reserved = g_rings_reserved.load(std::memory_order_relaxed);
  s.rings_refused = g_rings_refused.load(std::memory_order_relaxed);
  s.last_refusal_errno = g_last_refusal_errno.load(std::memory_order_relaxed);
  s.dropped_without_segment = g_dropped_without_segment.load(std::memory_order_relaxed);
  s.dropped_after_truncation = internal::DroppedAfterTruncation();
  return s;
}

Tag::Tag(std::string_view name) {
  const std::string clipped(name.substr(0, abi::kTagNameMax));
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string>& names = TagNames();
  for (uint32_t id = 0; id < names.size(); ++id) {
    if (names[id] == clipped) {
      id_ = static_cast<uint16_t>(id);
      return;
    }
  }
  ProcessSegment* seg = g_segment.load(std::memory_order_acquire);
  if (names.size() >= kTagCapacity) {
    id_ = abi::kTagInvalid;
    if (seg != nullptr) {
      seg->header->tags_rejected.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++g_tags_rejected_before_segment;
    }
    return;
  }
  id_ = static_cast<uint16_t>(names.size());
  names.push_back(clipped);
  if (seg != nullptr) {
    WriteTagEntry(*seg, id_, clipped);
    // Release: the name is written before the collector can see the entry;
    // pairs with the acquire load of tag_count in SegmentReader::Tags().
    seg->header->tag_count.store(static_cast<uint32_t>(names.size()), std::memory_order_release);
  }
}

// glibc >= 2.35 exports where each thread's rseq area sits (an offset from
// the thread pointer) and its size, 0 when registration is disabled
// (GLIBC_TUNABLES=glibc.pthread.rseq=0). Weak, so an older glibc links and
// reads them as absent.
extern "C" {
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
}

namespace {

// The calling thread's rseq cpu_id, or nullptr when the kernel does not
// maintain one for it. Cold path: once per thread.
const volatile uint32_t* ThreadRseqCpuId() noexcept {
  if (&__rseq_offset == nullptr || &__rseq_size == nullptr || __rseq_size == 0) return nullptr;
  uintptr_t thread_pointer;
  asm("mov %%fs:0, %0" : "=r"(thread_pointer));  // x86-64: the TCB points to itself
  auto* area = reinterpret_cast<const volatile struct rseq*>(thread_pointer + __rseq_offset);
  // Negative: RSEQ_CPU_ID_UNINITIALIZED or RSEQ_CPU_ID_REGISTRATION_FAILED.
  if (static_cast<int32_t>(area->cpu_id) < 0) return nullptr;
  return &area->cpu_id;
}

// Points the calling thread's core reads at its rseq cpu_id, or at its own
// kAuxUnknown without rseq. Whatever the attach's outcome: ReadTscAndCore()
// needs only this, and a non-null pointer marks the thread as attached.
void SetCoreSource() noexcept {
  internal::ThreadRing& ring = internal::tls_ring;
  ring.no_rseq_cpu_id = abi::kAuxUnknown;
  const volatile uint32_t* cpu = ThreadRseqCpuId();
  ring.rseq_cpu_id = cpu != nullptr ? cpu : &ring.no_rseq_cpu_id;
}

}  // namespace

Status AttachThisThread() {
  Status status;
  switch (tls_cold.mode) {
    case ThreadMode::kUnattached:
      status = Attach();
      break;
    case ThreadMode::kAttached:
      break;
    case ThreadMode::kSlotless:
      status = Status(ErrorCode::kResourceExhausted,
                      "this thread found no ring earlier: its trace calls are counted no-ops");
      break;
    case ThreadMode::kNoSegment: {
      std::lock_guard<std::mutex> lock(g_mu);
      status = Status(ErrorCode::kUnavailable,
                      g_segment_error != nullptr ? *g_segment_error : "no segment");
      break;
    }
    case ThreadMode::kExited:
      status = Status(ErrorCode::kFailedPrecondition, "this thread is exiting");
      break;
  }
  SetCoreSource();
  return status;
}

namespace internal {

void AttachOnFirstCall() noexcept {
  if (tls_cold.mode == ThreadMode::kUnattached) (void)Attach();
  SetCoreSource();
}

void WriteSlow(const abi::Record& record) noexcept {
  // Reached unattached only from record_interval(), whose TSCs the caller read.
  if (tls_cold.mode == ThreadMode::kUnattached) AttachOnFirstCall();
  if (SegmentTruncated() && tls_cold.mode != ThreadMode::kNoSegment) {
    // The segment is a dead copy (src/segment_guard.h): count, and keep this
    // thread on the slow path so that every later call is counted too.
    CountDroppedAfterTruncation();
    tls_ring.write_limit = tls_ring.next_write;
    return;
  }
  switch (tls_cold.mode) {
    case ThreadMode::kAttached: {
      ThreadRing& ring = tls_ring;
      abi::SlotControl* slot = tls_cold.slot;
      const uint64_t w = ring.next_write;
      // Acquire: the collector finished copying the cells below read_index;
      // pairs with its release store in SegmentReader::Commit().
      ring.write_limit = slot->read_index.load(std::memory_order_acquire) + tls_cold.capacity;
      if (__builtin_expect(SegmentTruncated(), 0)) {
        // The load above was the access that found the file shrunk.
        CountDroppedAfterTruncation();
        ring.write_limit = w;
        return;
      }
      if (IndexBefore(w, ring.write_limit)) {
        ring.records[w & ring.mask] = record;
        ring.next_write = w + 1;
        // Release: publishes the record; pairs with the acquire in SegmentReader::Peek().
        ring.write_index->store(w + 1, std::memory_order_release);
        return;
      }
      // Relaxed load + store: this thread is dropped's only writer; the
      // collector reads it with a relaxed load and needs no ordering with records.
      slot->dropped.store(slot->dropped.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      return;
    }
    case ThreadMode::kSlotless:
    case ThreadMode::kExited:
      tls_cold.header->slotless_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    case ThreadMode::kNoSegment:
    case ThreadMode::kUnattached:
      g_dropped_without_segment.fetch_add(1, std::memory_order_relaxed);
      return;
  }
}

}  // namespace internal
}  // namespace ticktrace
