// In-process timers on the TSC, for code that wants numbers in its own hands
// rather than records in the ring (for those, see trace.h and measure.h).
//
//   IntervalTimer<N>  N accumulating slots. start(i) / stop(i) add one interval
//                     to slot i; switch_to(a, b) ends slot a and starts slot b
//                     with ONE TSC read, so back-to-back phases leave no gap
//                     and pay one read instead of two. Ticks on the hot path,
//                     ns only when asked (through a Calibration, in doubles).
//
//     ticktrace::IntervalTimer<2> t;
//     t.start(kParse);
//     Parse(msg);
//     t.switch_to(kParse, kDecide);   // one read: parse ends, decide begins
//     Decide(msg);
//     t.stop(kDecide);
//     double decide_ns = t.ns(kDecide, calibration);
//
//   CalibratedTimer   a stopwatch that finds its own frequency: the
//                     constructor probes CPUID and calibrates (Calibrate(),
//                     with the migration check), then start()/elapsed_ns().
//
// Both are header-only. Neither is thread-safe: one object, one thread.
// Neither checks for migration on its hot path: pin the thread when a core
// change would matter (see docs/calibration.md).

#ifndef TICKTRACE_TIMER_H_
#define TICKTRACE_TIMER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "ticktrace/calibration.h"
#include "ticktrace/environment.h"
#include "ticktrace/status.h"
#include "ticktrace/tsc.h"

namespace ticktrace {

// How an IntervalTimer reads the TSC.
enum class TimerRead {
  // Plain rdtsc: cheapest; edges may move by a few tens of cycles (out-of-order
  // execution). For intervals of hundreds of ns and up.
  kPlain,
  // lfence; rdtsc; lfence at every edge: nothing crosses an edge in either
  // direction. For micro-measurements; costs ~10-20 ns more per edge.
  kFenced,
};

// N accumulating interval slots. Cheap (a TSC read, a subtraction, two adds),
// inline, noexcept, no system call. One thread per object.
template <size_t N, TimerRead kRead = TimerRead::kPlain>
class IntervalTimer {
  static_assert(N > 0, "an IntervalTimer needs at least one slot");

 public:
  static constexpr size_t kSlots = N;

  IntervalTimer() noexcept { reset(); }

  // Starts slot `i` now; returns the TSC read. REQUIRES: i < N.
  uint64_t start(size_t i) noexcept { return start_at(i, Read()); }

  // Ends slot `i` now and adds the interval to it; returns the TSC read.
  // REQUIRES: i < N, and start(i) (or switch_to(_, i)) since the last stop.
  uint64_t stop(size_t i) noexcept { return stop_at(i, Read()); }

  // Ends slot `from` and starts slot `to` with one TSC read, which is both
  // `from`'s end and `to`'s begin (so last_stop_tsc(from) == last_start_tsc(to)).
  // Returns that read. REQUIRES: from, to < N; `from` running. from == to
  // closes one interval and opens the next.
  uint64_t switch_to(size_t from, size_t to) noexcept {
    const uint64_t tsc = Read();
    stop_at(from, tsc);
    start_at(to, tsc);
    return tsc;
  }

  // As start/stop, with a TSC value read elsewhere (e.g. a record's TSC).
  uint64_t start_at(size_t i, uint64_t tsc) noexcept {
    slots_[i].start_tsc = tsc;
    return tsc;
  }
  uint64_t stop_at(size_t i, uint64_t tsc) noexcept {
    Slot& s = slots_[i];
    s.stop_tsc = tsc;
    s.ticks += tsc - s.start_tsc;
    s.count += 1;
    return tsc;
  }

  // Accumulated ticks and the number of intervals of slot `i`.
  uint64_t ticks(size_t i) const noexcept { return slots_[i].ticks; }
  uint64_t count(size_t i) const noexcept { return slots_[i].count; }
  // The TSC of slot `i`'s latest start and latest stop (0 before any).
  uint64_t last_start_tsc(size_t i) const noexcept { return slots_[i].start_tsc; }
  uint64_t last_stop_tsc(size_t i) const noexcept { return slots_[i].stop_tsc; }

