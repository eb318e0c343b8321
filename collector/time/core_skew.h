// How far apart the cores' TSCs are: a cache-line ping-pong between a thread
// pinned to a reference core and one pinned to each other core (docs/calibration.md#how-far-apart-the-cores-counters-are-measured-not-assumed).
//
// One round: the reference thread reads t_send, then writes a ping; the other
// thread sees it and reads t_other on its own core, then writes a pong; the
// reference thread sees that and reads t_receive. In true time the other read
// happened between the two reference reads, so the other core's offset (its
// counter minus the reference's) lies in [t_other - t_receive, t_other - t_send].
// Every round gives such an interval; the offset is in all of them, so their
// intersection is the answer: offset = its midpoint, bound = half its width.
// The bound is never smaller than what the cache-line round trips allow; on a
// VM it is typically tens to a hundred ns (a vCPU's counter can also be
// offset by the hypervisor, which is exactly what this measures).
//
// Cold path: the collector runs it at start, off every producer's hot path.

#ifndef TICKTRACE_COLLECTOR_CORE_SKEW_H_
#define TICKTRACE_COLLECTOR_CORE_SKEW_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "collector/app/run_info.h"

namespace ticktrace::collect {

struct PingPongRound {
  uint64_t send_tsc = 0;     // reference core, before the ping
  uint64_t other_tsc = 0;    // other core, after seeing the ping
  uint64_t receive_tsc = 0;  // reference core, after seeing the pong
};

// One core's counter against the reference core's, in ticks.
struct CoreOffset {
  int cpu = 0;
  double offset_ticks = 0;  // this core's TSC minus the reference core's
  double bound_ticks = 0;   // |true offset - offset_ticks| <= bound_ticks
  int rounds = 0;           // rounds the estimate came from
  // False when the rounds' intervals do not intersect: the counters are not
  // a constant offset apart (or the ordering assumption failed). The offset
  // and bound then come from the tightest single round, and are not trusted.
  bool consistent = true;
};

// The offset of core `cpu` from `rounds` (see the file comment).
// REQUIRES: !rounds.empty(); every round has send_tsc <= receive_tsc.
CoreOffset OffsetFromRounds(int cpu, const std::vector<PingPongRound>& rounds);

// Measures every core of `cpus` against cpus[0] (which gets offset 0, bound
// 0) with `rounds` ping-pong rounds each. A core that cannot be pinned to, or
// does not answer within a second, is an error naming it. Call from any
// thread; it starts two threads per core measured, one at a time.
// REQUIRES: !cpus.empty(), rounds > 0.
absl::StatusOr<std::vector<CoreOffset>> MeasureCoreOffsets(const std::vector<int>& cpus,
                                                           int rounds = 2000);

// The cores to measure: "allowed" (the collector's own affinity) or
// "producers" (the union of the affinities of the processes with a segment
// of `session` in /dev/shm; the allowed cores when there is none yet).
// Sorted; the first is the reference.
std::vector<int> CoresToMeasure(std::string_view mode, const std::string& session);

// MeasureCoreOffsets over `cpus`, in ns at `tsc_hz`, stamped `measured_at_utc_ns`.
absl::StatusOr<std::vector<CoreSkew>> MeasureCoreSkew(const std::vector<int>& cpus, double tsc_hz,
                                                      int64_t measured_at_utc_ns);

// Re-measures the cores' offsets every `interval_s` on a thread of its own
// (two more, pinned, only while measuring: ~2000 round trips per core), so
// that the drain path never waits for it. Each measurement becomes a
// RunInfoUpdate chunk the drain thread puts in the stream (TakeChunks).
class SkewMonitor {
 public:
  SkewMonitor(const RunInfo& info, int64_t interval_s);
  ~SkewMonitor();  // stops the thread
  SkewMonitor(const SkewMonitor&) = delete;
  SkewMonitor& operator=(const SkewMonitor&) = delete;

  // Starts the thread (no-op for interval 0). Called once, by the collector's main thread.
  void Start();
  // Drain thread: appends the chunks of the measurements finished since the last call.
  void TakeChunks(std::string* out);

 private:
  void Run();

  const std::string session_;
  const std::string mode_;
  const double tsc_hz_;
  const int64_t interval_s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  bool stop_ = false;
  std::string chunks_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_CORE_SKEW_H_
