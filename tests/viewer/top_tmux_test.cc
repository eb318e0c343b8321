// `ticktrace-view top` in a real terminal (tmux, 100 columns): started before
// the store exists it says it is waiting; then a real demo run (the collector
// and the example pipeline) starts, and top must show the tick stages
// (md_rx->md_decoded, md_decoded->strat_in, decide) with rates while the run
// still goes on (they once appeared only after the run ended, as a
// fanned-out tick closed at the 5 s order timeout; the run here has a 60 s
// timeout, longer than the run), every line within the terminal's width.
//
// Skips, saying why, only when tmux is not installed (CI's test mode installs
// it) or the demo programs were not built.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "store_fixture.h"

namespace {

std::string BinDir() { return std::string(TICKTRACE_BINARY_DIR) + "/bin"; }

std::string Capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

class TmuxServer {
 public:
  explicit TmuxServer(std::string socket) : socket_(std::move(socket)) {}
  ~TmuxServer() { std::system(absl::StrCat("tmux -L ", socket_, " kill-server 2>/dev/null").c_str()); }
  int Start(const std::string& command, int columns, int rows) {
    return std::system(absl::StrCat("tmux -L ", socket_, " -f /dev/null new-session -d -x ",
                                    columns, " -y ", rows, " '", command, "'")
                           .c_str());
  }
  // The pane's text, wrapped lines joined (-J) so that a line wider than the
  // pane shows as one.
  std::string Screen() {
    return Capture(absl::StrCat("tmux -L ", socket_, " capture-pane -p -J -t 0 2>&1"));
  }

 private:
  std::string socket_;
};

TEST(TopTmuxTest, WaitsForTheStoreThenShowsTickStagesWhileTheRunGoesOn) {
  if (std::system("command -v tmux >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "tmux is not installed (CI's test mode installs it)";
  }
  for (const char* program : {"ticktrace-demo", "ticktrace-collector", "ticktrace-view",
                              "ticktrace-example-feed", "ticktrace-example-strategy",
                              "ticktrace-example-gateway"}) {
    if (access((BinDir() + "/" + program).c_str(), X_OK) != 0) {
      GTEST_SKIP() << program << " is not built";
    }
  }
  ticktrace::view::testing::TempDir dir;
  const std::string db = dir.File("live.db");
  constexpr int kColumns = 100;
  TmuxServer tmux(absl::StrCat("ticktrace-top-", getpid()));
  // COLUMNS unset: top must ask the terminal.
  ASSERT_EQ(tmux.Start(absl::StrCat("env -u COLUMNS ", BinDir(), "/ticktrace-view top --db ", db,
                                    " --interval-ms 250 2>", dir.File("top.err")),
                       kColumns, 50),
            0);
  const auto wait_for = [&](const std::function<bool(const std::string&)>& done, int seconds) {
    std::string screen;
    for (int i = 0; i < seconds * 10; ++i) {
      screen = tmux.Screen();
      if (done(screen)) return screen;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return screen;
  };
  std::string screen = wait_for(
      [](const std::string& s) { return absl::StrContains(s, "waiting for the store"); }, 30);
  ASSERT_TRUE(absl::StrContains(screen, "waiting for the store"))
      << screen << "\nstderr: " << ticktrace::view::testing::ReadFile(dir.File("top.err"));

  // The demo: 60 000 ticks at 4000/s, 15 s, with an order timeout of 60 s:
  // a tick that closed only at its timeout would show no stage before the
  // run ends.
  const pid_t demo = fork();
  ASSERT_GE(demo, 0);
  if (demo == 0) {
    const std::string log = dir.File("demo.log");
    freopen(log.c_str(), "w", stdout);
    freopen(log.c_str(), "a", stderr);
    const std::string program = BinDir() + "/ticktrace-demo";
    const std::string session = absl::StrCat("top-tmux-", getppid());
    execl(program.c_str(), program.c_str(), "--session", session.c_str(), "--db", db.c_str(),
          "--bin-dir", BinDir().c_str(), "--ticks", "60000", "--rate", "4000",
          "--order-timeout-ms", "60000", static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto demo_running = [&] {
    int status = 0;
    return waitpid(demo, &status, WNOHANG) == 0;
  };
  bool seen_while_running = false;
  std::string last;
  for (int i = 0; i < 600 && demo_running(); ++i) {
    last = tmux.Screen();
    if (absl::StrContains(last, "md_rx->md_decoded") &&
        absl::StrContains(last, "md_decoded->strat_in") && absl::StrContains(last, "decide") &&
        absl::StrContains(last, "records/s ") && !absl::StrContains(last, "records/s -")) {
      // Seen; the demo must still be running for it to count.
      seen_while_running = demo_running();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool still_running = demo_running();
  if (still_running) {
    kill(demo, SIGTERM);
  }
  int status = 0;
  waitpid(demo, &status, 0);
  EXPECT_TRUE(seen_while_running)
      << "top did not show the tick stages and rates before the run ended; last screen:\n"
      << last << "\ntop's stderr:\n"
      << ticktrace::view::testing::ReadFile(dir.File("top.err")) << "\ndemo log:\n"
      << ticktrace::view::testing::ReadFile(dir.File("demo.log"));
  // Every line within the terminal's width (joined, so wrapped lines count whole).
  for (const absl::string_view line : absl::StrSplit(last, '\n')) {
    size_t points = 0;
    for (const char c : line) points += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
    EXPECT_LE(points, static_cast<size_t>(kColumns)) << line;
  }
  EXPECT_TRUE(absl::StrContains(last, "last: the interval from")) << last;
}

}  // namespace
