// The consumer side of a segment: discovery, validation, draining.
// Layout and protocol: ticktrace/abi.h. Every byte read here is untrusted.

#include "ticktrace/segment_reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/process_info.h"
#include "ticktrace/absl_status.h"
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
  // Sessions are [A-Za-z0-9_-] (no dot): session.pid or session.pid.suffix.
  const std::vector<std::string> parts = absl::StrSplit(name.substr(kPrefix.size()), '.');
  SegmentId id;
  const bool shape_ok = (parts.size() == 2 || parts.size() == 3) && !parts[0].empty() &&
                        absl::SimpleAtoi(parts[1], &id.pid) && id.pid != 0;
  const bool suffix_ok = parts.size() == 2 ||
                         (shape_ok && absl::SimpleAtoi(parts[2], &id.suffix) && id.suffix >= 1 &&
                          id.suffix <= kMaxSegmentNameSuffix &&
                          parts[2] == absl::StrCat(id.suffix));
  if (!shape_ok || !suffix_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not of the form ticktrace.<session>.<pid>[.<n>]"));
  }
  id.name = name;
  id.session = parts[0];
  return id;
}

absl::StatusOr<std::vector<SegmentId>> ListSegments(std::string_view session) {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return absl::UnavailableError("cannot list /dev/shm");
  struct stat dir_st;
  const uint64_t device = fstat(dirfd(dir), &dir_st) == 0 ? dir_st.st_dev : 0;
  std::vector<SegmentId> found;
  while (dirent* e = readdir(dir)) {
    absl::StatusOr<SegmentId> id = ParseSegmentName(e->d_name);
    if (id.ok() && id->session == session) {
      id->device = device;
      id->inode = e->d_ino;
      found.push_back(*std::move(id));
    }
  }
  closedir(dir);
  std::sort(found.begin(), found.end(),
            [](const SegmentId& a, const SegmentId& b) {
              return a.pid != b.pid ? a.pid < b.pid : a.suffix < b.suffix;
            });
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
  return ToAbslStatusOr(internal::ProcessStartTicks(pid));
}

bool ProcessAlive(uint32_t pid, uint64_t start_ticks) {
  Result<uint64_t> now = internal::ProcessStartTicks(pid);
  // Only a process that is certainly gone counts as dead: the collector
  // removes a dead process's segment. A /proc entry that cannot be parsed, or
  // a creator that could not read its own start time (0), means "unknown",
  // and an unknown process is treated as alive while its pid exists.
  if (now.status().code() == ErrorCode::kNotFound) return false;
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
    case abi::kExternal:
      if (record.aux == abi::kClockInvalid || record.aux > abi::kExternalClockMax) {
        return absl::DataLossError(absl::StrCat("record: unknown clock ", record.aux));
      }
      [[fallthrough]];
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

namespace {

// --- The SIGBUS guard ------------------------------------------------------
//
// A thread inside SegmentReader::Guarded() publishes the mapping it touches
// and a jump buffer here. The handler jumps back only for a fault inside
// that range on that thread; any other SIGBUS goes to the handler that was
// installed before ours, or gets the default action.

struct BusGuard {
  sigjmp_buf env;
  const uint8_t* begin;
  const uint8_t* end;
};

thread_local BusGuard* volatile tls_bus_guard = nullptr;
struct sigaction g_previous_sigbus;

extern "C" void OnSigbus(int sig, siginfo_t* info, void* context) {
  BusGuard* guard = tls_bus_guard;
  const auto* addr = static_cast<const uint8_t*>(info->si_addr);
  if (guard != nullptr && addr >= guard->begin && addr < guard->end) {
    tls_bus_guard = nullptr;
    siglongjmp(guard->env, 1);  // SA_NODEFER: SIGBUS is not left blocked
  }
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 &&
      g_previous_sigbus.sa_sigaction != nullptr) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN &&
      g_previous_sigbus.sa_handler != nullptr) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  // Default action: re-executing the faulting access raises it again, uncaught.
  signal(SIGBUS, SIG_DFL);
}

