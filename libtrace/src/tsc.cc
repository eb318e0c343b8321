// The slow path of rdtscp reads: probing CPUID once, and emulating rdtscp on
// CPUs (or VMs) that do not advertise it, so that a trace call never raises
// an illegal-instruction fault in its host process.

#include "ticktrace/tsc.h"

#include <cpuid.h>
#include <sched.h>

namespace ticktrace {
namespace internal {

constinit std::atomic<uint8_t> g_tscp_mode{kTscpUnprobed};

namespace {

uint8_t ProbeTscpMode() noexcept {
  unsigned int a = 0, b = 0, c = 0, d = 0;
  const bool has_rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && ((d >> 27) & 1u);
  return has_rdtscp ? kTscpNative : kTscpEmulated;
}

}  // namespace

uint64_t ReadTscpSlow(uint32_t* aux, bool fence_after) noexcept {
  uint8_t mode = g_tscp_mode.load(std::memory_order_relaxed);
  if (mode == kTscpUnprobed) {
    mode = ProbeTscpMode();
    // Relaxed: every thread computes the same value; nothing else hangs on it.
    g_tscp_mode.store(mode, std::memory_order_relaxed);
  }
  if (mode == kTscpNative) {
    unsigned int a;
    const uint64_t tsc = __rdtscp(&a);
    if (fence_after) _mm_lfence();
    *aux = a;
    return tsc;
  }
  // rdtscp waits for earlier instructions to finish: lfence does the same.
  _mm_lfence();
  const uint64_t tsc = __rdtsc();
  // glibc's getcpu() goes through the vDSO (RDPID or the per-CPU segment
  // limit): no system call. It reports the same node << 12 | cpu split.
  unsigned int cpu = 0, node = 0;
  if (getcpu(&cpu, &node) != 0) {
    cpu = 0xfff;
    node = 0xfffff;
  }
  if (fence_after) _mm_lfence();
  *aux = (node << 12) | (cpu & 0xfffu);
  return tsc;
}

}  // namespace internal

bool NativeRdtscp() noexcept {
  uint32_t aux;
  (void)ReadTscp(&aux);  // probes if needed
  return internal::g_tscp_mode.load(std::memory_order_relaxed) == internal::kTscpNative;
}

}  // namespace ticktrace
