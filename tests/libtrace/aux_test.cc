// rdtscp's aux names the core: pinned to each allowed CPU in turn, the decoded
// cpu is the one we pinned to and the one the getcpu system call reports, and
// the node is getcpu's node. Whether rdtscp is native is checked against the
// kernel's /proc/cpuinfo flags.

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cpuinfo_util.h"
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

using testing::CpuinfoFlags;

TEST(AuxTest, NativeRdtscpAgreesWithTheKernel) {
  const std::set<std::string> flags = CpuinfoFlags();
  ASSERT_FALSE(flags.empty()) << "/proc/cpuinfo has no flags line";
  ASSERT_TRUE(flags.count("tsc")) << "ticktrace's tests need a TSC";
  EXPECT_EQ(NativeRdtscp(), flags.count("rdtscp") == 1);
  EXPECT_EQ(ProbeTscEnvironment().has_rdtscp, flags.count("rdtscp") == 1);
}

TEST(AuxTest, DecodedCpuIsThePinnedCpu) {
  // Where CPUID reports no rdtscp, Linux does not program IA32_TSC_AUX and
  // ReadTscp emulates the instruction with getcpu(): the aux still names the core.
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
    // The kernel's answer, through the getcpu system call (not the vDSO that
    // the emulation may use): the same cpu, and the same NUMA node.
    unsigned kernel_cpu = 0, kernel_node = 0;
    ASSERT_EQ(::syscall(SYS_getcpu, &kernel_cpu, &kernel_node, nullptr), 0);
    EXPECT_EQ(kernel_cpu, static_cast<unsigned>(cpu));
    EXPECT_EQ(DecodeAux(aux).node, kernel_node) << "aux " << aux;
    uint32_t aux_fenced = 0;
    ReadTscFencedEnd(&aux_fenced);
    EXPECT_EQ(DecodeAux(aux_fenced).cpu, static_cast<uint32_t>(cpu)) << "aux " << aux_fenced;
    EXPECT_EQ(DecodeAux(aux_fenced).node, kernel_node) << "aux " << aux_fenced;
  }
  sched_setaffinity(0, sizeof(allowed), &allowed);
}

}  // namespace
}  // namespace ticktrace
