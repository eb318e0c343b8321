// The TSC environment probe: CPUID, /proc/cpuinfo, sysfs, and two small
// measurements of the counter itself. Everything here is cold: it reads files
// and may take a few milliseconds. See ticktrace/environment.h.

#include "ticktrace/environment.h"

#include <cpuid.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "src/text.h"
#include "ticktrace/tsc.h"

namespace ticktrace {
namespace {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf `leaf` (subleaf 0), or false when the CPU does not implement it.
bool Cpuid(uint32_t leaf, CpuidRegs* r) {
  // __get_cpuid_count checks the maximum leaf of the range (basic or extended)
  // first, so an absent leaf is reported instead of returning garbage.
  return __get_cpuid_count(leaf, 0, &r->eax, &r->ebx, &r->ecx, &r->edx) != 0;
}

// Hypervisor leaves (0x40000000+) are outside the ranges __get_cpuid checks;
// CPUID.1:ECX[31] says whether they mean anything.
CpuidRegs RawCpuid(uint32_t leaf) {
  CpuidRegs r;
  __cpuid_count(leaf, 0, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

std::string HypervisorSignature() {
  const CpuidRegs r = RawCpuid(0x40000000);
  char sig[13];
  std::memcpy(sig + 0, &r.ebx, 4);
  std::memcpy(sig + 4, &r.ecx, 4);
  std::memcpy(sig + 8, &r.edx, 4);
  sig[12] = '\0';
  std::string out;
  for (const char c : std::string(sig)) {
    if (c >= 0x20 && c < 0x7f) out.push_back(c);  // printable ASCII
  }
  return std::string(internal::StripWhitespace(out));
}

// A friendlier name for the common signatures.
std::string HypervisorName(const std::string& sig) {
  if (sig == "KVMKVMKVM") return "KVM";
  if (sig == "Microsoft Hv") return "Hyper-V";
  if (sig == "VMwareVMware") return "VMware";
  if (sig == "XenVMMXenVMM") return "Xen";
  if (sig == "TCGTCGTCGTCG") return "QEMU (TCG)";
  if (sig.rfind("bhyve", 0) == 0) return "bhyve";
  if (sig == "ACRNACRNACRN") return "ACRN";
  return sig;
}

// The words of the first "flags" line of /proc/cpuinfo; empty when unreadable.
std::vector<std::string> CpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    return internal::Split(std::string_view(line).substr(colon + 1), ' ', /*skip_empty=*/true);
  }
  return {};
}

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "";
  return std::string(internal::StripWhitespace(line));
}

const char* YesNo(bool b) { return b ? "yes" : "no"; }

void Add(TscEnvironment* env, std::string name, std::string value, std::string meaning,
         bool warning) {
  env->findings.push_back(
      EnvironmentFinding{std::move(name), std::move(value), std::move(meaning), warning});
}

// Where the core of each read comes from. Linux writes IA32_TSC_AUX (node <<
// 12 | cpu) only when the CPU reports rdtscp or rdpid. Without rdtscp,
// libtrace never reads the register: it takes the core from getcpu()
// instead, which is always this machine's.
void AddAuxFinding(TscEnvironment* env) {
  std::string aux_value = env->has_rdtscp ? "rdtscp aux" : "getcpu()";
  std::string aux_meaning =
      env->has_rdtscp
          ? "the core of each read comes with it (aux = node << 12 | cpu): a span whose two "
            "ends differ migrated"
          : "the core of each read comes from getcpu() just after the TSC read: a migration "
            "between the two is possible but rare, so migration flags stay meaningful";
  bool aux_warning = false;
  if (env->has_rdtscp) {
    // Check the claim once on the core we are on. sched_getcpu() comes from
    // the vDSO; both reads happen within a few ns, so a mismatch is rare
    // enough to report.
    uint32_t aux = 0;
    const int before = sched_getcpu();
    ReadTscp(&aux);
    const int after = sched_getcpu();
    if (before == after && before >= 0 && DecodeAux(aux).cpu != static_cast<uint32_t>(before)) {
      aux_value = internal::Cat("aux cpu ", DecodeAux(aux).cpu, " != sched_getcpu() ", before);
      aux_meaning =
          "rdtscp's aux does not match the core the thread runs on: migration flags based on "
          "aux are unreliable";
      aux_warning = true;
    }
  }
  Add(env, "tsc_aux", aux_value, aux_meaning, aux_warning);
}

// Whether there is a counter and how a read learns its core: tsc, rdtscp, tsc_aux.
void AddCounterFindings(TscEnvironment* env) {
  Add(env, "tsc", YesNo(env->has_tsc),
      env->has_tsc ? "the CPU has a time-stamp counter (CPUID.1:EDX[4])"
                   : "no time-stamp counter: ticktrace cannot time anything on this CPU",
      !env->has_tsc);
  Add(env, "rdtscp", env->has_rdtscp ? "yes" : "no (emulated)",
      env->has_rdtscp
          ? "rdtscp is available: stamp_rdtscp and spans record which core each read ran on"
          : "CPUID does not report rdtscp: libtrace emulates it (lfence; rdtsc, then the core "
            "from the vDSO's getcpu), so cores are still recorded, at a few ns more per read",
      false);
  AddAuxFinding(env);
}

// Whether ticks measure time: invariant_tsc, constant_tsc, nonstop_tsc.
// `flags_known`: /proc/cpuinfo's flags were read.
void AddRateFindings(TscEnvironment* env, bool flags_known) {
  Add(env, "invariant_tsc", YesNo(env->invariant_tsc),
      env->invariant_tsc
          ? "the TSC ticks at a fixed rate through frequency changes and sleep states "
            "(CPUID.80000007h:EDX[8]): ticks measure time"
          : "the TSC may slow down or stop with the core's clock: tick counts are not time",
      !env->invariant_tsc);
  Add(env, "constant_tsc", flags_known ? YesNo(env->constant_tsc) : "unknown",
      !flags_known ? "/proc/cpuinfo unreadable"
      : env->constant_tsc
          ? "the kernel sees a TSC rate that does not follow frequency scaling"
          : "the kernel does not trust the TSC's rate to stay fixed under frequency scaling",
      !env->constant_tsc);
  Add(env, "nonstop_tsc", flags_known ? YesNo(env->nonstop_tsc) : "unknown",
      !flags_known       ? "/proc/cpuinfo unreadable"
      : env->nonstop_tsc ? "the TSC keeps counting in deep idle states"
                         : "the TSC may stop in deep idle states: idle gaps would be lost",
      !env->nonstop_tsc);
}

// Who else keeps time on this machine: clocksource, hypervisor.
void AddClockFindings(TscEnvironment* env) {
  if (env->clocksource.empty()) {
    Add(env, "clocksource", "unknown",
        "current_clocksource is unreadable; cannot tell whether the kernel trusts the TSC", true);
  } else if (env->clocksource == "tsc") {
    Add(env, "clocksource", env->clocksource,
        "the kernel trusts the TSC: clock_gettime reads it in user space (~20-30 ns)", false);
  } else {
    Add(env, "clocksource", env->clocksource,
        internal::Cat("the kernel does not use the TSC as its clock (", env->clocksource,
                      "): it may distrust it, clock reads may be slower, and calibration "
                      "against the clock pairs less tightly"),
        true);
  }
  if (env->hypervisor) {
    Add(env, "hypervisor", HypervisorName(env->hypervisor_vendor),
        "running in a VM: the hypervisor sets TSC offsets and scaling, so subtracting TSC "
        "values read on different cores is less trustworthy; prefer same-thread spans",
        true);
  } else {
    Add(env, "hypervisor", "none", "bare metal (no hypervisor bit): the TSC is the hardware's own",
        false);
  }
}

}  // namespace

