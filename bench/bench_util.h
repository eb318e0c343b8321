// Helpers shared by the plain benchmark programs (bench/*_bench.cc). Not a
// library: header-only, included by the programs in this folder only.
//
//   MonotonicNs()        CLOCK_MONOTONIC in ns (batch timing)
//   SleepUntil(ns)       sleeps to an absolute CLOCK_MONOTONIC time (pacing)
//   InvoluntarySwitches  the calling thread's preemptions so far (quiet batches)
//   Fmt(format, v)       one number printed with a printf format
//   BracketBegin/End()   the fenced TSC reads that bracket one call
//   FloorRing            the least a ring-writing trace point can do, written here
//   OwnRingDrainer       empties the calling thread's libtrace ring, untimed
//   Summary / Summarize  mean, min, percentiles of a sample vector
//   PrintTarget          a figure beside its target: a "TARGET|..." line
//   PrintMetric          a raw figure for run_all.sh: a "METRIC|name|value" line
//
// Every function here runs on the calling thread only; nothing is shared.

#ifndef TICKTRACE_BENCH_BENCH_UTIL_H_
#define TICKTRACE_BENCH_BENCH_UTIL_H_

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"
#include "ticktrace/tsc.h"

namespace ticktrace::bench {

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline void SleepUntil(int64_t monotonic_ns) {
  timespec ts{static_cast<time_t>(monotonic_ns / 1'000'000'000),
              static_cast<long>(monotonic_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Involuntary context switches of the calling thread so far. A batch during
// which this grows was preempted by another runnable task (on this shared
// machine usually another tenant's compiler): its time is partly that task's.
inline long InvoluntarySwitches() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

// `path` made absolute when it exists, as given otherwise: for a child that
// runs in another directory than the bench (the collector in its --dir).
inline std::string AbsolutePath(const std::string& path) {
  std::string out = path;
  if (char* absolute = realpath(path.c_str(), nullptr)) {
    out = absolute;
    std::free(absolute);
  }
  return out;
}

inline std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The bracket around one measured call. This CPU does not
// advertise rdtscp, so both ends are `lfence; rdtsc; lfence`: the leading
// lfence waits for everything before it (what rdtscp would do at the end),
// the trailing one keeps later instructions from starting early.
inline uint64_t BracketBegin() noexcept {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
inline uint64_t BracketEnd() noexcept {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

// The floor: rdtsc (or any 64-bit time value) + one 32-byte record stored
// into a thread-local ring of the libtrace layout + a release store of the
// ring's index, on its own cache line as in the segment. Nobody reads it;
// the index wraps freely. No library code.
class FloorRing {
 public:
  explicit FloorRing(uint32_t capacity_records) : mask_(capacity_records - 1) {
    records_ = static_cast<abi::Record*>(
        ::operator new(sizeof(abi::Record) * capacity_records, std::align_val_t{64}));
    // Touch every cell once so that no page fault lands in a timed batch.
    for (uint32_t i = 0; i < capacity_records; ++i) records_[i] = abi::Record{};
    write_index_ = new (::operator new(64, std::align_val_t{64})) std::atomic<uint64_t>(0);
  }
  FloorRing(const FloorRing&) = delete;
  FloorRing& operator=(const FloorRing&) = delete;
  ~FloorRing() {
    ::operator delete(records_, std::align_val_t{64});
    ::operator delete(static_cast<void*>(write_index_), std::align_val_t{64});
  }

  // Stores one kStamp record with `time_value` in the tsc field.
  inline void Write(uint64_t time_value, uint16_t tag, uint64_t order_id) noexcept {
    const uint64_t w = next_;
    abi::Record& r = records_[w & mask_];
    r.tsc = time_value;
    r.order_id = order_id;
    r.payload.raw = 0;
    r.aux = abi::kAuxUnknown;
    r.tag_id = tag;
    r.kind = abi::kStamp;
    r.flags = 0;
    next_ = w + 1;
    // Release: what a real ring needs to publish the record to a reader.
    write_index_->store(w + 1, std::memory_order_release);
  }

 private:
  abi::Record* records_;
  std::atomic<uint64_t>* write_index_;
  uint64_t next_ = 0;
  uint64_t mask_;
};

// Empties the calling thread's own libtrace ring (Peek + Commit), so that a
// benchmark never fills it and never measures the drop path. Untimed.
// REQUIRES: the calling thread has made its first trace call (it owns a slot),
// and no collector drains this segment (one consumer per ring).
class OwnRingDrainer {
 public:
  // Opens the process's segment and finds the calling thread's slot.
  bool Attach() {
    absl::StatusOr<std::unique_ptr<SegmentReader>> r =
        SegmentReader::Open(CurrentSegmentName());
    if (!r.ok()) {
      std::fprintf(stderr, "SegmentReader::Open: %s\n", std::string(r.status().message()).c_str());
      return false;
    }
    reader_ = *std::move(r);
    const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
    for (uint32_t i = 0; i < reader_->info().slot_count; ++i) {
      const SlotView v = reader_->Slot(i);
      if (v.tid == tid && v.state == abi::kSlotOwned) slot_ = static_cast<int>(i);
    }
    if (slot_ < 0) std::fprintf(stderr, "could not find this thread's ring\n");
    buffer_.reserve(1u << 16);
    return slot_ >= 0;
  }

  void Drain() {
    for (;;) {
      buffer_.clear();
      absl::StatusOr<uint64_t> end = reader_->Peek(static_cast<uint32_t>(slot_), 1u << 16, &buffer_);
      if (!end.ok()) {
        std::fprintf(stderr, "drain: %s\n", std::string(end.status().message()).c_str());
        std::exit(1);
      }
      if (buffer_.empty()) return;
      drained_ += buffer_.size();
      reader_->Commit(static_cast<uint32_t>(slot_), *end);
    }
  }

  SlotView Slot() const { return reader_->Slot(static_cast<uint32_t>(slot_)); }
  uint64_t drained() const { return drained_; }
  void Close() { reader_.reset(); }

 private:
  std::unique_ptr<SegmentReader> reader_;
  int slot_ = -1;
  std::vector<abi::Record> buffer_;
  uint64_t drained_ = 0;
};

struct Summary {
  size_t n = 0;
  double mean = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
};

// Nearest-rank percentile of a sorted vector.
inline double PercentileSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// Sorts `v` in place.
inline Summary Summarize(std::vector<double>& v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.p50 = PercentileSorted(v, 50);
  s.p90 = PercentileSorted(v, 90);
  s.p99 = PercentileSorted(v, 99);
  s.p999 = PercentileSorted(v, 99.9);
  return s;
}

// One line of the summary table run_all.sh puts at the top of
// docs/benchmarks.md: "TARGET|area|figure|value|target|met or missed|note".
inline void PrintTarget(const char* area, const std::string& figure, const std::string& value,
                        const std::string& target, bool met, const std::string& note = "") {
  std::printf("TARGET|%s|%s|%s|%s|%s|%s\n", area, figure.c_str(), value.c_str(), target.c_str(),
              met ? "met" : "**missed**", note.c_str());
}

// A raw figure for bench/run_all.sh, which compares it with the same figure
// of another build and judges it against its target: "METRIC|name|value",
// with 15 significant digits, so that counts come out exact.
inline void PrintMetric(const char* name, double value) {
  std::printf("METRIC|%s|%.15g\n", name, value);
}

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_BENCH_UTIL_H_
