// Helpers shared by the example tests: run the built programs, find leftovers.

#ifndef TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_
#define TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "child_process.h"

namespace ticktrace::examples::testing {

// <build>/bin, where every program lands.
inline std::string BinDir() { return std::string(TICKTRACE_BINARY_DIR) + "/bin"; }

inline bool HaveProgram(const std::string& name) {
  return access((BinDir() + "/" + name).c_str(), X_OK) == 0;
}

// A fresh directory under /tmp, removed by the caller.
inline std::string MakeTempDir() {
  char tmpl[] = "/tmp/ticktrace-example-test.XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir != nullptr ? std::string(dir) : std::string();
}

// Starts <build>/bin/<program> with `args`; output to <log_dir>/<tag>.log.
inline absl::StatusOr<Child> StartProgram(const std::string& program,
                                          const std::vector<std::string>& args,
                                          const std::string& log_dir, const std::string& tag) {
  ChildSpec spec;
  spec.name = tag;
  spec.path = BinDir() + "/" + program;
  spec.args = args;
  spec.log_path = log_dir + "/" + tag + ".log";
  return Child::Spawn(spec);
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
  absl::StatusOr<Child> child = StartProgram(program, args, log_dir, tag);
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

}  // namespace ticktrace::examples::testing

#endif  // TICKTRACE_TESTS_EXAMPLES_EXAMPLE_TEST_UTIL_H_
