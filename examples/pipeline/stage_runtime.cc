#include "stage_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ticktrace/absl_status.h"
#include "ticktrace/calibration.h"
#include "ticktrace/trace.h"

namespace ticktrace::examples {
namespace {

std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void OnStopSignal(int /*signo*/) {
  // Relaxed: a lone flag; the loops poll it and publish nothing through it.
  g_stop_requested.store(true, std::memory_order_relaxed);
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
}

bool StopRequested() { return g_stop_requested.load(std::memory_order_relaxed); }

void NameThisThread(const char* name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

absl::Status PinToCpu(int cpu) {
  if (cpu < 0) return absl::OkStatus();
  if (cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(absl::StrCat("--pin ", cpu, ": no such cpu"));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pin ", cpu, ": cannot pin to that cpu: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

int CurrentCpu() { return sched_getcpu(); }

absl::Status InitTracing(const std::string& session) {
  Result<Options> options = Options::FromEnvironment();
  if (!options.ok()) return ToAbslStatus(options.status());
  options->session = session;
  if (Status s = options->Validate(); !s.ok()) return ToAbslStatus(s);
  if (Status s = Init(*options); !s.ok()) return ToAbslStatus(s);
  // Each stage traces from this one thread: its ring is claimed here, before
  // the first order, so that order's stages do not hold the one-time attach.
  return ToAbslStatus(AttachThisThread());
}

std::string DefaultSession() {
  const char* env = std::getenv("TICKTRACE_SESSION");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("default");
}

absl::StatusOr<double> ResolveTscHz(double given_hz) {
  if (given_hz > 0) return given_hz;
  Result<Calibration> calibration = Calibrate();
  if (!calibration.ok()) return ToAbslStatus(calibration.status());
  return calibration->tsc_hz;
}

}  // namespace ticktrace::examples