// Installs the handler once per process, on the first mapping of a file.
void InstallSigbusGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous_sigbus);
  });
}

// The reservation of a segment's geometry (PROT_NONE; pieces of the file are
// mapped over it) and the descriptor later pieces are mapped from: unmapped
// and closed with the last reader that shares it.
struct Mapping {
  void* address = MAP_FAILED;
  size_t bytes = 0;
  int fd = -1;
  ~Mapping() {
    if (address != MAP_FAILED) munmap(address, bytes);
    if (fd >= 0) close(fd);
  }
};

// Closes a descriptor at scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

bool PreadAll(int fd, void* buf, size_t bytes, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(buf);
  while (bytes > 0) {
    const ssize_t n = pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// Records published and not consumed in every slot of a refused segment,
// read with pread() (nothing mapped; a file shrunk meanwhile reads short and
// ends the count). A slot whose indices are impossible counts 0. A segment
// of more than kMaxRingsCounted rings is not counted (`why` says unknown).
void CountUnconsumed(int fd, const abi::SegmentHeader& h, uint64_t file_bytes,
                     SegmentOpenError& why) {
  if (h.slot_count > kMaxRingsCounted) {
    why.unconsumed_unknown = true;
    return;
  }
  uint64_t& total = why.unconsumed_records;
  for (uint32_t slot = 0; slot < h.slot_count; ++slot) {
    const uint64_t control = h.slots_offset + uint64_t{slot} * h.slot_stride;
    if (control + sizeof(abi::SlotControl) > file_bytes) break;
    uint64_t write_index = 0, read_index = 0;
    if (!PreadAll(fd, &write_index, sizeof(write_index),
                  control + offsetof(abi::SlotControl, write_index)) ||
        !PreadAll(fd, &read_index, sizeof(read_index),
                  control + offsetof(abi::SlotControl, read_index))) {
      break;
    }
    if (write_index - read_index <= h.ring_capacity) total += write_index - read_index;
  }
}

// Which slots were ever claimed (generation != 0 in line 0), read with
// pread() from a validated geometry (nothing mapped). A slot past the end
// of the file, or unreadable, counts as not claimed: it is never mapped.
std::vector<bool> ClaimedRings(int fd, const SegmentInfo& info, uint64_t slots_offset,
                               uint64_t slot_stride, uint64_t file_bytes) {
  std::vector<bool> claimed(info.slot_count, false);
  for (uint32_t slot = 0; slot < info.slot_count; ++slot) {
    const uint64_t control = slots_offset + uint64_t{slot} * slot_stride;
    if (control + sizeof(abi::SlotControl) > file_bytes) break;
    uint64_t generation = 0;
    if (!PreadAll(fd, &generation, sizeof(generation),
                  control + offsetof(abi::SlotControl, generation))) {
      break;
    }
    claimed[slot] = generation != 0;
  }
  return claimed;
}

uint64_t PageBytes() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Open(std::string_view name,
                                                                   const SegmentOpenLimits& limits,
                                                                   SegmentOpenError* error) {
  SegmentOpenError scratch;
  SegmentOpenError& why = error != nullptr ? *error : scratch;
  why = SegmentOpenError();
  auto refuse = [&why](SegmentRefusal kind, absl::Status status) {
    why.refusal = kind;
    return status;
  };
  absl::StatusOr<SegmentId> id = ParseSegmentName(name);
  if (!id.ok()) return refuse(SegmentRefusal::kCorrupt, id.status());
  const std::string n(name);
  const std::string path = absl::StrCat("/dev/shm/", n);
  // lstat first: never open (with its side effects) a device, FIFO or link.
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    why.error_number = errno;
    return refuse(SegmentRefusal::kUnreadable,
                  absl::UnavailableError(absl::StrCat("segment ", n, ": ", std::strerror(errno))));
  }
  if (!S_ISREG(st.st_mode)) {
    return refuse(SegmentRefusal::kCorrupt,
                  absl::DataLossError(absl::StrCat("segment ", n, ": not a regular file")));
  }
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    why.error_number = errno;
    why.owner_uid = st.st_uid;
    return refuse(SegmentRefusal::kUnreadable,
                  absl::PermissionDeniedError(absl::StrCat("segment ", n, " (owner uid ", st.st_uid,
                                                           "): cannot open: ",
                                                           std::strerror(errno))));
  }
  FdCloser closer{fd};
  // The owner of what was opened, not of the name (which may have changed).
  if (fstat(fd, &st) != 0) {
    why.error_number = errno;
    return refuse(SegmentRefusal::kUnreadable,
                  absl::UnavailableError(absl::StrCat("segment ", n, ": fstat: ",
                                                      std::strerror(errno))));
  }
  why.owner_uid = st.st_uid;
  if (!S_ISREG(st.st_mode)) {
    return refuse(SegmentRefusal::kCorrupt,
                  absl::DataLossError(absl::StrCat("segment ", n, ": not a regular file")));
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  abi::SegmentHeader header;
  const bool header_read = file_bytes >= sizeof(header) && [&] {
    // The magic first, then the rest: a reader that sees the magic sees the
    // fields the creator wrote before it (abi.h); each pread copies after the last.
    uint64_t magic = 0;
    if (!PreadAll(fd, &magic, sizeof(magic), 0)) return false;
    if (!PreadAll(fd, &header, sizeof(header), 0)) return false;
    header.magic.store(magic, std::memory_order_relaxed);
    return true;
  }();
  const uint32_t euid = static_cast<uint32_t>(geteuid());
  const bool owner_ok = st.st_uid == euid || std::find(limits.allowed_uids.begin(),
                                                       limits.allowed_uids.end(),
                                                       st.st_uid) != limits.allowed_uids.end();
  if (!owner_ok) {
    absl::StatusOr<std::unique_ptr<SegmentReader>> probe =
        header_read ? Validate(n, id->pid, header, file_bytes) : absl::DataLossError("unread");
    if (probe.ok()) CountUnconsumed(fd, header, file_bytes, why);
    return refuse(SegmentRefusal::kForeign,
                  absl::PermissionDeniedError(absl::StrCat(
                      "segment ", n, ": owned by uid ", st.st_uid, ", not by this collector's uid ",
                      euid, " (--allow-uid ", st.st_uid, " drains it)")));
  }
  if (!header_read) {
    return refuse(SegmentRefusal::kCorrupt,
                  absl::DataLossError(absl::StrCat("segment ", n, ": truncated (", file_bytes,
                                                   " bytes, the header alone is ",
                                                   sizeof(abi::SegmentHeader), ")")));
  }
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
      Validate(n, id->pid, header, file_bytes, limits.newest_abi_version);
  if (!reader.ok()) {
    const uint64_t magic = header.magic.load(std::memory_order_relaxed);
    if (magic == 0) return refuse(SegmentRefusal::kNotReady, reader.status());
    return refuse(SegmentRefusal::kCorrupt, reader.status());
  }
  SegmentReader& r = **reader;
  SegmentInfo& info = r.info_;
  // Judged by what it reserved, not by its sparse geometry (abi.h, "Pages").
  const std::vector<bool> claimed =
      ClaimedRings(fd, info, r.slots_offset_, r.slot_stride_, file_bytes);
  info.rings_claimed = static_cast<uint32_t>(std::count(claimed.begin(), claimed.end(), true));
  info.reserved_bytes = abi::ReservedBytes(info.tag_capacity, info.slot_count, info.ring_capacity,
                                           info.rings_claimed);
  if (info.reserved_bytes > limits.max_segment_bytes) {
    why.reserved_bytes = info.reserved_bytes;
    CountUnconsumed(fd, header, file_bytes, why);
    return refuse(SegmentRefusal::kOversized,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "segment ", n, ": ", info.rings_claimed, " of ", info.slot_count,
                      " rings of ", info.ring_capacity, " records claimed, ", info.reserved_bytes,
                      " bytes reserved, above the limit of ", limits.max_segment_bytes,
                      " bytes (--max-segment-bytes ", info.reserved_bytes, " or more drains it)")));
  }
  // One inaccessible reservation of the whole geometry, so every offset keeps
  // its place; only the pieces in use are mapped over it.
  auto mapping = std::make_shared<Mapping>();
  mapping->bytes = static_cast<size_t>(info.segment_size);
  mapping->address =
      mmap(nullptr, mapping->bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping->address == MAP_FAILED) {
    why.error_number = errno;
    return refuse(SegmentRefusal::kUnreadable,
                  absl::UnavailableError(
                      absl::StrCat("segment ", n, ": mmap reservation: ", std::strerror(errno))));
  }
  mapping->fd = fd;
  closer.fd = -1;  // the mapping owns it now: later rings are mapped from it
  r.base_ = static_cast<uint8_t*>(mapping->address);
  r.mapped_size_ = mapping->bytes;
  r.fd_ = fd;
  r.max_segment_bytes_ = limits.max_segment_bytes;
  r.reserved_bytes_ = info.reserved_bytes;
  r.ring_mapped_ = claimed;
  r.mapping_ = std::move(mapping);
  bool mapped = r.MapRange(0, r.slots_offset_);
  for (uint32_t slot = 0; mapped && slot < info.slot_count; ++slot) {
    const uint64_t control = r.slots_offset_ + uint64_t{slot} * r.slot_stride_;
    mapped =
        r.MapRange(control, control + (claimed[slot] ? r.slot_stride_ : sizeof(abi::SlotControl)));
  }
  if (!mapped) {
    why.error_number = errno;
    return refuse(SegmentRefusal::kUnreadable,
                  absl::UnavailableError(absl::StrCat("segment ", n, ": mmap: ",
                                                      std::strerror(errno))));
  }
  InstallSigbusGuard();
  r.owner_uid_ = static_cast<uint32_t>(st.st_uid);
  return reader;
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
  abi::SegmentHeader header;
  std::memcpy(static_cast<void*>(&header), base, sizeof(header));
  // Acquire: pairs with the creator's release store of magic; the copy above
  // may predate it, so a published magic is re-read and the copy taken again.
  const uint64_t magic =
      reinterpret_cast<abi::SegmentHeader*>(base)->magic.load(std::memory_order_acquire);
  std::memcpy(static_cast<void*>(&header), base, sizeof(header));
  header.magic.store(magic, std::memory_order_relaxed);
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
      Validate(std::string(name), id->pid, header, size);
  if (!reader.ok()) return reader.status();
  (*reader)->ring_mapped_.assign((*reader)->info_.slot_count, true);  // the caller's memory
  (*reader)->reserved_bytes_ = (*reader)->info_.reserved_bytes =
      abi::ReservedBytes((*reader)->info_.tag_capacity, (*reader)->info_.slot_count,
                         (*reader)->info_.ring_capacity, (*reader)->info_.slot_count);
  (*reader)->info_.rings_claimed = (*reader)->info_.slot_count;
  (*reader)->base_ = base;
  (*reader)->mapped_size_ = size;
  (*reader)->owner_uid_ = static_cast<uint32_t>(geteuid());
  return reader;
}

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Validate(
    const std::string& n, uint32_t name_pid, const abi::SegmentHeader& header, uint64_t size,
    uint32_t newest_abi_version) {
  auto reader = std::unique_ptr<SegmentReader>(new SegmentReader());
  const abi::SegmentHeader* h = &header;
  const uint64_t magic = h->magic.load(std::memory_order_relaxed);  // a private copy
  if (magic == 0) {
    return absl::UnavailableError(absl::StrCat("segment ", n, ": not initialised yet"));
  }
  if (magic != abi::kMagic) {
    return absl::DataLossError(absl::StrCat("segment ", n, ": bad magic 0x", absl::Hex(magic)));
  }
  if (h->abi_version < abi::kOldestReadableAbiVersion || h->abi_version > newest_abi_version) {
    const std::string known =
        newest_abi_version <= abi::kOldestReadableAbiVersion
            ? absl::StrCat(newest_abi_version)
            : absl::StrCat(abi::kOldestReadableAbiVersion, " to ", newest_abi_version);
    return absl::FailedPreconditionError(absl::StrCat("segment ", n, ": ABI version ",
                                                      h->abi_version, ", this reader knows ",
                                                      known));
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

  reader->tag_table_offset_ = tag_table_offset;
  reader->slots_offset_ = slots_offset;
  reader->slot_stride_ = slot_stride;
  return reader;
}

SegmentReader::~SegmentReader() = default;

bool SegmentReader::MapRange(uint64_t begin, uint64_t end) const {
  const uint64_t page = PageBytes();
  const uint64_t first = begin / page * page;
  const uint64_t last = (end + page - 1) / page * page;
  // Same file offset as reservation offset: overlapping pieces (a page shared
  // by two slots) map the same file pages twice, harmlessly.
  void* at = mmap(base_ + first, last - first, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_,
                  static_cast<off_t>(first));
  return at != MAP_FAILED;
}

absl::Status SegmentReader::MapRing(uint32_t slot) const {
  if (ring_mapped_[slot]) return absl::OkStatus();
  const uint64_t ring_bytes = uint64_t{info_.ring_capacity} * sizeof(abi::Record);
  if (reserved_bytes_ + ring_bytes > max_segment_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "segment ", info_.name, ": ring ", slot, " claimed after it was opened takes it to ",
        reserved_bytes_ + ring_bytes, " bytes reserved, above the limit of ", max_segment_bytes_,
        " bytes (--max-segment-bytes ", reserved_bytes_ + ring_bytes, " or more drains it)"));
  }
  const uint64_t control = slots_offset_ + uint64_t{slot} * slot_stride_;
  if (!MapRange(control, control + slot_stride_)) {
    return absl::UnavailableError(
        absl::StrCat("segment ", info_.name, ": mmap of ring ", slot, ": ", std::strerror(errno)));
  }
  ring_mapped_[slot] = true;
  reserved_bytes_ += ring_bytes;
  return absl::OkStatus();
}

