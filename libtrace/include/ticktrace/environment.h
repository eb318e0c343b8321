// What this machine's TSC can be trusted for: CPUID bits, /proc/cpuinfo flags,
// the kernel's clocksource, a hypervisor, and the counter's resolution and cost.
// Cold path; any thread may call these.

#ifndef TICKTRACE_ENVIRONMENT_H_
#define TICKTRACE_ENVIRONMENT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ticktrace {

// One finding with what it means to a user, e.g.
//   {"hypervisor", "KVM", "running in a VM: TSC offsets and scaling are the hypervisor's; ..."}
struct EnvironmentFinding {
  std::string name;
  std::string value;
  std::string meaning;  // one line, plain language
  bool is_warning = false;
};

struct TscEnvironment {
  bool has_tsc = false;            // CPUID.1:EDX[4]
  bool has_rdtscp = false;         // CPUID.80000001h:EDX[27]
  bool invariant_tsc = false;      // CPUID.80000007h:EDX[8]
  bool constant_tsc = false;       // /proc/cpuinfo flag
  bool nonstop_tsc = false;        // /proc/cpuinfo flag
  std::string clocksource;         // /sys/.../current_clocksource, "" if unreadable
  bool hypervisor = false;         // CPUID.1:ECX[31]
  std::string hypervisor_vendor;   // CPUID 0x40000000 signature, e.g. "KVMKVMKVM"
  std::vector<EnvironmentFinding> findings;  // every item above, explained
};

// The cpus the calling thread may run on (sched_getaffinity), ascending;
// empty if they cannot be read.
std::vector<int> AllowedCpus();

// Probes CPUID, /proc/cpuinfo and sysfs. Never fails: unreadable items are
// reported as findings.
TscEnvironment ProbeTscEnvironment();

// The TSC step: the increment by which the counter really advances, in ticks
// (2 on many Intel parts; about 10 ns worth on AMD Zen, e.g. 21 ticks at
// 2.096 GHz, 24 at 2.445 GHz). Differences near it are quantisation, not
// signal. Takes `reads` reads spaced unevenly (a short busy loop of varying
// length between them) and hands them to EstimateTscStepTicks. 0 if the
// counter never advanced.
uint64_t MeasureTscStepTicks(int reads = 100000);

// The step of a counter from consecutive reads `reads` (oldest first), in
// ticks; 0 if it never advanced. How: a read that returns the previous value
// or the previous value + 1 (AMD returns +1 for a read within the same step)
// is not an advance; each real advance is measured from the value of the
// previous real advance (so the +1s in between do not shorten it); the step
// is the largest g such that at least 90% of those advances are multiples of
// g (searched from the 10th percentile of the advances down to 1). A read
// below its predecessor (a move to a core whose counter lags) restarts the
// measurement. Spacing the reads unevenly matters where a read costs more
// than a step: evenly spaced reads would make the read cost look like a step.
uint64_t EstimateTscStepTicks(const std::vector<uint64_t>& reads);

// The cost of an empty measurement (two back-to-back reads), in ticks: the
// minimum and the median over `tries`, for rdtsc and for the fenced pair.
struct ReadCost {
  uint64_t rdtsc_min_ticks = 0;
  uint64_t rdtsc_median_ticks = 0;
  uint64_t fenced_min_ticks = 0;
  uint64_t fenced_median_ticks = 0;
};
ReadCost MeasureReadCost(int tries = 10000);

}  // namespace ticktrace

#endif  // TICKTRACE_ENVIRONMENT_H_