TscEnvironment ProbeTscEnvironment() {
  TscEnvironment env;
  CpuidRegs r;
  if (Cpuid(1, &r)) {
    env.has_tsc = (r.edx >> 4) & 1;
    env.hypervisor = (r.ecx >> 31) & 1;
  }
  if (Cpuid(0x80000001, &r)) env.has_rdtscp = (r.edx >> 27) & 1;
  if (Cpuid(0x80000007, &r)) env.invariant_tsc = (r.edx >> 8) & 1;
  if (env.hypervisor) env.hypervisor_vendor = HypervisorSignature();

  const std::vector<std::string> flags = CpuinfoFlags();
  const auto has_flag = [&flags](const char* f) {
    return std::find(flags.begin(), flags.end(), f) != flags.end();
  };
  env.constant_tsc = has_flag("constant_tsc");
  env.nonstop_tsc = has_flag("nonstop_tsc");
  env.clocksource =
      ReadFirstLine("/sys/devices/system/clocksource/clocksource0/current_clocksource");

  AddCounterFindings(&env);
  AddRateFindings(&env, !flags.empty());
  AddClockFindings(&env);
  return env;
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

uint64_t EstimateTscStepTicks(const std::vector<uint64_t>& reads) {
  std::vector<uint64_t> advances;  // from one real advance to the next
  advances.reserve(reads.size());
  bool have_base = false;
  uint64_t base = 0;  // the value of the last real advance
  for (size_t i = 1; i < reads.size(); ++i) {
    const uint64_t prev = reads[i - 1], now = reads[i];
    if (now < prev) {  // moved to another core: start over
      have_base = false;
      continue;
    }
    if (now - prev <= 1) continue;  // the same step (equal, or AMD's +1)
    if (have_base) advances.push_back(now - base);
    base = now;
    have_base = true;
  }
  if (advances.empty()) {
    // Never two real advances: the counter moves by 1 or not at all per read.
    for (size_t i = 1; i < reads.size(); ++i) {
      if (reads[i] > reads[i - 1]) return 1;
    }
    return 0;
  }
  std::sort(advances.begin(), advances.end());
  const uint64_t largest_candidate = advances[advances.size() / 10];
  const size_t needed = advances.size() - advances.size() / 10;  // 90%
  for (uint64_t g = largest_candidate; g > 1; --g) {
    size_t multiples = 0;
    for (uint64_t a : advances) multiples += (a % g == 0);
    if (multiples >= needed) return g;
  }
  return 1;
}

uint64_t MeasureTscStepTicks(int reads) {
  if (reads < 2) return 0;
  std::vector<uint64_t> values(static_cast<size_t>(reads));
  uint64_t sink = 1;
  for (int i = 0; i < reads; ++i) {
    // 0..16 rounds of a dependent multiply: a few ns each, so consecutive reads
    // are not a constant read cost apart.
    for (int k = i % 17; k > 0; --k) sink = sink * 6364136223846793005ull + 1;
    asm volatile("" : "+r"(sink));
    values[static_cast<size_t>(i)] = ReadTsc();
  }
  return EstimateTscStepTicks(values);
}

namespace {

// Minimum and median of `v` (modified). REQUIRES: !v.empty().
void MinMedian(std::vector<uint64_t>& v, uint64_t* min, uint64_t* median) {
  std::sort(v.begin(), v.end());
  *min = v.front();
  *median = v[v.size() / 2];
}

}  // namespace

ReadCost MeasureReadCost(int tries) {
  ReadCost cost;
  if (tries <= 0) return cost;
  std::vector<uint64_t> plain;
  std::vector<uint64_t> fenced;
  plain.reserve(tries);
  fenced.reserve(tries);
  for (int i = 0; i < tries; ++i) {
    const uint64_t a = ReadTsc();
    const uint64_t b = ReadTsc();
    if (b >= a) plain.push_back(b - a);
  }
  for (int i = 0; i < tries; ++i) {
    uint32_t aux;
    const uint64_t a = ReadTscFencedBegin();
    // The end read as users write it: rdtscp; lfence (emulated without rdtscp).
    const uint64_t b = ReadTscFencedEnd(&aux);
    if (b >= a) fenced.push_back(b - a);
  }
  if (!plain.empty()) MinMedian(plain, &cost.rdtsc_min_ticks, &cost.rdtsc_median_ticks);
  if (!fenced.empty()) MinMedian(fenced, &cost.fenced_min_ticks, &cost.fenced_median_ticks);
  return cost;
}

}  // namespace ticktrace