template <typename Access>
bool SegmentReader::Guarded(Access&& access) const {
  if (truncated_) return false;
  BusGuard guard;
  guard.begin = base_;
  guard.end = base_ + mapped_size_;
  BusGuard* const outer = tls_bus_guard;
  if (sigsetjmp(guard.env, /*savemask=*/0) != 0) {
    // A read or write of the mapping faulted: the file is shorter than it was.
    tls_bus_guard = outer;
    truncated_ = true;
    return false;
  }
  tls_bus_guard = &guard;
  // Signal fences: the compiler keeps the accesses between the two stores of
  // tls_bus_guard, which the handler (on this thread) reads.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  access();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_bus_guard = outer;
  return true;
}

SegmentCounters SegmentReader::counters() const {
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base_);
  SegmentCounters c;
  const bool ok = Guarded([&] {
    // Relaxed: plain counters, no data hangs on them.
    c.tags_rejected = h->tags_rejected.load(std::memory_order_relaxed);
    c.threads_without_slot = h->threads_without_slot.load(std::memory_order_relaxed);
    c.slotless_dropped = h->slotless_dropped.load(std::memory_order_relaxed);
    c.rings_refused = h->rings_refused.load(std::memory_order_relaxed);
    c.last_refusal_errno = h->last_refusal_errno.load(std::memory_order_relaxed);
  });
  return ok ? c : SegmentCounters();
}

