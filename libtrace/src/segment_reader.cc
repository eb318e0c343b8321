// The consumer side of a segment: discovery, validation, draining.
// Layout and protocol: ticktrace/abi.h. Every byte read here is untrusted.

#include "ticktrace/segment_reader.h"

#include <dirent.h>

#include <algorithm>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/process_info.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

namespace bip = boost::interprocess;

constexpr std::string_view kPrefix = "ticktrace.";

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string CopyCString(const char* p, size_t max_len) {
  return std::string(p, strnlen(p, max_len));
}

bool Printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace

absl::StatusOr<SegmentId> ParseSegmentName(std::string_view name_view) {
  // Debian's Abseil has its own string_view type: work on a std::string.
  const std::string name(name_view);
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a ticktrace segment name"));
  }
  const std::string rest = name.substr(kPrefix.size());
  const size_t dot = rest.rfind('.');
  SegmentId id;
  if (dot == std::string::npos || dot == 0 || !absl::SimpleAtoi(rest.substr(dot + 1), &id.pid) ||
      id.pid == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not of the form ticktrace.<session>.<pid>"));
  }
  id.name = name;
  id.session = rest.substr(0, dot);
  return id;
}

absl::StatusOr<std::vector<SegmentId>> ListSegments(std::string_view session) {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return absl::UnavailableError("cannot list /dev/shm");
  std::vector<SegmentId> found;
  while (dirent* e = readdir(dir)) {
    absl::StatusOr<SegmentId> id = ParseSegmentName(e->d_name);
    if (id.ok() && id->session == session) found.push_back(*std::move(id));
  }
  closedir(dir);
  std::sort(found.begin(), found.end(),
            [](const SegmentId& a, const SegmentId& b) { return a.pid < b.pid; });
  return found;
}

