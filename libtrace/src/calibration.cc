// TSC frequency: CPUID 0x15 when complete, otherwise self-calibration against
// CLOCK_MONOTONIC_RAW. See ticktrace/calibration.h for the contract and
// docs/calibration.md for the reasoning.

#include "ticktrace/calibration.h"

#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <sys/klog.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "src/text.h"
#include "ticktrace/internal/calibration_sources.h"
#include "ticktrace/tsc.h"

namespace ticktrace {
namespace {

constexpr char kSelfSource[] = "self-calibrated (CLOCK_MONOTONIC_RAW)";
constexpr char kCpuidSource[] = "cpuid-0x15";
constexpr char kAdvice[] =
    "pin the calibrating thread to one core (e.g. run it under `taskset -c 2`), or pass the "
    "TSC frequency explicitly (--tsc-hz)";

// The syslog(2) actions klogctl takes (sys/klog.h gives no names).
constexpr int kSyslogActionReadAll = 3;
constexpr int kSyslogActionSizeBuffer = 10;

bool CpuHasRdtscp() {
  unsigned int a, b, c, d;
  return __get_cpuid(0x80000001, &a, &b, &c, &d) && ((d >> 27) & 1);
}

int64_t TimespecNs(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One end of the baseline: the clock read and the TSC at the midpoint of the
// tightest sandwich around it.
struct BaselineEnd {
  uint64_t tsc_mid = 0;
  int64_t clock_ns = 0;
  uint64_t width_ticks = 0;
};

// Takes `tries` chained sandwiches  tsc[i] | clock[i] | tsc[i+1]  and keeps the
// narrowest: its clock read happened somewhere between its two TSC reads, so
// the midpoint is off by at most half the width. `*moved` is set when the
// reads did not all run in one place; `*where` gets the place.
Status ReadBaselineEnd(const internal::CalibrationSources& s, int tries, BaselineEnd* out,
                       uint32_t* where, bool* moved) {
  uint32_t w = 0;
  uint64_t prev_tsc = s.read_tsc(&w);
  if (*where == abi::kAuxUnknown) *where = w;
  if (w != *where) *moved = true;
  bool have = false;
  for (int i = 0; i < tries; ++i) {
    int64_t clock_ns = 0;
    if (!s.read_clock_ns(&clock_ns)) {
      return Status(ErrorCode::kFailedPrecondition,
                    internal::Cat("TSC calibration: clock_gettime(CLOCK_MONOTONIC_RAW) failed (",
                                  std::strerror(errno),
                                  "); no reference clock to calibrate against: ", kAdvice));
    }
    const uint64_t tsc = s.read_tsc(&w);
    if (w != *where) *moved = true;
    // A backwards pair means the two reads were on cores with different
    // offsets; it is no sandwich at all.
    if (tsc >= prev_tsc) {
      const uint64_t width = tsc - prev_tsc;
      if (!have || width < out->width_ticks) {
        out->width_ticks = width;
        out->tsc_mid = prev_tsc + width / 2;
        out->clock_ns = clock_ns;
        have = true;
      }
    } else {
      *moved = true;
    }
    prev_tsc = tsc;
  }
  if (!have) *moved = true;
  return Status();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Status ValidateOptions(const CalibrationOptions& o) {
  if (o.baseline_ms <= 0 || o.rounds <= 0 || o.max_retries < 0 || o.sandwich_tries <= 0) {
    return Status(
        ErrorCode::kInvalidArgument,
        internal::Cat(
            "TSC calibration options: need baseline_ms > 0, rounds > 0, max_retries >= 0, "
            "sandwich_tries > 0; got baseline_ms=",
            o.baseline_ms, " rounds=", o.rounds, " max_retries=", o.max_retries,
            " sandwich_tries=", o.sandwich_tries));
  }
  return Status();
}

// Fills the parts every Calibration carries whatever its source.
void FillKernelAndAnchor(Calibration* c, int anchor_tries) {
  std::string where;
  Result<double> kernel = ReadKernelTscHz(&where);
  if (kernel.ok()) {
    c->kernel_tsc_hz = *kernel;
    c->kernel_source = where;
  } else {
    c->kernel_tsc_hz = 0;
    c->kernel_source = internal::Cat("not readable: ", kernel.status().message());
  }
  ReadTscRealtimeAnchor(&c->anchor_tsc, &c->anchor_realtime_ns, anchor_tries);
}

// The whole file, or its last `max_bytes` when it is larger; "" when unreadable.
std::string ReadFileTail(const char* path, std::streamoff max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";
  const std::streamoff start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(start);
  std::string data(static_cast<size_t>(size - start), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

// The number right after `prefix` in `line` and before `suffix`, in Hz.
bool ParseMhzAfter(std::string_view line, std::string_view prefix, std::string_view suffix,
                   double* hz) {
  const size_t p = line.find(prefix);
  if (p == std::string_view::npos) return false;
  std::string_view rest = line.substr(p + prefix.size());
  const size_t q = rest.find(suffix);
  if (q == std::string_view::npos) return false;
  double mhz = 0;
  if (!internal::ParseDouble(rest.substr(0, q), &mhz) || !(mhz > 0) || !std::isfinite(mhz)) {
    return false;
  }
  *hz = mhz * 1e6;
  return true;
}

}  // namespace

namespace internal {

CalibrationSources RealCalibrationSources() {
  CalibrationSources s;
  s.cpuid_15 = [](uint32_t* eax, uint32_t* ebx, uint32_t* ecx) {
    unsigned int a = 0, b = 0, c = 0, d = 0;
    // __get_cpuid checks the maximum basic leaf first: most AMD CPUs (and
    // many VMs) stop below 0x15.
    if (!__get_cpuid(0x15, &a, &b, &c, &d)) return false;
    *eax = a;
    *ebx = b;
    *ecx = c;
    return true;
  };
  if (CpuHasRdtscp()) {
    // rdtscp waits for earlier instructions (the clock read before it); the
    // lfence after it keeps the next clock read from starting early.
    s.read_tsc = [](uint32_t* where) { return ReadTscFencedEnd(where); };
  } else {
    // No rdtscp: fence the plain read on both sides, and take the core from
    // the vDSO's getcpu. The extra call sits inside the begin sandwiches and
    // outside the end ones equally at both baseline ends, so it cancels.
    s.read_tsc = [](uint32_t* where) {
      const uint64_t tsc = ReadTscFencedBegin();
      *where = static_cast<uint32_t>(sched_getcpu());
      return tsc;
    };
  }
  s.read_clock_ns = [](int64_t* ns) {
    timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0) return false;
    *ns = TimespecNs(ts);
    return true;
  };
  s.sleep_ns = [](int64_t ns) {
    // clock_nanosleep does not take CLOCK_MONOTONIC_RAW; the length of the
    // wait only needs to be roughly right, the clock reads measure it.
    timespec req{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    timespec rem{};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem) == EINTR) req = rem;
  };
  return s;
}

Result<Calibration> CalibrateWithSources(const CalibrationOptions& options,
                                         const CalibrationSources& sources) {
  if (Status st = ValidateOptions(options); !st.ok()) return st;
  Calibration c;

  uint32_t eax = 0, ebx = 0, ecx = 0;
  if (options.allow_cpuid && sources.cpuid_15(&eax, &ebx, &ecx) && eax != 0 && ebx != 0 &&
      ecx != 0) {
    // TSC = crystal (ecx, Hz) * ebx / eax. Only when all three are reported:
    // a zero crystal frequency means "not enumerated", not "0 Hz".
    c.tsc_hz = static_cast<double>(ecx) * static_cast<double>(ebx) / static_cast<double>(eax);
    c.ns_per_tick = 1e9 / c.tsc_hz;
    c.source = kCpuidSource;
    FillKernelAndAnchor(&c, options.sandwich_tries);
    return c;
  }

  std::vector<double> hz;
  hz.reserve(options.rounds);
  int discarded = 0;
  const int max_attempts = options.rounds + options.max_retries;
  const int64_t baseline_ns = int64_t{options.baseline_ms} * 1'000'000;
  for (int attempt = 0; attempt < max_attempts && static_cast<int>(hz.size()) < options.rounds;
       ++attempt) {
    uint32_t where = abi::kAuxUnknown;
    bool moved = false;
    BaselineEnd begin, end;
    if (Status st = ReadBaselineEnd(sources, options.sandwich_tries, &begin, &where, &moved);
        !st.ok()) {
      return st;
    }
    sources.sleep_ns(baseline_ns);
    if (Status st = ReadBaselineEnd(sources, options.sandwich_tries, &end, &where, &moved);
        !st.ok()) {
      return st;
    }
    const int64_t clock_ns = end.clock_ns - begin.clock_ns;
    if (moved || end.tsc_mid <= begin.tsc_mid || clock_ns <= 0) {
      // The thread changed cores (or the counter went backwards, which only
      // happens across cores): this round's ticks may mix two counters.
      ++discarded;
      continue;
    }
    hz.push_back(static_cast<double>(end.tsc_mid - begin.tsc_mid) * 1e9 /
                 static_cast<double>(clock_ns));
  }

  if (static_cast<int>(hz.size()) < options.rounds) {
    return Status(
        ErrorCode::kFailedPrecondition,
        internal::Cat(
            "TSC calibration failed: ", discarded, " of ", discarded + hz.size(),
            " rounds were discarded because the thread changed cores (or the TSC went backwards) "
            "during the round, more than the ",
            options.max_retries,
            " retries allowed; CPUID leaf 0x15 does not report the frequency; ", kAdvice));
  }

  const double median = Median(hz);
  const auto [lo, hi] = std::minmax_element(hz.begin(), hz.end());
  c.tsc_hz = median;
  c.ns_per_tick = 1e9 / median;
  c.source = kSelfSource;
  c.rounds_used = static_cast<int>(hz.size());
  c.rounds_discarded = discarded;
  c.spread_ppm = (*hi - *lo) / median * 1e6;
  FillKernelAndAnchor(&c, options.sandwich_tries);
  return c;
}

Result<double> ParseKernelLogTscHz(std::string_view log, std::string* line_out) {
  const std::vector<std::string> lines = internal::Split(log, '\n');
  // The kernel prints "Detected ... MHz processor" once per boot; a file such
  // as kern.log holds several boots, and only the last one describes this one.
  size_t boot_start = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("tsc: Detected ") != std::string_view::npos &&
        lines[i].find(" MHz processor") != std::string_view::npos) {
      boot_start = i;
    }
  }
  double refined = 0, detected_tsc = 0, detected_cpu = 0;
  std::string_view refined_line, tsc_line, cpu_line;
  for (size_t i = boot_start; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    double hz = 0;
    if (ParseMhzAfter(l, "tsc: Refined TSC clocksource calibration: ", " MHz", &hz)) {
      refined = hz;
      refined_line = l;
    } else if (ParseMhzAfter(l, "tsc: Detected ", " MHz TSC", &hz)) {
      detected_tsc = hz;
      tsc_line = l;
    } else if (ParseMhzAfter(l, "tsc: Detected ", " MHz processor", &hz)) {
      detected_cpu = hz;
      cpu_line = l;
    }
  }
  // Refined is measured against a stable clock late in boot; "MHz TSC" is
  // printed when the TSC runs at a rate other than the processor's, so it
  // beats the processor figure.
  double hz = 0;
  std::string_view used;
  if (refined > 0) {
    hz = refined, used = refined_line;
  } else if (detected_tsc > 0) {
    hz = detected_tsc, used = tsc_line;
  } else if (detected_cpu > 0) {
    hz = detected_cpu, used = cpu_line;
  } else {
    return Status(ErrorCode::kNotFound, "no \"tsc: ... MHz\" line in the kernel log");
  }
  if (line_out != nullptr) {
    // Drop the "<6>" log level klogctl prefixes; keep the timestamp.
    if (used.starts_with("<")) {
      const size_t close = used.find('>');
      if (close != std::string_view::npos && close < 4) used.remove_prefix(close + 1);
    }
    if (used.ends_with("\r")) used.remove_suffix(1);
    *line_out = std::string(internal::StripWhitespace(used));
  }
  return hz;
}

}  // namespace internal

Result<Calibration> Calibrate(const CalibrationOptions& options) {
  return internal::CalibrateWithSources(options, internal::RealCalibrationSources());
}

Calibration CalibrationFromHz(double tsc_hz) {
  Calibration c;
  c.tsc_hz = tsc_hz;
  c.ns_per_tick = tsc_hz > 0 ? 1e9 / tsc_hz : 0;
  c.source = "given";
  FillKernelAndAnchor(&c, 7);
  return c;
}

Result<double> ReadKernelTscHz(std::string* where) {
  std::vector<std::string> tried;

  // 1. sysfs, on kernels that export it.
  constexpr char kSysfs[] = "/sys/devices/system/cpu/cpu0/tsc_freq_khz";
  {
    std::ifstream in(kSysfs);
    std::string text;
    double khz = 0;
    if (in && std::getline(in, text) &&
        internal::ParseDouble(internal::StripWhitespace(text), &khz) && khz > 0) {
      if (where != nullptr) *where = kSysfs;
      return khz * 1e3;
    }
    tried.push_back(internal::Cat(kSysfs, " absent"));
  }

  // 2. The kernel's ring buffer, what dmesg prints. klogctl reads it directly:
  // no child process, and it returns at once (EPERM when dmesg_restrict
  // forbids it) instead of waiting for new messages.
  {
    const int size = klogctl(kSyslogActionSizeBuffer, nullptr, 0);
    if (size > 0) {
      std::string buf(static_cast<size_t>(size), '\0');
      const int n = klogctl(kSyslogActionReadAll, buf.data(), size);
      if (n > 0) {
        buf.resize(static_cast<size_t>(n));
        std::string line;
        Result<double> hz = internal::ParseKernelLogTscHz(buf, &line);
        if (hz.ok()) {
          if (where != nullptr) *where = internal::Cat("kernel log (dmesg): \"", line, "\"");
          return hz;
        }
        tried.push_back("kernel log has no tsc line (rotated out?)");
      } else {
        tried.push_back(internal::Cat("kernel log: ", std::strerror(errno)));
      }
    } else {
      tried.push_back(internal::Cat("kernel log: ", std::strerror(errno),
                                    errno == EPERM ? " (dmesg_restrict?)" : ""));
    }
  }

  // 3. A syslog daemon's copy.
  constexpr char kKernLog[] = "/var/log/kern.log";
  {
    const std::string text = ReadFileTail(kKernLog, std::streamoff{16} << 20);
    if (!text.empty()) {
      std::string line;
      Result<double> hz = internal::ParseKernelLogTscHz(text, &line);
      if (hz.ok()) {
        if (where != nullptr) *where = internal::Cat(kKernLog, ": \"", line, "\"");
        return hz;
      }
      tried.push_back(internal::Cat(kKernLog, " has no tsc line"));
    } else {
      tried.push_back(internal::Cat(kKernLog, " unreadable"));
    }
  }
  return Status(ErrorCode::kNotFound,
                internal::Cat("kernel TSC frequency not found: ", internal::Join(tried, "; ")));
}

void ReadTscRealtimeAnchor(uint64_t* tsc, int64_t* realtime_ns, int tries) {
  if (tries < 1) tries = 1;
  uint64_t best_width = UINT64_MAX;
  uint64_t prev = ReadTscFencedBegin();
  *tsc = prev;
  *realtime_ns = 0;
  for (int i = 0; i < tries; ++i) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    // lfence; rdtsc; lfence: the read waits for the clock read to finish and
    // the next clock read cannot start before it.
    const uint64_t now = ReadTscFencedBegin();
    if (now >= prev && now - prev < best_width) {
      best_width = now - prev;
      *tsc = prev + best_width / 2;
      *realtime_ns = TimespecNs(ts);
    }
    prev = now;
  }
  if (*realtime_ns == 0) {
    // Every pair went backwards (the thread moved mid-read): use the last.
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *tsc = ReadTscFencedBegin();
    *realtime_ns = TimespecNs(ts);
  }
}

