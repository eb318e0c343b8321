// What every pipeline program does around its loop: stop on a signal, pin
// itself to a core, attach to a ticktrace session, know the TSC frequency for
// its busy-wait work, and wait politely on an empty or full queue.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_STAGE_RUNTIME_H_
#define TICKTRACE_EXAMPLES_PIPELINE_STAGE_RUNTIME_H_

#include <sched.h>
#include <x86intrin.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/tsc.h"

namespace ticktrace::examples {

// Exit codes of the pipeline programs (the demo reads them).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitBadFlags = 2;
inline constexpr int kExitStopped = 3;  // a signal stopped the program before its input ended

// Makes SIGINT, SIGTERM and SIGHUP set a flag that StopRequested() reads.
// Call once from main() before starting work.
void InstallStopHandlers();

// True after one of the signals above arrived. Any thread may call it.
bool StopRequested();

// Names the calling thread (and, from the main thread, the process's comm)
// `name`, at most 15 characters: libtrace records it in the segment, and the
// viewer shows "feed" where it would show "ticktrace-examp" for all three
// programs. Call before InitTracing().
void NameThisThread(const char* name);

// Pins the calling thread to `cpu`; a negative cpu does nothing.
absl::Status PinToCpu(int cpu);

// The calling thread's current core (sched_getcpu), for messages.
int CurrentCpu();

// Creates this process's trace segment in `session` (other settings from the
// TICKTRACE_* environment) and attaches the calling thread, the one that
// traces. REQUIRES: no trace call happened yet.
absl::Status InitTracing(const std::string& session);

// The default session for a program: $TICKTRACE_SESSION, else "default".
std::string DefaultSession();

// The TSC frequency to convert work_ns into ticks: `given_hz` when positive,
// else ticktrace::Calibrate() (about half a second).
absl::StatusOr<double> ResolveTscHz(double given_hz);

// A known amount of CPU work: spins on the TSC for work_ns. Used for each
// stage's "decode", "decide" and "send" so that the expected breakdown is known.
class BusyWork {
 public:
  BusyWork(double tsc_hz, uint64_t work_ns)
      : ticks_(static_cast<uint64_t>(std::llround(static_cast<double>(work_ns) * tsc_hz / 1e9))) {}

  // Spins until ticks_ TSC ticks have passed since the call. No pause: this is
  // the work itself, and a pause would overshoot by tens of ns.
  void Run() const noexcept {
    if (ticks_ == 0) return;
    const uint64_t start = ReadTsc();
    while (ReadTsc() - start < ticks_) {
    }
  }
  uint64_t ticks() const { return ticks_; }

 private:
  uint64_t ticks_;
};

// How a queue end waits for its peer: spin with pause (the lowest hand-off
// latency), and offer the core to others (sched_yield) every 65536 idle polls
// (a few ms), so that a peer pinned to the same core is never starved for
// long. Yielding more often costs whole scheduler slices on a busy machine:
// each yield lets every other runnable task go first. Reset() after each
// successful poll.
class IdleWaiter {
 public:
  void Idle() noexcept {
    ++idle_polls_;
    if ((idle_polls_ & 0xffff) == 0) {
      sched_yield();
    } else {
      _mm_pause();
    }
  }
  void Reset() noexcept { idle_polls_ = 0; }
  // True every 4096 idle polls (~ a few ms): time for a slow check such as
  // "is my peer still alive?".
  bool TimeForSlowCheck() const noexcept { return idle_polls_ != 0 && (idle_polls_ & 4095) == 0; }

 private:
  uint64_t idle_polls_ = 0;
};

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_STAGE_RUNTIME_H_