  // Accumulated time of slot `i` in ns, in doubles (no integer overflow).
  double ns(size_t i, const Calibration& calibration) const noexcept {
    return calibration.TicksToNs(static_cast<double>(slots_[i].ticks));
  }
  // Mean interval of slot `i` in ns; 0 when it has none.
  double mean_ns(size_t i, const Calibration& calibration) const noexcept {
    const uint64_t n = slots_[i].count;
    return n == 0 ? 0.0 : ns(i, calibration) / static_cast<double>(n);
  }

  // Clears every slot.
  void reset() noexcept { slots_.fill(Slot{}); }

  static constexpr size_t size() noexcept { return N; }

 private:
  struct Slot {
    uint64_t start_tsc = 0;
    uint64_t stop_tsc = 0;
    uint64_t ticks = 0;
    uint64_t count = 0;
  };

  static uint64_t Read() noexcept {
    if constexpr (kRead == TimerRead::kFenced) {
      return ReadTscFencedBegin();
    } else {
      return ReadTsc();
    }
  }

  std::array<Slot, N> slots_;
};

// A stopwatch that knows its frequency.
//
// The constructor is COLD: it probes CPUID, /proc/cpuinfo and sysfs, then runs
// Calibrate(options) — about options.rounds × options.baseline_ms (0.5 s with
// the defaults) of sleeping plus a few µs of reads. Build one at start-up,
// never on a hot path. If calibration fails, ok() is false, status() says why
// and what to do, and frequency_hz() is 0; Create() returns that error
// instead. start()/elapsed_*() are inline, noexcept and syscall-free.
// One thread per object.
class CalibratedTimer {
 public:
  // Probes and calibrates (cold, see above). Any thread; pin it first for a
  // clean calibration.
  explicit CalibratedTimer(const CalibrationOptions& options = {})
      : env_(ProbeTscEnvironment()) {
    if (!env_.has_tsc) {
      status_ = Status(ErrorCode::kFailedPrecondition, "CalibratedTimer: this CPU has no TSC");
      return;
    }
    Result<Calibration> c = Calibrate(options);
    if (c.ok()) {
      calibration_ = *std::move(c);
    } else {
      status_ = c.status();
    }
  }

  // With a frequency the caller already knows (e.g. --tsc-hz): probes the
  // environment but does not calibrate. Cold (a few ms). REQUIRES: tsc_hz > 0.
  explicit CalibratedTimer(double tsc_hz)
      : env_(ProbeTscEnvironment()), calibration_(CalibrationFromHz(tsc_hz)) {}

  // As the first constructor, but returns the calibration error.
  static Result<CalibratedTimer> Create(const CalibrationOptions& options = {}) {
    CalibratedTimer t(options);
    if (!t.ok()) return t.status();
    return t;
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Ticks per second; 0 when calibration failed.
  double frequency_hz() const { return calibration_.tsc_hz; }
  // CPUID.80000007h:EDX[8]: the TSC ticks at a fixed rate (ticks are time).
  bool invariant_tsc() const { return env_.invariant_tsc; }
  // CPUID.80000001h:EDX[27].
  bool has_rdtscp() const { return env_.has_rdtscp; }
  const Calibration& calibration() const { return calibration_; }
  const TscEnvironment& environment() const { return env_; }

  // Starts (or restarts) the stopwatch; returns the TSC read.
  uint64_t start() noexcept {
    start_tsc_ = ReadTsc();
    return start_tsc_;
  }
  // Ticks since start(). REQUIRES: start() was called on this thread's core
  // (or the cores' TSCs are in sync).
  uint64_t elapsed_ticks() const noexcept { return ReadTsc() - start_tsc_; }
  // ns since start(), in doubles; 0 when calibration failed.
  double elapsed_ns() const noexcept {
    return calibration_.TicksToNs(static_cast<double>(elapsed_ticks()));
  }
  // Converts a tick count measured elsewhere.
  double ticks_to_ns(uint64_t ticks) const noexcept {
    return calibration_.TicksToNs(static_cast<double>(ticks));
  }

 private:
  TscEnvironment env_;
  Calibration calibration_;
  Status status_;
  uint64_t start_tsc_ = 0;
};

}  // namespace ticktrace

#endif  // TICKTRACE_TIMER_H_