int64_t Calibration::TscToUtcNs(uint64_t tsc) const {
  // Signed: a TSC value read before the anchor maps to an earlier time.
  const auto ticks = static_cast<int64_t>(tsc - anchor_tsc);
  return anchor_realtime_ns + std::llround(static_cast<double>(ticks) * ns_per_tick);
}

std::string Calibration::Report() const {
  std::string out = internal::Format("TSC frequency %.6f MHz (%.3f ns per tick), source: %s",
                                     tsc_hz / 1e6, ns_per_tick, source.c_str());
  if (source == kSelfSource) {
    out += internal::Format(
        "; %d rounds used, %d discarded because the thread changed cores; "
        "spread between rounds %.2f ppm",
        rounds_used, rounds_discarded, spread_ppm);
  }
  out += ".";
  if (kernel_tsc_hz > 0) {
    out += internal::Format(" Kernel's value: %.3f MHz from %s", kernel_tsc_hz / 1e6,
                            kernel_source.c_str());
    if (tsc_hz > 0) {
      out += internal::Format(" (ours differs by %+.1f ppm)",
                              (tsc_hz - kernel_tsc_hz) / kernel_tsc_hz * 1e6);
    }
    out += ".";
  } else {
    out += internal::Cat(
        " Kernel's value: ", kernel_source.empty() ? std::string("not read") : kernel_source, ".");
  }
  return out;
}

}  // namespace ticktrace