absl::StatusOr<std::vector<std::string>> SegmentReader::Tags() const {
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base_);
  const auto* table = reinterpret_cast<const abi::TagEntry*>(base_ + tag_table_offset_);
  std::vector<std::string> names;
  bool unprintable = false;
  uint32_t bad_id = 0;
  const bool ok = Guarded([&] {
    // Acquire: pairs with the release store in Tag::Tag(); names below the count are complete.
    const uint32_t count =
        std::min(h->tag_count.load(std::memory_order_acquire), info_.tag_capacity);
    names.reserve(count);
    for (uint32_t id = 0; id < count; ++id) {
      std::string name = CopyCString(table[id].name, abi::kTagNameMax);
      if (name.empty() || !Printable(name)) {
        unprintable = true;
        bad_id = id;
        return;
      }
      names.push_back(std::move(name));
    }
  });
  if (!ok) {
    return absl::DataLossError(absl::StrCat("segment ", info_.name, ": shrank under the reader"));
  }
  if (unprintable) {
    return absl::DataLossError(
        absl::StrCat("segment ", info_.name, ": tag ", bad_id, " has no printable name"));
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
  char name[abi::kThreadNameMax + 1];
  const bool ok = Guarded([&] {
    // Acquire: a retired state comes with the owner's final write_index;
    // pairs with the release store in RetireSlotAtThreadExit().
    v.state = c->state.load(std::memory_order_acquire);
    // Acquire: pairs with the claimer's release increment; tid and name are complete.
    v.generation = c->generation.load(std::memory_order_acquire);
    v.tid = c->tid;
    std::memcpy(name, c->thread_name, sizeof(name));
    v.write_index = c->write_index.load(std::memory_order_acquire);
    v.read_index = c->read_index.load(std::memory_order_relaxed);
    v.dropped = c->dropped.load(std::memory_order_relaxed);
  });
  if (!ok) return SlotView();
  v.thread_name = CopyCString(name, abi::kThreadNameMax);
  if (!Printable(v.thread_name)) v.thread_name = "?";
  return v;
}

