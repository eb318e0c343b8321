// Test helper: spawn the collector binary and test producers as real
// processes, wait for them, and clean a session's segments up.
//
// Every child Spawn() starts leads its own process group and gets SIGKILL as
// its parent-death signal: a test binary that aborts (an ASan report with
// abort_on_error, a crash) takes its children with it, and KillGroup() stops
// a child together with anything it started.

#ifndef TICKTRACE_TESTS_COLLECTOR_PROCESS_UTIL_H_
#define TICKTRACE_TESTS_COLLECTOR_PROCESS_UTIL_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ticktrace/calibration.h"
#include "ticktrace/segment_reader.h"

namespace ticktrace::collect::testing {

// In a child right after fork(): its own process group, SIGKILL when the
// parent (`parent`, the forking process's pid) dies. If the parent died before
// prctl took effect, the child exits at once (126). Async-signal-safe.
// REQUIRES: called in the child between fork() and exec(), from a fork done by
// the thread that lives as long as the child should (PDEATHSIG follows the
// forking thread); tests fork from their main thread.
inline void BecomeTestChild(pid_t parent) {
  setpgid(0, 0);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(126);
  if (getppid() != parent) _exit(126);
}

// Starts `argv[0]` with `argv`; stdout and stderr go to `log_path`; the fds in
// `keep` stay open in the child (everything else of ours is close-on-exec).
// The child leads its own process group and dies with this process
// (BecomeTestChild).
inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::vector<int>& keep = {}) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    // Also here, so that the group exists before anyone signals it.
    if (pid > 0) setpgid(pid, pid);
    return pid;
  }
  BecomeTestChild(parent);
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (log >= 0) {
    dup2(log, 1);
    dup2(log, 2);
  }
  for (int fd : keep) fcntl(fd, F_SETFD, 0);
  execv(args[0], args.data());
  _exit(127);
}

// SIGKILLs `pid`'s process group (the child and whatever it started), then
// `pid` itself (in case it left its group). REQUIRES: `pid` came from Spawn().
inline void KillGroup(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// Waits for `pid` up to `timeout`; returns its exit code, 128+signal, or -1
// on timeout (then it is killed and reaped).
inline int WaitExit(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      KillGroup(pid);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline bool WaitFor(const std::function<bool()>& cond,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline size_t SegmentCount(const std::string& session) {
  absl::StatusOr<std::vector<SegmentId>> ids = ListSegments(session);
  return ids.ok() ? ids->size() : 0;
}

inline void RemoveSessionSegments(const std::string& session) {
  absl::StatusOr<std::vector<SegmentId>> ids = ListSegments(session);
  if (!ids.ok()) return;
  for (const SegmentId& id : *ids) RemoveSegment(id.name).IgnoreError();
}

// A plausible TSC frequency for tests that do not measure absolute latency.
inline double TestTscHz() {
  static const double hz = [] {
    if (Result<double> k = ReadKernelTscHz(); k.ok() && *k > 1e6) return *k;
    if (Result<Calibration> c = Calibrate(); c.ok()) return c->tsc_hz;
    return 2.6e9;
  }();
  return hz;
}

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_PROCESS_UTIL_H_
