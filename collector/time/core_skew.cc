#include "collector/time/core_skew.h"

#include <sched.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include <dirent.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collector/stream/stream.h"
#include "collector/time/time_base.h"
#include "ticktrace/environment.h"
#include "ticktrace/tsc.h"

namespace ticktrace::collect {
namespace {

double SignedDiff(uint64_t a, uint64_t b) { return static_cast<double>(static_cast<int64_t>(a - b)); }

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0 && sched_getcpu() == cpu;
}

// The two cache lines of one measurement: each written by one thread only.
struct PingPongLines {
  alignas(64) std::atomic<uint64_t> ping{0};  // written by the reference thread
  alignas(64) std::atomic<uint64_t> pong{0};  // written by the other thread
  std::atomic<uint64_t> other_tsc{0};         // same line as pong, written just before it
  alignas(64) std::atomic<bool> other_ready{false};
  std::atomic<bool> give_up{false};
};

using Clock = std::chrono::steady_clock;
constexpr auto kCoreTimeout = std::chrono::seconds(1);

// Spins until `line` holds `want`, or `deadline` passes / `give_up` is set.
bool SpinUntil(const std::atomic<uint64_t>& line, uint64_t want, Clock::time_point deadline,
               const std::atomic<bool>& give_up) {
  for (uint32_t spins = 0;; ++spins) {
    // Acquire: pairs with the other side's release store of `line`, so its
    // earlier writes (other_tsc) are visible and its read happened before.
    if (line.load(std::memory_order_acquire) == want) return true;
    _mm_pause();
    if ((spins & 1023) == 1023 &&
        (Clock::now() > deadline || give_up.load(std::memory_order_relaxed))) {
      return false;
    }
  }
}

absl::StatusOr<CoreOffset> MeasureOne(int reference_cpu, int cpu, int rounds) {
  PingPongLines lines;
  std::vector<PingPongRound> result(static_cast<size_t>(rounds));
  const Clock::time_point deadline = Clock::now() + kCoreTimeout;
  bool other_pinned = true, reference_pinned = true, completed = true;

  std::thread other([&] {
    if (!PinTo(cpu)) {
      other_pinned = false;
      lines.give_up.store(true, std::memory_order_relaxed);
      return;
    }
    lines.other_ready.store(true, std::memory_order_release);
    for (int i = 1; i <= rounds; ++i) {
      if (!SpinUntil(lines.ping, static_cast<uint64_t>(i), deadline, lines.give_up)) return;
      // lfence; rdtsc; lfence: the read comes after the ping was seen.
      const uint64_t t = ReadTscFencedBegin();
      lines.other_tsc.store(t, std::memory_order_relaxed);
      // Release: publishes other_tsc; pairs with the acquire in SpinUntil(pong).
      lines.pong.store(static_cast<uint64_t>(i), std::memory_order_release);
    }
  });
  std::thread reference([&] {
    if (!PinTo(reference_cpu)) {
      reference_pinned = false;
      lines.give_up.store(true, std::memory_order_relaxed);
      return;
    }
    while (!lines.other_ready.load(std::memory_order_acquire)) {
      if (Clock::now() > deadline || lines.give_up.load(std::memory_order_relaxed)) {
        completed = false;
        lines.give_up.store(true, std::memory_order_relaxed);
        return;
      }
      std::this_thread::yield();
    }
    for (int i = 1; i <= rounds; ++i) {
      PingPongRound& r = result[static_cast<size_t>(i - 1)];
      r.send_tsc = ReadTscFencedBegin();  // read, then (fenced) the ping goes out
      // Release: orders the ping after the read above for the other thread.
      lines.ping.store(static_cast<uint64_t>(i), std::memory_order_release);
      if (!SpinUntil(lines.pong, static_cast<uint64_t>(i), deadline, lines.give_up)) {
        completed = false;
        lines.give_up.store(true, std::memory_order_relaxed);
        return;
      }
      r.receive_tsc = ReadTscFencedBegin();
      r.other_tsc = lines.other_tsc.load(std::memory_order_relaxed);
    }
  });
  reference.join();
  other.join();
  if (!reference_pinned) {
    return absl::FailedPreconditionError(absl::StrCat("cannot pin a thread to cpu ", reference_cpu));
  }
  if (!other_pinned) {
    return absl::FailedPreconditionError(absl::StrCat("cannot pin a thread to cpu ", cpu));
  }
  if (!completed) {
    return absl::DeadlineExceededError(
        absl::StrCat("cpu ", cpu, " did not answer the ping-pong within 1 s (busy or offline?)"));
  }
  return OffsetFromRounds(cpu, result);
}

}  // namespace