absl::StatusOr<uint64_t> SegmentReader::Peek(uint32_t slot, size_t max_records,
                                             std::vector<abi::Record>* out,
                                             uint64_t* generation) const {
  if (!ring_mapped_[slot]) {
    // Only a ring with records in it is worth mapping.
    uint64_t r = 0, w = 0;
    const abi::SlotControl* c = control(slot);
    if (!Guarded([&] {
          r = c->read_index.load(std::memory_order_relaxed);
          w = c->write_index.load(std::memory_order_acquire);
        })) {
      return absl::DataLossError(absl::StrCat("segment ", info_.name, ": shrank under the reader"));
    }
    // Impossible indices are refused below without touching the records.
    if (w != r && w - r <= info_.ring_capacity) {
      if (absl::Status mapped = MapRing(slot); !mapped.ok()) return mapped;
    }
  }
  const abi::SlotControl* c = control(slot);
  const abi::Record* ring = records(slot);
  const uint64_t mask = info_.ring_capacity - 1;
  const size_t old_size = out->size();
  uint64_t r = 0, w = 0, n = 0, gen = 0;
  bool impossible = false;
  // One guarded section per call (a guard costs a sigsetjmp): nothing in it
  // allocates while the mapping is touched, so a jump out of it leaks nothing.
  const bool ok = Guarded([&] {
    // Relaxed: only the consumer writes read_index.
    r = c->read_index.load(std::memory_order_relaxed);
    // Acquire: pairs with the producer's release store of write_index in
    // internal::Write(); the records below it are complete.
    w = c->write_index.load(std::memory_order_acquire);
    // Indices grow forever and wrap at 2^64 (abi.h): the published count is
    // w - r modulo 2^64. Write behind read shows up as a huge difference, so
    // this one check refuses both impossible states, also across the wrap.
    if (w - r > info_.ring_capacity) {
      impossible = true;
      return;
    }
    n = std::min<uint64_t>(w - r, max_records);
    if (n > 0) {
      out->resize(old_size + n);  // touches the heap only
      const uint64_t first = r & mask;
      const uint64_t first_part = std::min<uint64_t>(n, info_.ring_capacity - first);
      abi::Record* dest = out->data() + old_size;
      std::memcpy(dest, ring + first, first_part * sizeof(abi::Record));
      if (n > first_part) {
        std::memcpy(dest + first_part, ring, (n - first_part) * sizeof(abi::Record));
      }
    }
    if (generation != nullptr) gen = c->generation.load(std::memory_order_acquire);
  });
  if (!ok) {
    out->resize(old_size);  // a faulted copy leaves nothing behind
    return absl::DataLossError(absl::StrCat("segment ", info_.name, ": shrank under the reader"));
  }
  if (impossible) {
    return absl::DataLossError(absl::StrCat("segment ", info_.name, " slot ", slot,
                                            ": impossible indices (read ", r, ", write ", w,
                                            ", capacity ", info_.ring_capacity, ")"));
  }
  if (generation != nullptr) *generation = gen;
  return r + n;
}

