// Core offsets from ping-pong rounds: the interval arithmetic by hand, and a
// real measurement between this machine's cores checked against the test's
// own rounds (rdtscp-based, a different reading from the library's).

#include "collector/time/core_skew.h"

#include <sched.h>
#include <x86intrin.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/environment.h"

namespace ticktrace::collect {
namespace {

// A round in which the other core's counter is `offset` ahead, its read comes
// `a` ticks after the send and the receive `b` ticks after that.
PingPongRound Round(uint64_t send, int64_t offset, uint64_t a, uint64_t b) {
  return PingPongRound{send, send + a + static_cast<uint64_t>(offset), send + a + b};
}

TEST(CoreSkew, IntersectionOfTheRoundsIntervals) {
  // Intervals [offset - b, offset + a] for offset 500: [400, 600], [300, 530],
  // [480, 650]. Intersection [480, 530]: offset 505, bound 25.
  const std::vector<PingPongRound> rounds = {Round(1'000'000, 500, 100, 100),
                                             Round(2'000'000, 500, 30, 200),
                                             Round(3'000'000, 500, 150, 20)};
  const CoreOffset c = OffsetFromRounds(3, rounds);
  EXPECT_EQ(c.cpu, 3);
  EXPECT_EQ(c.rounds, 3);
  EXPECT_TRUE(c.consistent);
  EXPECT_DOUBLE_EQ(c.offset_ticks, 505);
  EXPECT_DOUBLE_EQ(c.bound_ticks, 25);
}

TEST(CoreSkew, NegativeOffsets) {
  // Offset -700: intervals [-700 - 60, -700 + 40] and [-700 - 10, -700 + 90]
  // -> [-710, -660]: offset -685, bound 25.
  const std::vector<PingPongRound> rounds = {Round(5'000'000, -700, 40, 60),
                                             Round(6'000'000, -700, 90, 10)};
  const CoreOffset c = OffsetFromRounds(1, rounds);
  EXPECT_TRUE(c.consistent);
  EXPECT_DOUBLE_EQ(c.offset_ticks, -685);
  EXPECT_DOUBLE_EQ(c.bound_ticks, 25);
}

TEST(CoreSkew, DisjointIntervalsAreInconsistent) {
  // Offsets 0 and then 1000 (the counter jumped): [-50, 50] and [950, 1050].
  // Tightest round (both have a round trip of 100): the first; offset 0 from
  // it, bound its half round trip 50.
  const std::vector<PingPongRound> rounds = {Round(1'000'000, 0, 50, 50),
                                             Round(2'000'000, 1000, 50, 50)};
  const CoreOffset c = OffsetFromRounds(2, rounds);
  EXPECT_FALSE(c.consistent);
  EXPECT_DOUBLE_EQ(c.offset_ticks, 0);
  EXPECT_DOUBLE_EQ(c.bound_ticks, 50);
}

// The test's own rounds between cpus `ref` and `other`, read with rdtscp.
std::vector<PingPongRound> OwnRounds(int ref, int other, int n) {
  std::vector<PingPongRound> out(static_cast<size_t>(n));
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<int> pong{0};
  alignas(64) std::atomic<uint64_t> other_tsc{0};
  auto pin = [](int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof(s), &s) == 0;
  };
  std::thread o([&] {
    if (!pin(other)) return;
    for (int i = 1; i <= n; ++i) {
      while (ping.load(std::memory_order_acquire) != i) _mm_pause();
      unsigned aux;
      other_tsc.store(__rdtscp(&aux), std::memory_order_relaxed);
      pong.store(i, std::memory_order_release);
    }
  });
  std::thread r([&] {
    if (!pin(ref)) return;
    for (int i = 1; i <= n; ++i) {
      unsigned aux;
      out[i - 1].send_tsc = __rdtscp(&aux);
      _mm_lfence();
      ping.store(i, std::memory_order_release);
      while (pong.load(std::memory_order_acquire) != i) _mm_pause();
      out[i - 1].receive_tsc = __rdtscp(&aux);
      out[i - 1].other_tsc = other_tsc.load(std::memory_order_relaxed);
    }
  });
  r.join();
  o.join();
  return out;
}

TEST(CoreSkew, ThisMachinesCoresAgreeWithAnIndependentPingPong) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_GE(cpus.size(), 2u) << "needs two cpus";
  absl::StatusOr<std::vector<CoreOffset>> offsets = MeasureCoreOffsets(cpus);
  ASSERT_TRUE(offsets.ok()) << offsets.status();
  ASSERT_EQ(offsets->size(), cpus.size());
  EXPECT_EQ((*offsets)[0].cpu, cpus[0]);
  EXPECT_EQ((*offsets)[0].offset_ticks, 0);
  EXPECT_EQ((*offsets)[0].bound_ticks, 0);
  for (size_t i = 1; i < cpus.size(); ++i) {
    const CoreOffset& c = (*offsets)[i];
    std::printf("cpu %d vs cpu %d: offset %+.0f ticks, bound %.0f ticks, %s\n", c.cpu, cpus[0],
                c.offset_ticks, c.bound_ticks, c.consistent ? "consistent" : "INCONSISTENT");
    EXPECT_EQ(c.cpu, cpus[i]);
    EXPECT_TRUE(c.consistent);
    EXPECT_GE(c.bound_ticks, 0);
    EXPECT_TRUE(std::isfinite(c.offset_ticks));
    // The test's own rounds: the true offset is in every one of their
    // intervals, and in [offset - bound, offset + bound]: they must overlap.
    const CoreOffset own = OffsetFromRounds(c.cpu, OwnRounds(cpus[0], c.cpu, 2000));
    ASSERT_TRUE(own.consistent);
    EXPECT_LE(std::fabs(own.offset_ticks - c.offset_ticks), own.bound_ticks + c.bound_ticks)
        << "own " << own.offset_ticks << " +- " << own.bound_ticks;
  }
}

}  // namespace
}  // namespace ticktrace::collect