CoreOffset OffsetFromRounds(int cpu, const std::vector<PingPongRound>& rounds) {
  CoreOffset out;
  out.cpu = cpu;
  out.rounds = static_cast<int>(rounds.size());
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  const PingPongRound* tightest = &rounds.front();
  for (const PingPongRound& r : rounds) {
    lower = std::max(lower, SignedDiff(r.other_tsc, r.receive_tsc));
    upper = std::min(upper, SignedDiff(r.other_tsc, r.send_tsc));
    if (r.receive_tsc - r.send_tsc < tightest->receive_tsc - tightest->send_tsc) tightest = &r;
  }
  if (lower <= upper) {
    out.offset_ticks = (lower + upper) / 2;
    out.bound_ticks = (upper - lower) / 2;
    return out;
  }
  out.consistent = false;
  const double half_round_trip =
      static_cast<double>(tightest->receive_tsc - tightest->send_tsc) / 2;
  out.offset_ticks = SignedDiff(tightest->other_tsc, tightest->send_tsc) - half_round_trip;
  out.bound_ticks = half_round_trip;
  return out;
}

absl::StatusOr<std::vector<CoreOffset>> MeasureCoreOffsets(const std::vector<int>& cpus,
                                                           int rounds) {
  std::vector<CoreOffset> out;
  if (cpus.empty() || rounds <= 0) return out;
  CoreOffset reference;
  reference.cpu = cpus.front();
  out.push_back(reference);
  for (size_t i = 1; i < cpus.size(); ++i) {
    absl::StatusOr<CoreOffset> c = MeasureOne(cpus.front(), cpus[i], rounds);
    if (!c.ok()) return c.status();
    out.push_back(*c);
  }
  return out;
}

std::vector<int> CoresToMeasure(std::string_view mode, const std::string& session) {
  if (mode == "producers") {
    std::set<int> cpus;
    const std::string prefix = absl::StrCat("ticktrace.", session, ".");
    if (DIR* d = ::opendir("/dev/shm")) {
      while (const dirent* e = ::readdir(d)) {
        const absl::string_view name = e->d_name;
        if (!absl::StartsWith(name, prefix)) continue;
        int pid = 0;
        if (!absl::SimpleAtoi(name.substr(prefix.size()), &pid) || pid <= 0) continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (::sched_getaffinity(pid, sizeof(set), &set) != 0) continue;  // exited
        for (int c = 0; c < CPU_SETSIZE; ++c) {
          if (CPU_ISSET(c, &set)) cpus.insert(c);
        }
      }
      ::closedir(d);
    }
    if (!cpus.empty()) return std::vector<int>(cpus.begin(), cpus.end());
  }
  std::vector<int> cpus = AllowedCpus();
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

absl::StatusOr<std::vector<CoreSkew>> MeasureCoreSkew(const std::vector<int>& cpus, double tsc_hz,
                                                      int64_t measured_at_utc_ns) {
  absl::StatusOr<std::vector<CoreOffset>> offsets = MeasureCoreOffsets(cpus);
  if (!offsets.ok()) return offsets.status();
  const double ns_per_tick = 1e9 / tsc_hz;
  std::vector<CoreSkew> out;
  for (const CoreOffset& c : *offsets) {
    out.push_back(CoreSkew{c.cpu, c.offset_ticks * ns_per_tick, c.bound_ticks * ns_per_tick,
                           c.consistent, measured_at_utc_ns});
  }
  return out;
}

SkewMonitor::SkewMonitor(const RunInfo& info, int64_t interval_s)
    : session_(info.session),
      mode_(info.skew_cores),
      tsc_hz_(info.tsc_hz),
      interval_s_(interval_s) {}

SkewMonitor::~SkewMonitor() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SkewMonitor::Start() {
  if (interval_s_ > 0) thread_ = std::thread([this] { Run(); });
}

void SkewMonitor::TakeChunks(std::string* out) {
  std::lock_guard lock(mu_);
  if (chunks_.empty()) return;
  out->append(chunks_);
  chunks_.clear();
}

void SkewMonitor::Run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::seconds(interval_s_), [this] { return stop_; })) return;
    }
    const std::vector<int> cpus = CoresToMeasure(mode_, session_);
    if (cpus.size() < 2) continue;
    const int64_t now = RealtimeNowNs();
    absl::StatusOr<std::vector<CoreSkew>> cores = MeasureCoreSkew(cpus, tsc_hz_, now);
    if (!cores.ok()) continue;  // e.g. a core went offline: the last measurement stays
    RunInfoUpdate u;
    u.kind = RunInfoUpdate::Kind::kCores;
    u.cores = *std::move(cores);
    u.measured_at_utc_ns = now;
    std::string chunk;
    ChunkEncoder::RunInfo(u.ToJson(), &chunk);
    std::lock_guard lock(mu_);
    chunks_ += chunk;
  }
}

}  // namespace ticktrace::collect
