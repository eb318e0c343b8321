// Starting, watching and stopping the demo's child processes.
//
// Every child gets: its own process group (so a terminal's Ctrl-C reaches only
// the demo, which then stops the children in the right order), a parent-death
// signal (SIGTERM, so the children stop even if the demo is SIGKILLed), stdin
// from /dev/null, and stdout+stderr in a log file the demo reads afterwards.
// The demo is single-threaded; call all of this from its main thread.

#ifndef TICKTRACE_EXAMPLES_DEMO_CHILD_PROCESS_H_
#define TICKTRACE_EXAMPLES_DEMO_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ticktrace::examples {

struct ChildSpec {
  std::string name;               // for messages: "collector", "feed", ...
  std::string path;               // executable
  std::vector<std::string> args;  // without argv[0]
  std::string log_path;           // stdout and stderr go here (truncated)
  pid_t process_group = 0;        // 0: a new group led by the child; else join this group
  std::vector<std::pair<std::string, std::string>> env;  // added to the demo's environment
  int parent_death_signal = SIGTERM;                     // sent to the child when its parent dies
};

class Child {
 public:
  // Forks and execs `spec`. Errors: fork or log-file failures. An exec
  // failure shows up as exit status 127 with the reason in the log.
  static absl::StatusOr<Child> Spawn(const ChildSpec& spec);

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  // Reaps the child if it has exited (non-blocking). Returns true once exited.
  bool Poll();
  bool exited() const { return exited_; }
  // REQUIRES: exited(). The exit code, or 128 + signal number when killed.
  int exit_code() const { return exit_code_; }
  // "exited 0", "exited 1", "killed by SIGKILL".
  std::string ExitDescription() const;

  // Sends `signo` to the child (not its group) if it is still running.
  void Signal(int signo) const;

  // Polls every 10 ms until the child exits or `timeout` passes. Returns exited().
  bool WaitFor(std::chrono::milliseconds timeout);

 private:
  Child(std::string name, pid_t pid, std::string log_path)
      : name_(std::move(name)), pid_(pid), log_path_(std::move(log_path)) {}

  std::string name_;
  pid_t pid_;
  std::string log_path_;
  bool exited_ = false;
  int exit_code_ = 0;
};

// The whole content of a file ("" when unreadable).
std::string ReadFileOrEmpty(const std::string& path);

// The last `lines` lines of `text`, each prefixed with `indent`.
std::string TailLines(const std::string& text, int lines, const std::string& indent);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_DEMO_CHILD_PROCESS_H_
