// A traced program built against an installed ticktrace, as a user builds one:
// it includes the public headers only (no Abseil; consumer_test.sh checks) and
// links ticktrace::trace. It stamps, runs a Span, a measure macro and the
// timers, then reads its own segment back through the ABI (ticktrace/abi.h is
// the layout a tool may read; the collector's reader is not installed).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ticktrace/abi.h"
#include "ticktrace/measure.h"
#include "ticktrace/status.h"
#include "ticktrace/timer.h"
#include "ticktrace/trace.h"

namespace {

// The records slot 0 of the segment `name` holds, read through the ABI; -1
// when the segment cannot be read.
long RecordsInFirstRing(const std::string& name, uint64_t* first_order_id) {
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 ||
      st.st_size < static_cast<off_t>(sizeof(ticktrace::abi::SegmentHeader))) {
    close(fd);
    return -1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return -1;
  const char* bytes = static_cast<const char*>(base);
  const auto* h = reinterpret_cast<const ticktrace::abi::SegmentHeader*>(bytes);
  long n = -1;
  if (h->magic.load(std::memory_order_acquire) == ticktrace::abi::kMagic &&
      h->abi_version == ticktrace::abi::kAbiVersion && h->slots_offset + h->slot_stride <= size) {
    const auto* slot =
        reinterpret_cast<const ticktrace::abi::SlotControl*>(bytes + h->slots_offset);
    n = static_cast<long>(slot->write_index.load(std::memory_order_acquire));
    const auto* records = reinterpret_cast<const ticktrace::abi::Record*>(
        bytes + h->slots_offset + sizeof(ticktrace::abi::SlotControl));
    if (n > 0) *first_order_id = records[0].order_id;
  }
  munmap(base, size);
  return n;
}

}  // namespace

int main() {
  ticktrace::Options options;
  options.session = "t_consumer_" + std::to_string(getpid());
  options.ring_records = 64;
  options.rings = 1;
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    std::fprintf(stderr, "consumer: %s\n", st.ToString().c_str());
    return 1;
  }
  ticktrace::Options bad;
  bad.rings = 0;
  if (bad.Validate().code() != ticktrace::ErrorCode::kInvalidArgument) {
    std::fprintf(stderr, "consumer: rings = 0 was not refused\n");
    return 1;
  }

  static const ticktrace::Tag tag("consumer");
  ticktrace::stamp(tag, 42);          // record 1
  { ticktrace::Span span(tag, 43); }  // record 2
  TICKTRACE_START_MEASURE(begin);
  TICKTRACE_END_MEASURE(begin, tag);  // record 3
  ticktrace::IntervalTimer<1> interval;
  interval.start(0);
  interval.stop(0);
  const ticktrace::CalibratedTimer timer(2.0e9);  // a given frequency: no calibration
  const bool timers_ok = interval.count(0) == 1 && timer.ok() && timer.frequency_hz() == 2.0e9;

  const std::string name = ticktrace::CurrentSegmentName();
  uint64_t first_order_id = 0;
  const long records = RecordsInFirstRing(name, &first_order_id);
  shm_unlink(name.c_str());
  const bool ok = timers_ok && records == 3 && first_order_id == 42;
  std::printf("consumer: %ld records, first order %llu, timers %s: %s\n", records,
              static_cast<unsigned long long>(first_order_id), timers_ok ? "ok" : "wrong",
              ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