absl::Status RemoveSegment(std::string_view name) {
  const std::string n(name);
  if (!bip::shared_memory_object::remove(n.c_str())) {
    return absl::NotFoundError(absl::StrCat("segment ", n, ": not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReadProcessStartTicks(uint32_t pid) {
  return internal::ProcessStartTicks(pid);
}

bool ProcessAlive(uint32_t pid, uint64_t start_ticks) {
  absl::StatusOr<uint64_t> now = internal::ProcessStartTicks(pid);
  // Only a process that is certainly gone counts as dead: the collector
  // removes a dead process's segment. A /proc entry that cannot be parsed, or
  // a creator that could not read its own start time (0), means "unknown",
  // and an unknown process is treated as alive while its pid exists.
  if (absl::IsNotFound(now.status())) return false;
  if (!now.ok() || start_ticks == 0) return true;
  return *now == start_ticks;
}

absl::Status ValidateRecord(const abi::Record& record, uint32_t tag_count) {
  constexpr uint8_t kKnownFlags =
      abi::kRecordFenced | abi::kRecordSpanSaturated | abi::kRecordSpanBackwards;
  if ((record.flags & ~kKnownFlags) != 0) {
    return absl::DataLossError(absl::StrCat("record: unknown flags 0x", absl::Hex(record.flags)));
  }
  switch (record.kind) {
    case abi::kLink:
      return absl::OkStatus();
    case abi::kStamp:
    case abi::kSpan:
    case abi::kMeasure:
      if (record.tag_id == abi::kTagInvalid) {
        return absl::OutOfRangeError("record: its tag found the tag table full");
      }
      if (record.tag_id >= tag_count) {
        return absl::DataLossError(absl::StrCat("record: tag id ", record.tag_id,
                                                " is not in the table (", tag_count, " tags)"));
      }
      return absl::OkStatus();
    default:
      return absl::DataLossError(absl::StrCat("record: unknown kind ", record.kind));
  }
}

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Open(std::string_view name) {
  absl::StatusOr<SegmentId> id = ParseSegmentName(name);
  if (!id.ok()) return id.status();
  const std::string n(name);
  bip::offset_t file_size = 0;
  bip::mapped_region region;
  try {
    bip::shared_memory_object shm(bip::open_only, n.c_str(), bip::read_write);
    if (!shm.get_size(file_size)) {
      return absl::UnavailableError(absl::StrCat("segment ", n, ": cannot read its size"));
    }
    if (file_size < static_cast<bip::offset_t>(sizeof(abi::SegmentHeader))) {
      return absl::DataLossError(absl::StrCat("segment ", n, ": truncated (", file_size,
                                              " bytes, the header alone is ",
                                              sizeof(abi::SegmentHeader), ")"));
    }
    region = bip::mapped_region(shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    return absl::UnavailableError(absl::StrCat("segment ", n, ": ", e.what()));
  }
  auto mapping = std::make_shared<bip::mapped_region>(std::move(region));
  const uint64_t mapped_size = std::min<uint64_t>(static_cast<uint64_t>(file_size),
                                                  mapping->get_size());
  auto* base = static_cast<uint8_t*>(mapping->get_address());
  return Adopt(n, id->pid, base, mapped_size, std::move(mapping));
}

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::OpenMemory(std::string_view name,
                                                                         uint8_t* base,
                                                                         uint64_t size) {
  absl::StatusOr<SegmentId> id = ParseSegmentName(name);
  if (!id.ok()) return id.status();
  if (size < sizeof(abi::SegmentHeader)) {
    return absl::DataLossError(absl::StrCat("segment ", std::string(name), ": truncated (", size,
                                            " bytes, the header alone is ",
                                            sizeof(abi::SegmentHeader), ")"));
  }
  return Adopt(std::string(name), id->pid, base, size, nullptr);
}

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Adopt(
    const std::string& n, uint32_t name_pid, uint8_t* base, uint64_t size,
    std::shared_ptr<void> mapping) {
  auto reader = std::unique_ptr<SegmentReader>(new SegmentReader());
  auto* h = reinterpret_cast<abi::SegmentHeader*>(base);
  // Acquire: pairs with the creator's release store of magic; every field
  // below was written before it.
  const uint64_t magic = h->magic.load(std::memory_order_acquire);
  if (magic == 0) {
    return absl::UnavailableError(absl::StrCat("segment ", n, ": not initialised yet"));
  }
  if (magic != abi::kMagic) {
    return absl::DataLossError(absl::StrCat("segment ", n, ": bad magic 0x", absl::Hex(magic)));
  }
  if (h->abi_version != abi::kAbiVersion) {
    return absl::FailedPreconditionError(absl::StrCat("segment ", n, ": ABI version ",
                                                      h->abi_version, ", this reader knows ",
                                                      abi::kAbiVersion));
  }
  if (h->header_size != sizeof(abi::SegmentHeader) || h->record_size != sizeof(abi::Record)) {
    return absl::DataLossError(absl::StrCat("segment ", n, ": header size ", h->header_size,
                                            " / record size ", h->record_size, " do not match"));
  }
  // Copy the geometry once; everything later uses only these copies.
  SegmentInfo& info = reader->info_;
  info.name = n;
  info.ring_capacity = h->ring_capacity;
  info.slot_count = h->slot_count;
  info.tag_capacity = h->tag_capacity;
  info.segment_size = h->segment_size;
  const uint64_t tag_table_offset = h->tag_table_offset;
  const uint64_t slots_offset = h->slots_offset;
  const uint64_t slot_stride = h->slot_stride;
  if (!IsPowerOfTwo(info.ring_capacity) || info.ring_capacity < abi::kMinRingCapacity ||
      info.ring_capacity > abi::kMaxRingCapacity) {
    return absl::DataLossError(
        absl::StrCat("segment ", n, ": ring capacity ", info.ring_capacity, " is impossible"));
  }
  if (info.slot_count == 0 || info.slot_count > abi::kMaxSlots) {
    return absl::DataLossError(
        absl::StrCat("segment ", n, ": slot count ", info.slot_count, " is impossible"));
  }
  if (info.tag_capacity > abi::kMaxTags) {
    return absl::DataLossError(
        absl::StrCat("segment ", n, ": tag capacity ", info.tag_capacity, " is impossible"));
  }
  if (tag_table_offset != abi::TagTableOffset() ||
      slots_offset != abi::SlotsOffset(info.tag_capacity) ||
      slot_stride != abi::SlotStride(info.ring_capacity) ||
      info.segment_size !=
          abi::SegmentSize(info.tag_capacity, info.slot_count, info.ring_capacity)) {
    return absl::DataLossError(
        absl::StrCat("segment ", n, ": offsets do not match its geometry"));
  }
  if (info.segment_size > size) {
    return absl::DataLossError(absl::StrCat("segment ", n, ": truncated (", size,
                                            " bytes, its header says ", info.segment_size, ")"));
  }
  info.pid = h->pid;
  if (info.pid != name_pid) {
    return absl::DataLossError(absl::StrCat("segment ", n, ": header pid ", info.pid,
                                            " does not match the name"));
  }
  info.process_start_ticks = h->process_start_ticks;
  info.process_name = CopyCString(h->process_name, abi::kProcessNameMax);
  if (!Printable(info.process_name)) info.process_name = "?";
  info.anchor_tsc = h->anchor_tsc;
  info.anchor_realtime_ns = h->anchor_realtime_ns;

  reader->mapped_size_ = size;
  reader->tag_table_offset_ = tag_table_offset;
  reader->slots_offset_ = slots_offset;
  reader->slot_stride_ = slot_stride;
  reader->base_ = base;
  reader->mapping_ = std::move(mapping);
  return reader;
}

SegmentReader::~SegmentReader() = default;

SegmentCounters SegmentReader::counters() const {
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base_);
  SegmentCounters c;
  // Relaxed: plain counters, no data hangs on them.
  c.tags_rejected = h->tags_rejected.load(std::memory_order_relaxed);
  c.threads_without_slot = h->threads_without_slot.load(std::memory_order_relaxed);
  c.slotless_dropped = h->slotless_dropped.load(std::memory_order_relaxed);
  c.rings_refused = h->rings_refused.load(std::memory_order_relaxed);
  c.last_refusal_errno = h->last_refusal_errno.load(std::memory_order_relaxed);
  return c;
}

absl::StatusOr<std::vector<std::string>> SegmentReader::Tags() const {
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base_);
  // Acquire: pairs with the release store in Tag::Tag(); names below the count are complete.
  const uint32_t count = std::min(h->tag_count.load(std::memory_order_acquire), info_.tag_capacity);
  const auto* table = reinterpret_cast<const abi::TagEntry*>(base_ + tag_table_offset_);
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t id = 0; id < count; ++id) {
    std::string name = CopyCString(table[id].name, abi::kTagNameMax);
    if (name.empty() || !Printable(name)) {
      return absl::DataLossError(
          absl::StrCat("segment ", info_.name, ": tag ", id, " has no printable name"));
    }
    names.push_back(std::move(name));
  }
  return names;
}

abi::SlotControl* SegmentReader::control(uint32_t slot) const {
  return reinterpret_cast<abi::SlotControl*>(base_ + slots_offset_ + uint64_t{slot} * slot_stride_);
}

const abi::Record* SegmentReader::records(uint32_t slot) const {
  return reinterpret_cast<const abi::Record*>(reinterpret_cast<const uint8_t*>(control(slot)) +
                                              sizeof(abi::SlotControl));
}

SlotView SegmentReader::Slot(uint32_t slot) const {
  const abi::SlotControl* c = control(slot);
  SlotView v;
  // Acquire: a retired state comes with the owner's final write_index;
  // pairs with the release store in RetireSlotAtThreadExit().
  v.state = c->state.load(std::memory_order_acquire);
  // Acquire: pairs with the claimer's release increment; tid and name are complete.
  v.generation = c->generation.load(std::memory_order_acquire);
  v.tid = c->tid;
  v.thread_name = CopyCString(c->thread_name, abi::kThreadNameMax);
  if (!Printable(v.thread_name)) v.thread_name = "?";
  v.write_index = c->write_index.load(std::memory_order_acquire);
  v.read_index = c->read_index.load(std::memory_order_relaxed);
  v.dropped = c->dropped.load(std::memory_order_relaxed);
  return v;
}

absl::StatusOr<uint64_t> SegmentReader::Peek(uint32_t slot, size_t max_records,
                                             std::vector<abi::Record>* out,
                                             uint64_t* generation) const {
  const abi::SlotControl* c = control(slot);
  // Relaxed: only the consumer writes read_index.
  const uint64_t r = c->read_index.load(std::memory_order_relaxed);
  // Acquire: pairs with the producer's release store of write_index in
  // internal::Write(); the records below it are complete.
  const uint64_t w = c->write_index.load(std::memory_order_acquire);
  // Indices grow forever and wrap at 2^64 (abi.h): the published count is
  // w - r modulo 2^64. Write behind read shows up as a huge difference, so
  // this one check refuses both impossible states, also across the wrap.
  if (w - r > info_.ring_capacity) {
    return absl::DataLossError(absl::StrCat("segment ", info_.name, " slot ", slot,
                                            ": impossible indices (read ", r, ", write ", w,
                                            ", capacity ", info_.ring_capacity, ")"));
  }
  const uint64_t n = std::min<uint64_t>(w - r, max_records);
  const uint64_t mask = info_.ring_capacity - 1;
  const abi::Record* ring = records(slot);
  if (n == 0) {
    if (generation != nullptr) *generation = c->generation.load(std::memory_order_acquire);
    return r;
  }
  const size_t old_size = out->size();
  out->resize(old_size + n);
  const uint64_t first = r & mask;
  const uint64_t first_part = std::min<uint64_t>(n, info_.ring_capacity - first);
  std::memcpy(out->data() + old_size, ring + first, first_part * sizeof(abi::Record));
  if (n > first_part) {
    std::memcpy(out->data() + old_size + first_part, ring, (n - first_part) * sizeof(abi::Record));
  }
  if (generation != nullptr) *generation = c->generation.load(std::memory_order_acquire);
  return r + n;
}

void SegmentReader::Commit(uint32_t slot, uint64_t new_read_index) {
  // Release: our copy of the cells below new_read_index is finished before the
  // producer may overwrite them; pairs with the acquire in internal::WriteSlow().
  control(slot)->read_index.store(new_read_index, std::memory_order_release);
}

bool SegmentReader::FreeIfDrained(uint32_t slot) {
  abi::SlotControl* c = control(slot);
  uint32_t state = c->state.load(std::memory_order_acquire);
  if (state != abi::kSlotRetired) return false;
  if (c->write_index.load(std::memory_order_acquire) !=
      c->read_index.load(std::memory_order_relaxed)) {
    return false;
  }
  // Release: our final read_index is visible to the next claimer; pairs with
  // the acquire CAS in ClaimSlot().
  return c->state.compare_exchange_strong(state, abi::kSlotFree, std::memory_order_acq_rel);
}

}  // namespace ticktrace
