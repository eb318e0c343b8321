// TSC reads: the primitives every ticktrace timestamp is built from.
//
// Which read to use:
//   ReadTsc()              plain rdtsc: cheapest (~8-11 ns). The CPU may execute it
//                          before earlier instructions finish, so it can move a few
//                          tens of cycles; fine for stages of hundreds of ns and up.
//   ReadTscp(&aux)         rdtscp: waits for earlier instructions and returns
//                          IA32_TSC_AUX (node << 12 | cpu), so two reads can be checked
//                          for a core change (migration). Later code may still start early.
//                          On a CPU (or VM) whose CPUID does not advertise rdtscp, it is
//                          emulated: lfence; rdtsc, and the core from the vDSO's getcpu —
//                          still no system call, never an illegal instruction.
//   ReadTscFencedBegin()   lfence; rdtsc; lfence: nothing moves across it in either
//                          direction. Use to open a micro-measurement.
//   ReadTscFencedEnd(&aux) rdtscp; lfence: the measured code has finished, and code
//                          after it does not start before the read. Closes one.
//
// All are inline, noexcept and system-call free; any thread may call them.

#ifndef TICKTRACE_TSC_H_
#define TICKTRACE_TSC_H_

#include <x86intrin.h>

#include <atomic>
#include <cstdint>

#include "ticktrace/abi.h"

namespace ticktrace {

inline uint64_t ReadTsc() noexcept { return __rdtsc(); }

namespace internal {

// How ReadTscp() and ReadTscFencedEnd() learn the core. Probed on first use.
enum TscpMode : uint8_t {
  kTscpUnprobed = 0,
  kTscpNative = 1,    // CPUID advertises rdtscp (and Linux programs IA32_TSC_AUX)
  kTscpEmulated = 2,  // no rdtscp: lfence; rdtsc and getcpu()
};
// Written once per process (every writer stores the same value), read relaxed.
extern constinit std::atomic<uint8_t> g_tscp_mode;

// The not-native (or not yet probed) path of ReadTscp / ReadTscFencedEnd.
uint64_t ReadTscpSlow(uint32_t* aux, bool fence_after) noexcept;

}  // namespace internal

inline uint64_t ReadTscp(uint32_t* aux) noexcept {
  if (__builtin_expect(
          internal::g_tscp_mode.load(std::memory_order_relaxed) == internal::kTscpNative, 1)) {
    unsigned int a;
    const uint64_t tsc = __rdtscp(&a);
    *aux = a;
    return tsc;
  }
  return internal::ReadTscpSlow(aux, /*fence_after=*/false);
}

inline uint64_t ReadTscFencedBegin() noexcept {
  _mm_lfence();
  const uint64_t tsc = __rdtsc();
  _mm_lfence();
  return tsc;
}

inline uint64_t ReadTscFencedEnd(uint32_t* aux) noexcept {
  if (__builtin_expect(
          internal::g_tscp_mode.load(std::memory_order_relaxed) == internal::kTscpNative, 1)) {
    unsigned int a;
    const uint64_t tsc = __rdtscp(&a);
    _mm_lfence();
    *aux = a;
    return tsc;
  }
  return internal::ReadTscpSlow(aux, /*fence_after=*/true);
}

// True when ReadTscp() uses the rdtscp instruction; false when it emulates it.
bool NativeRdtscp() noexcept;

// Where a read happened, decoded from rdtscp's aux as Linux programs it.
struct CpuLocation {
  uint32_t cpu;
  uint32_t node;
  friend bool operator==(const CpuLocation&, const CpuLocation&) = default;
};

// REQUIRES: aux != abi::kAuxUnknown.
inline constexpr CpuLocation DecodeAux(uint32_t aux) noexcept {
  return CpuLocation{abi::AuxCpu(aux), abi::AuxNode(aux)};
}

}  // namespace ticktrace

#endif  // TICKTRACE_TSC_H_
