// rdtscp's aux names the core: pinned to each allowed CPU in turn, the decoded
// cpu is the one we pinned to and the one sched_getcpu() reports.

#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/abi.h"
#include "ticktrace/environment.h"
#include "ticktrace/tsc.h"

namespace ticktrace {
namespace {

TEST(AuxTest, DecodeSplitsNodeAndCpu) {
  EXPECT_EQ(DecodeAux(0), (CpuLocation{0, 0}));
  EXPECT_EQ(DecodeAux(5), (CpuLocation{5, 0}));
  EXPECT_EQ(DecodeAux((1u << 12) | 7), (CpuLocation{7, 1}));
  EXPECT_EQ(DecodeAux((3u << 12) | 0xfff), (CpuLocation{0xfff, 3}));
}

TEST(AuxTest, DecodedCpuIsThePinnedCpu) {
  // Where CPUID reports no rdtscp, Linux does not program IA32_TSC_AUX and
  // ReadTscp emulates the instruction with getcpu(): the aux still names the core.
  const TscEnvironment env = ProbeTscEnvironment();
  EXPECT_EQ(NativeRdtscp(), env.has_rdtscp);
  std::printf("rdtscp: %s\n", NativeRdtscp() ? "native" : "emulated (lfence; rdtsc + getcpu)");
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  ASSERT_FALSE(cpus.empty());
  for (const int cpu : cpus) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0) << "cpu " << cpu;
    uint32_t aux = 0;
    ReadTscp(&aux);
    ASSERT_NE(aux, abi::kAuxUnknown);
    EXPECT_EQ(DecodeAux(aux).cpu, static_cast<uint32_t>(cpu)) << "aux " << aux;
    EXPECT_EQ(sched_getcpu(), cpu);
    uint32_t aux_fenced = 0;
    ReadTscFencedEnd(&aux_fenced);
    EXPECT_EQ(aux_fenced, aux) << "cpu " << cpu;
  }
  sched_setaffinity(0, sizeof(allowed), &allowed);
}

}  // namespace
}  // namespace ticktrace
