// Test-only: the kernel's view of the CPU, read independently of libtrace's
// own CPUID probe, so tests can check one against the other.

#ifndef TICKTRACE_TESTS_LIBTRACE_CPUINFO_UTIL_H_
#define TICKTRACE_TESTS_LIBTRACE_CPUINFO_UTIL_H_

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace ticktrace::testing {

// The words of the first "flags" line of /proc/cpuinfo; empty if unreadable.
inline std::set<std::string> CpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_LIBTRACE_CPUINFO_UTIL_H_
