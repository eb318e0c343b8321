// How far apart the cores' TSCs are: a cache-line ping-pong between a thread
// pinned to a reference core and one pinned to each other core (DESIGN §4).
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

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

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

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_CORE_SKEW_H_