bool SegmentReader::Commit(uint32_t slot, uint64_t new_read_index) {
  abi::SlotControl* c = control(slot);
  return Guarded([&] {
    // Release: our copy of the cells below new_read_index is finished before the
    // producer may overwrite them; pairs with the acquire in internal::WriteSlow().
    c->read_index.store(new_read_index, std::memory_order_release);
  });
}

bool SegmentReader::PendingRecords(std::vector<uint64_t>* pending) const {
  pending->assign(info_.slot_count, 0);
  return Guarded([&] {
    for (uint32_t slot = 0; slot < info_.slot_count; ++slot) {
      const abi::SlotControl* c = control(slot);
      // Relaxed: only the consumer writes read_index. Acquire: as in Peek().
      const uint64_t r = c->read_index.load(std::memory_order_relaxed);
      (*pending)[slot] = c->write_index.load(std::memory_order_acquire) - r;
    }
  });
}

uint32_t SegmentReader::FreeDrainedSlots(const std::vector<bool>& skip) {
  uint32_t freed = 0;
  Guarded([&] {
    for (uint32_t slot = 0; slot < info_.slot_count && slot < skip.size(); ++slot) {
      if (skip[slot]) continue;
      abi::SlotControl* c = control(slot);
      uint32_t state = c->state.load(std::memory_order_acquire);
      if (state != abi::kSlotRetired) continue;
      if (c->write_index.load(std::memory_order_acquire) !=
          c->read_index.load(std::memory_order_relaxed)) {
        continue;
      }
      // Release: as in FreeIfDrained().
      if (c->state.compare_exchange_strong(state, abi::kSlotFree, std::memory_order_acq_rel)) {
        ++freed;
      }
    }
  });
  return freed;
}

bool SegmentReader::FreeIfDrained(uint32_t slot) {
  abi::SlotControl* c = control(slot);
  bool freed = false;
  Guarded([&] {
    uint32_t state = c->state.load(std::memory_order_acquire);
    if (state != abi::kSlotRetired) return;
    if (c->write_index.load(std::memory_order_acquire) !=
        c->read_index.load(std::memory_order_relaxed)) {
      return;
    }
    // Release: our final read_index is visible to the next claimer; pairs with
    // the acquire CAS in ClaimSlot().
    freed = c->state.compare_exchange_strong(state, abi::kSlotFree, std::memory_order_acq_rel);
  });
  return freed;
}

}  // namespace ticktrace
