// The child processes the benchmark programs start and watch (the real
// collector, mostly): header-only, included by the programs in this folder
// only.
//
//   DieWithParent(parent)          in a fork child: go when the bench goes
//   SpawnLogged(argv, log, cwd)    fork + exec, output appended to a log file
//   WaitFor(pid, timeout_ms)       the wait status, or -1 on timeout
//   StopCollector(pid, grace_ms)   SIGINT, then SIGKILL after the grace
//   StatusKb(pid, "VmRSS")         a kB line of /proc/PID/status
//   CpuTicks(pid)                  utime + stime in clock ticks
//
// Main-thread only.

#ifndef TICKTRACE_BENCH_BENCH_PROCESS_H_
#define TICKTRACE_BENCH_BENCH_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace ticktrace::bench {

// In a fork child: die with the bench (also when it is SIGKILLed).
inline void DieWithParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent died before the prctl
}

// Starts argv[0] (a path) with stdout and stderr appended to `log` and stdin
// from /dev/null, in `cwd` when not empty. The child dies with the bench.
inline pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log,
                         const std::string& cwd = "") {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    DieWithParent(parent);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    std::vector<char*> args;
    for (const std::string& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` up to `timeout_ms`; its wait status, or -1 on timeout.
inline int WaitFor(pid_t pid, int timeout_ms) {
  for (int waited = 0;; waited += 10) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    if (waited >= timeout_ms) return -1;
    usleep(10'000);
  }
}

// SIGINT, then SIGKILL after `grace_ms`. Returns the wait status, or -1 when
// it had to be killed.
inline int StopCollector(pid_t pid, int grace_ms) {
  kill(pid, SIGINT);
  const int status = WaitFor(pid, grace_ms);
  if (status != -1) return status;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// kB value of a "Name:   123 kB" line of /proc/PID/status, or -1.
inline long StatusKb(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const size_t n = std::strlen(name);
  while (std::getline(in, line)) {
    if (line.compare(0, n, name) == 0 && line.size() > n && line[n] == ':') {
      return std::atol(line.c_str() + n + 1);
    }
  }
  return -1;
}

// utime + stime of `pid` in clock ticks, or -1.
inline long long CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t p = all.rfind(')');
  if (p == std::string::npos) return -1;
  // Fields after ")": 3 state ... 14 utime 15 stime.
  std::istringstream fields(all.substr(p + 2));
  std::string tok;
  long long utime = 0, stime = 0;
  for (int field = 3; field <= 15 && (fields >> tok); ++field) {
    if (field == 14) utime = std::atoll(tok.c_str());
    if (field == 15) stime = std::atoll(tok.c_str());
  }
  return utime + stime;
}

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_BENCH_PROCESS_H_
