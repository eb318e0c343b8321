// The start-up steps the benchmark programs share (bench/*_bench.cc,
// bench/*_benchmark.cc): header-only, included by the programs in this folder
// only. Each step prints what went wrong to stderr and returns false (or
// nullopt), so that main() can `return 1`.
//
//   InitTracing(who, session, ring_records, rings)  ticktrace::Init
//   CalibrateOrSay()                                ticktrace::Calibrate
//   MakeTmpdirUnlessGiven(templ, &dir, &own)        mkdtemp when --tmpdir was not given
//   MakeTmpdirOrSubdir(templ, sub, &dir, &own)      the same, or a subdirectory of --tmpdir
//   CollectorFound(path)                            says "skipped" when the binary is missing
//
// Main-thread only, before the measured part starts.

#ifndef TICKTRACE_BENCH_BENCH_SETUP_H_
#define TICKTRACE_BENCH_BENCH_SETUP_H_

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "ticktrace/calibration.h"
#include "ticktrace/trace.h"

namespace ticktrace::bench {

// ticktrace::Init for `session` with `rings` rings of `ring_records` records;
// a failure prints "<who>: <message>".
inline bool InitTracing(const char* who, const std::string& session, uint32_t ring_records,
                        uint32_t rings) {
  ticktrace::Options options;
  options.session = session;
  options.ring_records = ring_records;
  options.rings = rings;
  if (ticktrace::Status st = ticktrace::Init(options); !st.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(st.message()).c_str());
    return false;
  }
  return true;
}

// The TSC calibrated; a failure prints "calibration: <message>" and is nullopt.
inline std::optional<ticktrace::Calibration> CalibrateOrSay() {
  ticktrace::Result<ticktrace::Calibration> cal = ticktrace::Calibrate();
  if (!cal.ok()) {
    std::fprintf(stderr, "calibration: %s\n", std::string(cal.status().message()).c_str());
    return std::nullopt;
  }
  return *std::move(cal);
}

// When `dir` is empty (no --tmpdir), makes a fresh directory from `templ`
// ("/tmp/name-XXXXXX"), stores it in `dir` and sets `own` (the program removes
// it at the end); a given `dir` is kept and `own` left false.
inline bool MakeTmpdirUnlessGiven(const char* templ, std::string* dir, bool* own) {
  *own = false;
  if (!dir->empty()) return true;
  std::string path = templ;
  if (mkdtemp(path.data()) == nullptr) {
    std::perror("mkdtemp");
    return false;
  }
  *dir = path;
  *own = true;
  return true;
}

// As MakeTmpdirUnlessGiven, but a given `dir` gets the subdirectory `sub`
// (made when missing), so that several programs can share one --tmpdir.
inline bool MakeTmpdirOrSubdir(const char* templ, const char* sub, std::string* dir, bool* own) {
  if (dir->empty()) return MakeTmpdirUnlessGiven(templ, dir, own);
  *own = false;
  *dir += "/";
  *dir += sub;
  if (mkdir(dir->c_str(), 0700) != 0 && errno != EEXIST) {
    std::perror(dir->c_str());
    return false;
  }
  return true;
}

// True when `collector` is an executable; otherwise prints the "skipped" line
// that bench/run_all.sh shows for the program.
inline bool CollectorFound(const std::string& collector) {
  if (!collector.empty() && access(collector.c_str(), X_OK) == 0) return true;
  std::printf("skipped: the ticktrace-collector binary was not found\n\n");
  return false;
}

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_BENCH_SETUP_H_
