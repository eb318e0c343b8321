#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ticktrace::examples {
namespace {

// Writes `msg` to fd 2 with write(2) only: safe between fork and exec.
void ChildFail(const char* what) {
  const char* err = std::strerror(errno);
  (void)!write(2, what, std::strlen(what));
  (void)!write(2, ": ", 2);
  (void)!write(2, err, std::strlen(err));
  (void)!write(2, "\n", 1);
  _exit(127);
}

}  // namespace

absl::StatusOr<Child> Child::Spawn(const ChildSpec& spec) {
  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls until exec.
  const int log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create log ", spec.log_path, ": ", std::strerror(errno)));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<std::string> argv_storage;
  argv_storage.push_back(spec.path);
  argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    bool overridden = false;
    for (const auto& [key, value] : spec.env) {
      if (std::strncmp(*e, key.c_str(), key.size()) == 0 && (*e)[key.size()] == '=') {
        overridden = true;
      }
    }
    if (!overridden) env_storage.emplace_back(*e);
  }
  for (const auto& [key, value] : spec.env) env_storage.push_back(absl::StrCat(key, "=", value));
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return absl::InternalError(absl::StrCat("fork for ", spec.name, ": ", std::strerror(err)));
  }
  if (pid == 0) {
    if (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) ChildFail("dup2");
    if (null_fd >= 0) dup2(null_fd, 0);
    if (setpgid(0, spec.process_group) != 0 && setpgid(0, 0) != 0) ChildFail("setpgid");
    if (prctl(PR_SET_PDEATHSIG, spec.parent_death_signal) != 0)
      ChildFail("prctl(PR_SET_PDEATHSIG)");
    if (getppid() != parent) _exit(126);  // the demo died before prctl took effect
    // The demo's handlers are reset by exec; its blocked set is not.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(spec.path.c_str(), argv.data(), envp.data());
    ChildFail(spec.path.c_str());
  }
  // Also from the parent, so the group exists before anyone signals it.
  if (setpgid(pid, spec.process_group == 0 ? pid : spec.process_group) != 0) {
    setpgid(pid, pid);  // the group to join is gone: lead a new one (signalled by pid anyway)
  }
  close(log_fd);
  if (null_fd >= 0) close(null_fd);
  return Child(spec.name, pid, spec.log_path);
}

bool Child::Poll() {
  if (exited_) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else if (r < 0 && errno == ECHILD) {
    exited_ = true;  // reaped elsewhere; should not happen
    exit_code_ = 255;
  }
  return exited_;
}

std::string Child::ExitDescription() const {
  if (!exited_) return "running";
  if (exit_code_ > 128 && exit_code_ < 128 + 65) {
    return absl::StrCat("killed by ", sigabbrev_np(exit_code_ - 128) != nullptr
                                          ? absl::StrCat("SIG", sigabbrev_np(exit_code_ - 128))
                                          : absl::StrCat("signal ", exit_code_ - 128));
  }
  return absl::StrCat("exited ", exit_code_);
}

void Child::Signal(int signo) const {
  if (!exited_) kill(pid_, signo);
}

bool Child::WaitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exited_;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string TailLines(const std::string& text, int lines, const std::string& indent) {
  std::vector<absl::string_view> all = absl::StrSplit(text, '\n');
  while (!all.empty() && all.back().empty()) all.pop_back();
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  std::string out;
  for (size_t i = first; i < all.size(); ++i) absl::StrAppend(&out, indent, all[i], "\n");
  return out;
}

}  // namespace ticktrace::examples
