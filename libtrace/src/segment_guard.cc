// The SIGBUS guard of the traced process's segment: src/segment_guard.h.

#include "src/segment_guard.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "ticktrace/trace.h"

namespace ticktrace::internal {
namespace {

// The guarded range; 0, 0 when none. Relaxed everywhere: written under the
// library's lock before the mapping is used, read by the handler on a thread
// that already touched the mapping (so it saw the writes that published it).
std::atomic<uintptr_t> g_guard_begin{0};
std::atomic<uintptr_t> g_guard_end{0};
// Relaxed: flags and statistics; the dead copy, not these, keeps stores safe.
std::atomic<bool> g_truncated{false};
std::atomic<uint64_t> g_truncation_faults{0};
std::atomic<uint64_t> g_dropped_after_truncation{0};
static_assert(std::atomic<uintptr_t>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "read in a signal handler");
struct sigaction g_previous_segment_sigbus;

// Async-signal-safe: atomics, mmap, and thread-local stores to the
// initial-exec TLS block (a %fs-relative store, no allocation).
extern "C" void OnSegmentSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  // Acquire, paired with the release store of begin in GuardSegmentMapping:
  // a begin seen set comes with its end (stored before it).
  const uintptr_t begin = g_guard_begin.load(std::memory_order_acquire);
  const uintptr_t end = g_guard_end.load(std::memory_order_relaxed);
  if (begin != 0 && addr >= begin && addr < end) {
    const int saved_errno = errno;
    // Every thread's pointers stay valid: the dead copy sits at the same
    // addresses. Two threads faulting at once map it twice, harmlessly.
    void* at = mmap(reinterpret_cast<void*>(begin), end - begin, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    errno = saved_errno;
    if (at != MAP_FAILED) {
      g_truncated.store(true, std::memory_order_relaxed);
      g_truncation_faults.fetch_add(1, std::memory_order_relaxed);
      // The faulting thread's next call finds its ring full and goes to
      // WriteSlow(), which sees the truncation.
      tls_ring.write_limit = tls_ring.next_write;
      return;  // the faulting access runs again, into the dead copy
    }
  }
  if ((g_previous_segment_sigbus.sa_flags & SA_SIGINFO) != 0 &&
      g_previous_segment_sigbus.sa_sigaction != nullptr) {
    g_previous_segment_sigbus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_segment_sigbus.sa_handler != SIG_DFL &&
      g_previous_segment_sigbus.sa_handler != SIG_IGN &&
      g_previous_segment_sigbus.sa_handler != nullptr) {
    g_previous_segment_sigbus.sa_handler(sig);
    return;
  }
  // Default action: the faulting access runs again and raises it, uncaught.
  signal(SIGBUS, SIG_DFL);
}

}  // namespace

void GuardSegmentMapping(uint8_t* base, uint64_t bytes) noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnSegmentSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous_segment_sigbus);
  });
  // End first, then begin with release (paired with the handler's acquire
  // load): a handler on any thread that sees begin sees its end.
  g_guard_end.store(reinterpret_cast<uintptr_t>(base) + bytes, std::memory_order_relaxed);
  g_guard_begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
}

void ForgetSegmentGuard() noexcept {
  g_guard_begin.store(0, std::memory_order_relaxed);
  g_guard_end.store(0, std::memory_order_relaxed);
  g_truncated.store(false, std::memory_order_relaxed);
  g_truncation_faults.store(0, std::memory_order_relaxed);
  g_dropped_after_truncation.store(0, std::memory_order_relaxed);
}

bool SegmentTruncated() noexcept { return g_truncated.load(std::memory_order_relaxed); }

uint64_t SegmentTruncationFaults() noexcept {
  return g_truncation_faults.load(std::memory_order_relaxed);
}

void CountDroppedAfterTruncation() noexcept {
  g_dropped_after_truncation.fetch_add(1, std::memory_order_relaxed);
}

uint64_t DroppedAfterTruncation() noexcept {
  return g_dropped_after_truncation.load(std::memory_order_relaxed);
}

}  // namespace ticktrace::internal
