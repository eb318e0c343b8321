// Helpers shared by the example tests: run the built programs, find leftovers.
//
// Every program a test starts (TestChild) leads its own process group and has
// SIGKILL as its parent-death signal, so a test binary that aborts (an ASan
// report with abort_on_error) takes it along; a TestChild going out of scope
// SIGKILLs its group and reaps it. Temporary directories (ScopedTempDir) and
// a session's /dev/shm entries (ScopedSessionShm) are removed by destructors,
// so a failed ASSERT cannot leave them behind.

#ifndef TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_
#define TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "child_process.h"
#include "demo_runner.h"

namespace ticktrace::examples::testing {

// <build>/bin, where every program lands.
inline std::string BinDir() { return std::string(TICKTRACE_BINARY_DIR) + "/bin"; }

inline bool HaveProgram(const std::string& name) {
  return access((BinDir() + "/" + name).c_str(), X_OK) == 0;
}

// A fresh directory under /tmp, removed (with its content) on destruction.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    char tmpl[] = "/tmp/ticktrace-example-test.XXXXXX";
    const char* dir = mkdtemp(tmpl);
    if (dir != nullptr) path_ = dir;
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  ~ScopedTempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  // "" when mkdtemp failed.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A program started by a test; see the file comment. Move-only.
class TestChild {
 public:
  // Forks and execs `path` with `args`; stdout and stderr to `log_path`
  // (truncated), stdin from /dev/null. Errors: the log file or fork failed.
  // REQUIRES: called from the test's main thread (the parent-death signal
  // follows the thread that forked).
  static absl::StatusOr<TestChild> Spawn(const std::string& path,
                                         const std::vector<std::string>& args,
                                         const std::string& log_path) {
    examples::ChildSpec spec;
    spec.name = path;
    spec.path = path;
    spec.args = args;
    spec.log_path = log_path;
    spec.parent_death_signal = SIGKILL;  // nothing of a failed test outlives it
    absl::StatusOr<examples::Child> child = examples::Child::Spawn(spec);
    if (!child.ok()) return child.status();
    return TestChild(*std::move(child));
  }

  TestChild(TestChild&& o) noexcept : child_(std::exchange(o.child_, std::nullopt)) {}
  TestChild& operator=(TestChild&&) = delete;
  TestChild(const TestChild&) = delete;
  ~TestChild() {
    if (!child_.has_value()) return;
    kill(-child_->pid(), SIGKILL);  // the group: whatever the program started in it too
    if (!child_->exited()) {
      kill(child_->pid(), SIGKILL);
      int status = 0;
      waitpid(child_->pid(), &status, 0);
    }
  }

  pid_t pid() const { return child_->pid(); }
  const std::string& log_path() const { return child_->log_path(); }

  // Reaps the child if it has exited (non-blocking). True once exited.
  bool Poll() { return child_->Poll(); }
  // Polls every 10 ms until the child exits or `timeout` passes. Returns exited.
  bool WaitFor(std::chrono::milliseconds timeout) { return child_->WaitFor(timeout); }
  // REQUIRES: Poll() or WaitFor() returned true. Exit code, or 128 + signal.
  int exit_code() const { return child_->exit_code(); }
  // Sends `signo` to the child (not its group) while it runs.
  void Signal(int signo) const { child_->Signal(signo); }

 private:
  explicit TestChild(examples::Child child) : child_(std::move(child)) {}

  std::optional<examples::Child> child_;  // nullopt once moved from
};

// Starts <build>/bin/<program> with `args`; output to <log_dir>/<tag>.log.
inline absl::StatusOr<TestChild> StartProgram(const std::string& program,
                                              const std::vector<std::string>& args,
                                              const std::string& log_dir, const std::string& tag) {
  return TestChild::Spawn(BinDir() + "/" + program, args, log_dir + "/" + tag + ".log");
}

struct ProgramResult {
  int exit_code = -1;  // -1: still running at the timeout (then killed)
  std::string output;  // stdout and stderr
};

// Runs a program to completion (SIGKILL at `timeout`).
inline ProgramResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                                const std::string& log_dir, const std::string& tag,
                                std::chrono::milliseconds timeout) {
  ProgramResult r;
  absl::StatusOr<TestChild> child = StartProgram(program, args, log_dir, tag);
  if (!child.ok()) {
    r.output = std::string(child.status().message());
    return r;
  }
  if (child->WaitFor(timeout)) {
    r.exit_code = child->exit_code();
  } else {
    child->Signal(SIGKILL);
    child->WaitFor(std::chrono::seconds(5));
  }
  r.output = ReadFileOrEmpty(child->log_path());
  return r;
}

// Pids of live processes whose command line contains `needle` as one argument.
inline std::vector<pid_t> ProcessesWithArgument(const std::string& needle) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    const std::string cmdline = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline"));
    size_t start = 0;
    while (start < cmdline.size()) {
      size_t end = cmdline.find('\0', start);
      if (end == std::string::npos) end = cmdline.size();
      if (cmdline.compare(start, end - start, needle) == 0) {
        pids.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  closedir(proc);
  return pids;
}

// Polls `cond` every 10 ms until it holds or `timeout` passes; returns it.
template <typename Cond>
bool PollUntil(Cond cond, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// On destruction: SIGKILLs every process that carries the session name as an
// argument (what a test's program started, e.g. the demo's pipeline, which
// runs in process groups of its own), then removes the session's /dev/shm
// entries. The session name is unique to the test, so nothing else matches.
class ScopedSessionCleanup {
 public:
  ScopedSessionCleanup() = default;
  ScopedSessionCleanup(const ScopedSessionCleanup&) = delete;
  ScopedSessionCleanup& operator=(const ScopedSessionCleanup&) = delete;
  ~ScopedSessionCleanup() { Run(); }
  void set_session(std::string session) { session_ = std::move(session); }
  void Run() const {
    if (session_.empty()) return;
    for (pid_t pid : ProcessesWithArgument(session_)) kill(pid, SIGKILL);
    PollUntil([&] { return ProcessesWithArgument(session_).empty(); }, std::chrono::seconds(10));
    for (const std::string& name : SessionShmEntries(session_)) shm_unlink(name.c_str());
  }

 private:
  std::string session_;
};

}  // namespace ticktrace::examples::testing

#endif  // TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_
